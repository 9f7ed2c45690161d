import { STANDARD_WARMUP, warmupCap } from '../../src/routes/warmup';

/** The warm-up schedule (src/routes/warmup.ts): the standard curve and the cap on a given day. */
describe('STANDARD_WARMUP', () => {
  it('starts at 20 an hour, grows about ×1.4 a day, never ×1.5, and ends on day 12 at 1,000 or more', () => {
    expect(STANDARD_WARMUP[0]).toBe(20);
    expect(STANDARD_WARMUP).toHaveLength(13);
    expect(STANDARD_WARMUP[12]).toBeGreaterThanOrEqual(1000);
    expect(STANDARD_WARMUP[11]).toBeLessThan(1000);
    for (let d = 1; d < STANDARD_WARMUP.length; d += 1) {
      const ratio = STANDARD_WARMUP[d] / STANDARD_WARMUP[d - 1];
      expect({ d, ok: ratio > 1.3 && ratio < 1.5 }).toEqual({ d, ok: true });
    }
    expect([...STANDARD_WARMUP]).toEqual([20, 28, 39, 55, 77, 108, 151, 211, 295, 413, 579, 810, 1134]);
  });
});

describe('warmupCap', () => {
  const at = (iso: string) => new Date(iso);

  it('is null without a warm-up', () => {
    expect(warmupCap(undefined, at('2026-12-01T00:00:00Z'))).toBeNull();
  });

  it('counts UTC days from start: day 0 all of the first day', () => {
    const w = { start: '2026-12-01', schedule: 'standard' as const };
    expect(warmupCap(w, at('2026-12-01T00:00:00Z'))).toEqual({ day: 0, capPerHour: 20 });
    expect(warmupCap(w, at('2026-12-01T23:59:59.999Z'))).toEqual({ day: 0, capPerHour: 20 });
    expect(warmupCap(w, at('2026-12-02T00:00:00Z'))).toEqual({ day: 1, capPerHour: 28 });
    expect(warmupCap(w, at('2026-12-13T12:00:00Z'))).toEqual({ day: 12, capPerHour: 1134 });
  });

  it('is null (warm) past the schedule', () => {
    const w = { start: '2026-12-01', schedule: 'standard' as const };
    expect(warmupCap(w, at('2026-12-14T00:00:00Z'))).toBeNull();
    expect(warmupCap({ start: '2026-12-01', schedule: [5, 10] }, at('2026-12-03T00:00:00Z'))).toBeNull();
  });

  it('follows an own schedule', () => {
    const w = { start: '2026-12-01', schedule: [5, 10, 40] };
    expect(warmupCap(w, at('2026-12-01T10:00:00Z'))).toEqual({ day: 0, capPerHour: 5 });
    expect(warmupCap(w, at('2026-12-03T10:00:00Z'))).toEqual({ day: 2, capPerHour: 40 });
  });

  it('holds a route to day 0 before its start', () => {
    expect(warmupCap({ start: '2026-12-10', schedule: 'standard' }, at('2026-12-01T00:00:00Z'))).toEqual({ day: 0, capPerHour: 20 });
  });
});
