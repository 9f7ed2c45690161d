import { randomUUID } from 'node:crypto';
import { isUtr, newUtr } from '../../src/http/fields';

/** RFC 9562 UUIDv7: 48 bits of Unix milliseconds, version nibble 7, variant bits 10. */
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const millisOf = (utr: string) => parseInt(utr.replace(/-/g, '').slice(0, 12), 16);

describe('newUtr', () => {
  it('is a UUIDv7: version 7, RFC variant, the current time in its first 48 bits', () => {
    const before = Date.now();
    const utr = newUtr();
    const after = Date.now();
    expect(utr).toMatch(V7);
    expect(millisOf(utr)).toBeGreaterThanOrEqual(before);
    expect(millisOf(utr)).toBeLessThanOrEqual(after);
  });

  it('sorts in the order it was made, within one millisecond and across many', async () => {
    const made: string[] = [];
    for (let i = 0; i < 5000; i++) made.push(newUtr());
    await new Promise((r) => setTimeout(r, 5));
    made.push(newUtr());
    expect(new Set(made).size).toBe(made.length);
    expect([...made].sort()).toEqual(made);
    expect(millisOf(made[made.length - 1])).toBeGreaterThan(millisOf(made[0]));
  });
});

describe('isUtr', () => {
  it('accepts the new version-7 utrs and the version-4 utrs made before them, in either case', () => {
    const v4 = randomUUID();
    expect(v4[14]).toBe('4');
    for (const utr of [newUtr(), v4, newUtr().toUpperCase(), v4.toUpperCase()]) expect(isUtr(utr)).toBe(true);
  });

  it('refuses anything not shaped like a UUID', () => {
    for (const bad of ['', 'not-a-utr', `${newUtr()}x`, newUtr().replace(/-/g, ''), '0']) expect(isUtr(bad)).toBe(false);
  });
});
