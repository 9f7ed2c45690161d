import betaln from '@stdlib/math-base-special-betaln';
import fc from 'fast-check';
import { decide, posteriors, type Arm } from '../../src/ab/bayes';

/**
 * The A/B decision's numbers against reference computations made differently from the code:
 * for two variations the exact closed form of P(p_B > p_A) for Beta posteriors (a finite sum,
 * Evan Miller's "Formulas for Bayesian A/B testing"); for more, a brute-force integral on a
 * uniform grid of [0, 1]; intervals against Beta quantiles known in closed form.
 */

/** P(X_B > X_A) for X_A ~ Beta(aA, bA), X_B ~ Beta(aB, bB), aB a positive integer. */
function exactBBeatsA(aA: number, bA: number, aB: number, bB: number): number {
  let total = 0;
  for (let i = 0; i < aB; i += 1) {
    total += Math.exp(betaln(aA + i, bA + bB) - Math.log(bB + i) - betaln(1 + i, bB) - betaln(aA, bA));
  }
  return total;
}

/** P_i by the composite Simpson rule on a uniform grid of [0, 1] (slow; fine for small counts). */
function gridBest(arms: Arm[], steps = 200_000): number[] {
  const params = arms.map((a) => ({ a: 1 + a.successes, b: 1 + a.trials - a.successes }));
  const h = 1 / steps;
  const logNorm = params.map((p) => -betaln(p.a, p.b));
  const pdf = (x: number, k: number) => (x <= 0 || x >= 1 ? 0 : Math.exp(logNorm[k] + (params[k].a - 1) * Math.log(x) + (params[k].b - 1) * Math.log(1 - x)));
  const cdf = params.map(() => 0);
  const out = params.map(() => 0);
  // Cumulative distribution functions by the trapezoid rule along the same grid (fine at this step).
  let prev = params.map((_, k) => pdf(0, k));
  for (let s = 1; s <= steps; s += 1) {
    const x = s * h;
    const cur = params.map((_, k) => pdf(x, k));
    for (let k = 0; k < params.length; k += 1) cdf[k] += ((prev[k] + cur[k]) / 2) * h;
    for (let i = 0; i < params.length; i += 1) {
      let term = cur[i];
      for (let j = 0; j < params.length; j += 1) if (j !== i) term *= Math.min(1, cdf[j]);
      out[i] += term * h;
    }
    prev = cur;
  }
  return out;
}

