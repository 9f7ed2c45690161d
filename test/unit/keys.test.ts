import { hashSecret, newKeyPair, randomBase62, secretMatches } from '../../src/accounts/keys';
import { formatTimestamp, toDatetime } from '../../src/db/types';

describe('account keys', () => {
  it('has the documented shapes', () => {
    const { publicKey, secretKey } = newKeyPair();
    expect(publicKey).toMatch(/^pk_[0-9A-Za-z]{32}$/);
    expect(secretKey).toMatch(/^sk_[0-9A-Za-z]{43}$/);
  });

  it('never repeats', () => {
    const seen = new Set(Array.from({ length: 1000 }, () => randomBase62(20)));
    expect(seen.size).toBe(1000);
  });

  it('stores a SHA-256 digest and matches only the right secret', () => {
    const digest = hashSecret('sk_abc');
    expect(digest).toHaveLength(32);
    expect(secretMatches('sk_abc', digest)).toBe(true);
    expect(secretMatches('sk_abd', digest)).toBe(false);
    expect(secretMatches('', digest)).toBe(false);
  });
});

describe('timestamp formats', () => {
  it('formats PostgreSQL timestamptz text as the spec’s <timestamp>', () => {
    expect(formatTimestamp('2026-11-22 07:27:00.123456+00')).toBe('2026-11-22T07:27:00.123456Z');
    expect(formatTimestamp('2026-11-22 07:27:00.1+00')).toBe('2026-11-22T07:27:00.100000Z');
    expect(formatTimestamp('2026-11-22 07:27:00+00')).toBe('2026-11-22T07:27:00.000000Z');
  });

  it('formats <datetime>', () => {
    expect(toDatetime('2026-11-22T07:27:00.123456Z')).toBe('2026-11-22 07:27:00');
    expect(toDatetime(null)).toBeNull();
  });
});
