import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Knex } from 'knex';
import { findKeyOwner } from '../accounts/accounts.service';
import type { KeyCache } from '../accounts/key-cache';
import { hashSecret } from '../accounts/keys';
import type { Ctx } from '../context';
import { unauthorized } from './errors';
import { keysActor } from '../audit/record';

export const AUTH_REQUIRED = {
  PublicKey: 'The public key field is required.',
  SecretKey: 'The secret key field is required.',
} as const;

export const WRONG_KEYS = 'Invalid PublicKey or SecretKey';

/** Keys longer than this are not ours; refuse them before hashing anything. */
const MAX_KEY_LENGTH = 200;

declare module 'express-serve-static-core' {
  interface Request {
    ctx?: Ctx;
  }
}

/**
 * Resolves the PublicKey/SecretKey pair once per request and puts `ctx = { userId, db }` on
 * it. Missing headers answer the spec's AUTH shape; a wrong pair answers `WRONG_KEYS` with 401
 * (docs/decisions.md, "Conventions").
 * Pairs verified recently come from `keys` (no database round trip); see key-cache.ts. `limit`
 * (rate-limit.ts) runs once the pair is verified, so only requests with the right pair count.
 */
export function requireKeys(db: Knex, limit?: RequestHandler, keys?: KeyCache) {
  const authenticated = (req: Request, res: Response, next: NextFunction, userId: number): void | Promise<void> => {
    req.ctx = { userId, db, actor: keysActor('api', req.ip ?? req.socket.remoteAddress ?? null) };
    if (limit) return limit(req, res, next) as void | Promise<void>;
    next();
  };
  const verify = async (req: Request, res: Response, next: NextFunction, publicKey: string, digest: Buffer): Promise<void> => {
    const ticket = keys?.ticket() ?? 0;
    const userId = await findKeyOwner(db, publicKey, digest);
    if (userId === undefined) throw unauthorized(WRONG_KEYS);
    keys?.remember(publicKey, digest, userId, ticket);
    await authenticated(req, res, next, userId);
  };
  // Not async: a pair found in memory goes on without a promise (express catches what this throws).
  return (req: Request, res: Response, next: NextFunction): void | Promise<void> => {
    const publicKey = req.get('PublicKey')?.trim();
    const secretKey = req.get('SecretKey')?.trim();
    if (!publicKey || !secretKey) {
      const errors: Record<string, string[]> = {};
      if (!publicKey) errors.PublicKey = [AUTH_REQUIRED.PublicKey];
      if (!secretKey) errors.SecretKey = [AUTH_REQUIRED.SecretKey];
      throw unauthorized(errors);
    }
    if (publicKey.length > MAX_KEY_LENGTH || secretKey.length > MAX_KEY_LENGTH) throw unauthorized(WRONG_KEYS);
    const digest = hashSecret(secretKey);
    const userId = keys?.lookup(publicKey, digest);
    if (userId === undefined) return verify(req, res, next, publicKey, digest);
    return authenticated(req, res, next, userId);
  };
}
