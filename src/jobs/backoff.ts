/**
 * The retry rule of all background work (recipient rows, notification mail, webhook batches,
 * every job kind), written once: the delay doubles from `baseMs` with each failed attempt, up
 * to `maxMs`, and a random part of up to a quarter of it is added. The jitter spreads the
 * retries of many rows that failed together (a server that was down for everyone) instead of
 * bringing them all back in the same instant; it is only ever added, so a delay is never shorter
 * than the documented `base × 2^(attempt−1)` (docs/decisions.md, "Job runner").
 */
export interface Backoff {
  /** The first retry's delay. */
  baseMs: number;
  /** The doubling stops here (the jitter still adds up to a quarter). */
  maxMs: number;
}

export const JITTER = 0.25;

/** Milliseconds to wait after failed attempt number `attempt` (1 for the first). */
export function retryDelay(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const exact = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exact * (1 + JITTER * random()));
}
