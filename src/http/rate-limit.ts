import type { Request, RequestHandler } from 'express';
import { rateLimit, type RateLimitInfo } from 'express-rate-limit';
import { AppError } from './errors';

/**
 * Per-account rate limit (RATE_LIMIT_PER_MINUTE): a one-minute window per key pair in this
 * process (express-rate-limit's memory store). It runs after authentication and counts only
 * requests whose pair is right: counting by the PublicKey presented let anyone who had seen one
 * (it is in every request log line) lock its account out with wrong secrets. Guessing a secret is
 * not slowed here: keys are long random strings (docs/decisions.md, "Hardening"). Several API
 * processes each allow the limit (docs/operations.md). 0 turns it off.
 */
export function keyPairLimit(perMinute: number): RequestHandler | undefined {
  if (perMinute <= 0) return undefined;
  return rateLimit({
    windowMs: 60_000,
    limit: perMinute,
    // Set by requireKeys, which calls this only once the pair is verified.
    keyGenerator: (req: Request) => String(req.ctx!.userId),
    standardHeaders: false,
    legacyHeaders: false,
    handler: (req, _res, next) => {
      const reset = (req as Request & { rateLimit?: RateLimitInfo }).rateLimit?.resetTime?.getTime() ?? Date.now() + 60_000;
      const retryAfter = Math.max(1, Math.ceil((reset - Date.now()) / 1000));
      next(new AppError(429, 'Too Many Requests', { 'Retry-After': String(retryAfter) }));
    },
  });
}