describe('A/B decision statistics', () => {
  it('computes the 95 % equal-tailed interval of the Beta posterior', () => {
    // No data: Beta(1, 1), the uniform distribution.
    const [none] = posteriors([{ successes: 0, trials: 0 }]);
    expect(none.interval[0]).toBeCloseTo(0.025, 10);
    expect(none.interval[1]).toBeCloseTo(0.975, 10);
    expect(none.mean).toBe(0.5);
    expect(none.rate).toBe(0);
    // One success in one trial: Beta(2, 1), whose quantile function is √p.
    const [one] = posteriors([{ successes: 1, trials: 1 }]);
    expect(one.interval[0]).toBeCloseTo(Math.sqrt(0.025), 10);
    expect(one.interval[1]).toBeCloseTo(Math.sqrt(0.975), 10);
    expect(one.mean).toBeCloseTo(2 / 3, 12);
    expect(one.rate).toBe(1);
  });

  it.each([
    [{ successes: 20, trials: 100 }, { successes: 30, trials: 100 }],
    [{ successes: 3, trials: 40 }, { successes: 5, trials: 41 }],
    [{ successes: 120, trials: 1000 }, { successes: 118, trials: 1000 }],
    [{ successes: 0, trials: 10 }, { successes: 0, trials: 500 }],
    [{ successes: 2100, trials: 10000 }, { successes: 2230, trials: 10000 }],
  ])('matches the exact two-variation probability for %o vs %o', (a, b) => {
    const exact = exactBBeatsA(1 + a.successes, 1 + a.trials - a.successes, 1 + b.successes, 1 + b.trials - b.successes);
    const [pa, pb] = posteriors([a, b]);
    expect(pb.probabilityBest).toBeCloseTo(exact, 6);
    expect(pa.probabilityBest).toBeCloseTo(1 - exact, 6);
  });

  it('matches the exact two-variation probability for any counts (property)', () => {
    const arm = fc.integer({ min: 0, max: 3000 }).chain((trials) => fc.record({ trials: fc.constant(trials), successes: fc.integer({ min: 0, max: trials }) }));
    fc.assert(
      fc.property(arm, arm, (a, b) => {
        const exact = exactBBeatsA(1 + a.successes, 1 + a.trials - a.successes, 1 + b.successes, 1 + b.trials - b.successes);
        const [, pb] = posteriors([a, b]);
        return Math.abs(pb.probabilityBest - exact) < 1e-6;
      }),
      { numRuns: 200, seed: 20261126 },
    );
  });

  it('matches a brute-force integral for three and four variations', () => {
    for (const arms of [
      [{ successes: 30, trials: 200 }, { successes: 38, trials: 200 }, { successes: 25, trials: 190 }],
      [{ successes: 5, trials: 50 }, { successes: 9, trials: 60 }, { successes: 7, trials: 55 }, { successes: 12, trials: 58 }],
    ]) {
      const reference = gridBest(arms);
      const got = posteriors(arms).map((p) => p.probabilityBest);
      got.forEach((p, i) => expect(p).toBeCloseTo(reference[i], 4));
      expect(got.reduce((s, p) => s + p, 0)).toBeCloseTo(1, 12);
    }
  });

  it('handles a narrow posterior beside a wide one, and large counts, without losing mass', () => {
    const arms = [{ successes: 2, trials: 10 }, { successes: 100_000, trials: 500_000 }];
    const exact = exactBBeatsA(3, 9, 100_001, 400_001);
    const [, b] = posteriors(arms);
    expect(b.probabilityBest).toBeCloseTo(exact, 5);
    const big = posteriors([{ successes: 40_000, trials: 400_000 }, { successes: 40_600, trials: 400_000 }]);
    expect(big[1].probabilityBest).toBeGreaterThan(0.98);
    expect(big[0].probabilityBest + big[1].probabilityBest).toBeCloseTo(1, 12);
  });

  it('gives the same numbers for the same counts, and equal numbers to equal variations', () => {
    const arms = [{ successes: 11, trials: 90 }, { successes: 11, trials: 90 }, { successes: 11, trials: 90 }];
    const once = posteriors(arms);
    expect(posteriors(arms)).toEqual(once);
    for (const p of once) expect(p.probabilityBest).toBeCloseTo(1 / 3, 12);
  });

  describe('decide', () => {
    const clear = [{ successes: 50, trials: 1000 }, { successes: 120, trials: 1000 }];
    const close = [{ successes: 50, trials: 1000 }, { successes: 52, trials: 1000 }];

    it('declares a clear leader significant', () => {
      const v = decide(clear, 0.95, 'wait');
      expect(v).toMatchObject({ winner: 1, decidedBy: 'significant', leader: 1 });
      expect(v.posteriors[1].probabilityBest).toBeGreaterThan(0.999);
    });

    it('follows the inconclusive rule when the leader is not best with the required probability', () => {
      expect(decide(close, 0.95, 'send_leader')).toMatchObject({ winner: 1, decidedBy: 'leader', leader: 1 });
      expect(decide(close, 0.95, 'send_original')).toMatchObject({ winner: 0, decidedBy: 'original', leader: 1 });
      expect(decide(close, 0.95, 'wait')).toMatchObject({ winner: null, decidedBy: null, leader: 1 });
      // The same counts at a lower bar are evidence enough.
      const p = posteriors(close)[1].probabilityBest;
      expect(decide(close, Math.floor(p * 1000) / 1000, 'wait')).toMatchObject({ winner: 1, decidedBy: 'significant' });
    });

    it('ranks by posterior mean, not by the raw rate, and breaks ties to the lower index', () => {
      // 1/1 has the higher raw rate (100 %) but a lower posterior mean (2/3) than 90/100 (≈ 0.892).
      expect(decide([{ successes: 1, trials: 1 }, { successes: 90, trials: 100 }], 0.999, 'send_leader').leader).toBe(1);
      const tie = decide([{ successes: 10, trials: 100 }, { successes: 10, trials: 100 }], 0.5, 'wait');
      expect(tie.leader).toBe(0);
      // A perfect tie is never evidence, whatever the bar.
      expect(tie).toMatchObject({ winner: null, decidedBy: null });
    });
  });
});
