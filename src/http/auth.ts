import type { NextFunction, Request, Response } from 'express';
import type { Knex } from 'knex';
import { authenticate } from '../accounts/accounts.service';
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
 * it. Missing headers answer the spec's AUTH shape; a wrong pair answers DESIGN's string.
 */
export function requireKeys(db: Knex, limiter?: RateLimiter) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
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
    const userId = await authenticate(db, publicKey, secretKey);
    if (userId === undefined) throw unauthorized(WRONG_KEYS);
    req.ctx = { userId, db };
    next();
  };
}
