import type { Knex } from 'knex';
import { FanOutPace } from '../../src/delivery/fanout-pace';

/**
 * The sender's pace while an audience is being written (src/delivery/fanout-pace.ts), on a clock
 * of the test's own: whether a fan-out runs is the test's answer, read at most once a second.
 */
const db = {} as Knex;

function paced(rate: number, fanningOut: () => boolean) {
  const clock = { t: 1_000_000, slept: 0, reads: 0 };
  const pace = new FanOutPace(
    rate,
    async () => {
      clock.reads += 1;
      return fanningOut();
    },
    () => clock.t,
    async (ms) => {
      clock.t += ms;
      clock.slept += ms;
    },
  );
  return { pace, clock };
}

const going = () => true;

describe('FanOutPace', () => {
  it('never holds a claim while no audience is being written', async () => {
    const { pace, clock } = paced(100, () => false);
    for (let i = 0; i < 50; i += 1) {
      await pace.beforeClaim(db, going);
      pace.claimed(100);
    }
    expect(clock.slept).toBe(0);
    // One read, kept for a second (the clock did not move).
    expect(clock.reads).toBe(1);
  });

  it('lets the first claim go at once during a fan-out, and each next one after its rows’ share of the rate', async () => {
    const { pace, clock } = paced(100, () => true);
    await pace.beforeClaim(db, going);
    expect(clock.slept).toBe(0);
    pace.claimed(100);
    await pace.beforeClaim(db, going);
    expect(clock.slept).toBe(1000);
    pace.claimed(50);
    await pace.beforeClaim(db, going);
    expect(clock.slept).toBe(1500);
    // A claim that found nothing holds nothing up.
    pace.claimed(0);
    await pace.beforeClaim(db, going);
    expect(clock.slept).toBe(1500);
  });

  it('goes back to full speed within a second of the fan-out’s end', async () => {
    let endsAt = Infinity;
    const { pace, clock } = paced(10, () => clock.t < endsAt);
    endsAt = clock.t + 2500;
    await pace.beforeClaim(db, going);
    pace.claimed(100);
    await pace.beforeClaim(db, going);
    // Would be held 10 s at 10 a second; released at the first read after the end.
    expect(clock.slept).toBeGreaterThanOrEqual(2500);
    expect(clock.slept).toBeLessThanOrEqual(3500);
  });

  it('stops waiting as soon as the worker stops', async () => {
    const { pace, clock } = paced(1, () => true);
    await pace.beforeClaim(db, going);
    pace.claimed(100);
    let naps = 0;
    await pace.beforeClaim(db, () => (naps += 1) <= 3);
    expect(clock.slept).toBeLessThanOrEqual(300);
  });

  it('holds nothing up after a claim made before the fan-out began', async () => {
    let fanning = false;
    const { pace, clock } = paced(10, () => fanning);
    await pace.beforeClaim(db, going);
    pace.claimed(100);
    fanning = true;
    // The next read of the database, a second later, sees the fan-out (the claim's share would be 10 s).
    clock.t += 1000;
    await pace.beforeClaim(db, going);
    expect(clock.slept).toBe(0);
  });
});
