import type { NextFunction, Request, Response } from 'express';
import type { Knex } from 'knex';
import { findKeyOwner } from '../accounts/accounts.service';
import type { KeyCache } from '../accounts/key-cache';
import { hashSecret } from '../accounts/keys';
import type { Ctx } from '../context';
import { unauthorized } from './errors';
import type { RateLimiter } from './rate-limit';

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
 * Pairs verified recently come from `keys` (no database round trip); see key-cache.ts.
 */
export function requireKeys(db: Knex, limiter?: RateLimiter, keys?: KeyCache) {
  const verify = async (req: Request, next: NextFunction, publicKey: string, digest: Buffer): Promise<void> => {
    const ticket = keys?.ticket() ?? 0;
    const userId = await findKeyOwner(db, publicKey, digest);
    if (userId === undefined) throw unauthorized(WRONG_KEYS);
    keys?.remember(publicKey, digest, userId, ticket);
    req.ctx = { userId, db };
    next();
  };
  // Not async: a pair found in memory goes on without a promise (express catches what this throws).
  return (req: Request, _res: Response, next: NextFunction): void | Promise<void> => {
    const publicKey = req.get('PublicKey')?.trim();
    const secretKey = req.get('SecretKey')?.trim();
    if (!publicKey || !secretKey) {
      const errors: Record<string, string[]> = {};
      if (!publicKey) errors.PublicKey = [AUTH_REQUIRED.PublicKey];
      if (!secretKey) errors.SecretKey = [AUTH_REQUIRED.SecretKey];
      throw unauthorized(errors);
    }
    if (publicKey.length > MAX_KEY_LENGTH || secretKey.length > MAX_KEY_LENGTH) throw unauthorized(WRONG_KEYS);
    limiter?.hit(publicKey);
    const digest = hashSecret(secretKey);
    const userId = keys?.lookup(publicKey, digest);
    if (userId === undefined) return verify(req, next, publicKey, digest);
    req.ctx = { userId, db };
    next();
  };
}
