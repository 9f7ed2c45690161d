import { JITTER, retryDelay } from '../../src/jobs/backoff';
import { fenceSql } from '../../src/jobs/fence';

/** The retry rule and the fencing rule every claim shares (src/jobs). */
describe('retryDelay', () => {
  const backoff = { baseMs: 1000, maxMs: 10_000 };

  it('doubles from the base with each failed attempt, the doubling capped at the maximum (no jitter drawn)', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelay(n, backoff, () => 0))).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
    // Attempt 0 (nothing tried yet) waits the base, like the first.
    expect(retryDelay(0, backoff, () => 0)).toBe(1000);
    expect(retryDelay(3, { baseMs: 0, maxMs: 10_000 }, () => 0.9)).toBe(0);
  });

  it('adds up to a quarter at random, never takes anything off', () => {
    expect(JITTER).toBe(0.25);
    expect(retryDelay(3, backoff, () => 0.5)).toBe(4500);
    expect(retryDelay(6, backoff, () => 0.999)).toBe(12_498);
    for (let n = 1; n <= 8; n += 1) {
      const exact = Math.min(10_000, 1000 * 2 ** (n - 1));
      for (let i = 0; i < 50; i += 1) {
        const d = retryDelay(n, backoff);
        expect({ n, d, inRange: d >= exact && d <= exact * 1.25 }).toEqual({ n, d, inRange: true });
      }
    }
  });

  it('spreads the retries of rows that failed together', () => {
    const delays = new Set(Array.from({ length: 100 }, () => retryDelay(4, backoff)));
    expect(delays.size).toBeGreaterThan(50);
  });
});

describe('fenceSql', () => {
  it('holds a write to rows still claimed under the claim’s attempt', () => {
    expect(fenceSql('d', { claimedSql: `'sending'`, attempts: 'attempts' }, 'v.attempts')).toBe(`d.status IN ('sending') AND d.attempts = v.attempts`);
    expect(fenceSql('webhook_deliveries', { claimedSql: `'pending'`, attempts: 'attempt' }, '?')).toBe(
      `webhook_deliveries.status IN ('pending') AND webhook_deliveries.attempt = ?`,
    );
  });
});
