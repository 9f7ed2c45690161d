import { AppError } from './errors';

/**
 * Per-key rate limit (RATE_LIMIT_PER_MINUTE): a fixed one-minute window per PublicKey in this
 * process. Counting by the presented public key (even a wrong pair) also slows guessing of a
 * secret. Several API processes each allow the limit (documented in docs/operations.md).
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly perMinute: number,
    private readonly maxKeys = 100_000,
  ) {}

  /** Counts one request; throws 429 with Retry-After once the key is over its limit. */
  hit(key: string, now = Date.now()): void {
    if (this.perMinute <= 0) return;
    let w = this.windows.get(key);
    if (!w || now - w.start >= 60_000) {
      if (!w && this.windows.size >= this.maxKeys) this.prune(now);
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    w.count += 1;
    if (w.count > this.perMinute) {
      const retryAfter = Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000));
      throw new AppError(429, 'Too Many Requests', { 'Retry-After': String(retryAfter) });
    }
  }

  private prune(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start >= 60_000) this.windows.delete(k);
    // Still full (a flood of distinct keys): start over rather than grow without bound.
    if (this.windows.size >= this.maxKeys) this.windows.clear();
  }
}
