import betaCdf from '@stdlib/stats-base-dists-beta-cdf';
import betaLogpdf from '@stdlib/stats-base-dists-beta-logpdf';
import betaQuantile from '@stdlib/stats-base-dists-beta-quantile';

/**
 * The statistics of an A/B test's decision (docs/decisions.md, "A/B tests: the decision").
 *
 * Each variation's rate (opens or clicks over delivered messages) gets a Beta(1 + successes,
 * 1 + failures) posterior: the uniform prior updated by the test's counts. From it:
 * - `mean`, the posterior mean, which ranks the variations (ties to the lower index);
 * - `interval`, the equal-tailed 95 % credible interval (the 2.5 % and 97.5 % quantiles);
 * - `probabilityBest`, the posterior probability that the variation's rate is the highest:
 *   P_i = ∫ f_i(x) · Π_{j≠i} F_j(x) dx, integrated numerically (below) for any number of
 *   variations. The same counts always give the same numbers: nothing is sampled.
 *
 * Pure: no I/O, no clock, no randomness.
 */

export interface Arm {
  /** People who opened (or clicked): the rate's numerator. */
  successes: number;
  /** Messages delivered: the rate's denominator. */
  trials: number;
}

export interface ArmPosterior {
  /** successes / trials (0 when nothing was delivered): what the report shows as the rate. */
  rate: number;
  /** The posterior mean (1 + s) / (2 + n). */
  mean: number;
  /** The equal-tailed 95 % credible interval. */
  interval: [number, number];
  /** The posterior probability that this variation has the highest rate. */
  probabilityBest: number;
}

interface Beta {
  a: number;
  b: number;
}

function posterior(arm: Arm): Beta {
  const n = Math.max(0, Math.floor(arm.trials));
  const s = Math.min(n, Math.max(0, Math.floor(arm.successes)));
  return { a: 1 + s, b: 1 + n - s };
}

/** Nodes and weights of the n-point Gauss–Legendre rule on [-1, 1] (Newton on P_n, Golub–Welsch-free). */
function gaussLegendre(n: number): { x: number[]; w: number[] } {
  const x: number[] = new Array(n);
  const w: number[] = new Array(n);
  for (let i = 0; i < Math.ceil(n / 2); i += 1) {
    let z = Math.cos((Math.PI * (i + 0.75)) / (n + 0.5));
    let dp = 0;
    for (let iter = 0; iter < 100; iter += 1) {
      let p0 = 1;
      let p1 = z;
      for (let k = 2; k <= n; k += 1) {
        const p2 = ((2 * k - 1) * z * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = (n * (z * p1 - p0)) / (z * z - 1);
      const step = p1 / dp;
      z -= step;
      if (Math.abs(step) < 1e-15) break;
    }
    x[i] = -z;
    x[n - 1 - i] = z;
    w[i] = w[n - 1 - i] = 2 / ((1 - z * z) * dp * dp);
  }
  return { x, w };
}

const RULE = gaussLegendre(24);

/**
 * Where a posterior has its mass, as probabilities: the breakpoints of the integration. Every
 * variation's quantiles at these levels split the range, so the panels are narrow where any of
 * the densities or distribution functions changes fast (a narrow posterior beside a wide one).
 * Outside the outermost levels a density holds less than 2e-12 of its mass.
 */
const LEVELS = [1e-12, 1e-8, 1e-5, 0.001, 0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.98, 0.999, 1 - 1e-5, 1 - 1e-8, 1 - 1e-12];

/**
 * P_i = ∫ f_i(x) Π_{j≠i} F_j(x) dx for every i at once: one Gauss–Legendre rule per panel
 * between consecutive breakpoints, each density and distribution function evaluated once per
 * node (in logs, so a product of many small factors does not underflow).
 */
function probabilitiesBest(betas: Beta[]): number[] {
  const cuts = [...new Set(betas.flatMap((d) => LEVELS.map((p) => betaQuantile(p, d.a, d.b))))].sort((p, q) => p - q);
  const out = betas.map(() => 0);
  const logPdf = new Array<number>(betas.length);
  const logCdf = new Array<number>(betas.length);
  for (let c = 0; c + 1 < cuts.length; c += 1) {
    const half = (cuts[c + 1] - cuts[c]) / 2;
    const mid = cuts[c] + half;
    for (let k = 0; k < RULE.x.length; k += 1) {
      const x = mid + half * RULE.x[k];
      let sumLogCdf = 0;
      for (let j = 0; j < betas.length; j += 1) {
        logPdf[j] = betaLogpdf(x, betas[j].a, betas[j].b);
        logCdf[j] = Math.log(betaCdf(x, betas[j].a, betas[j].b));
        sumLogCdf += logCdf[j];
      }
      for (let i = 0; i < betas.length; i += 1) {
        // Π_{j≠i} F_j as the sum of all logs less its own (a zero F_i leaves -Infinity - -Infinity: computed apart).
        const others = Number.isFinite(logCdf[i]) ? sumLogCdf - logCdf[i] : betas.reduce((s, _, j) => (j === i ? s : s + logCdf[j]), 0);
        out[i] += RULE.w[k] * half * Math.exp(logPdf[i] + others);
      }
    }
  }
  // The integrals add up to 1 within the quadrature's error (ties have probability 0); scaled
  // so the report's numbers add up.
  const total = out.reduce((s, v) => s + v, 0);
  return total > 0 ? out.map((v) => Math.min(1, Math.max(0, v / total))) : betas.map(() => 1 / betas.length);
}

/** The posterior of each variation: rate, mean, 95 % interval and the probability of being best. */
export function posteriors(arms: Arm[]): ArmPosterior[] {
  const betas = arms.map(posterior);
  const best = arms.length > 1 ? probabilitiesBest(betas) : arms.map(() => 1);
  return arms.map((arm, i) => {
    const { a, b } = betas[i];
    return {
      rate: arm.trials > 0 ? Math.min(1, Math.max(0, arm.successes / arm.trials)) : 0,
      mean: a / (a + b),
      interval: [betaQuantile(0.025, a, b), betaQuantile(0.975, a, b)],
      probabilityBest: best[i],
    };
  });
}

/** What to do when no variation is best with the required probability. */
export type IfInconclusive = 'send_leader' | 'send_original' | 'wait';
/** How a winner was chosen: on evidence, by the inconclusive rule (leader, original), or by a person. */
export const DECIDED_BY = ['significant', 'leader', 'original', 'manual'] as const;
export type DecidedBy = (typeof DECIDED_BY)[number];

export interface Verdict {
  /** The variation's index, or null: the test is inconclusive and waits for a person. */
  winner: number | null;
  decidedBy: Exclude<DecidedBy, 'manual'> | null;
  /** The leader (highest posterior mean, ties to the lower index), whatever the verdict. */
  leader: number;
  posteriors: ArmPosterior[];
}

/**
 * The decision: the leader wins on evidence when its probability of being best reaches
 * `confidence`; otherwise `ifInconclusive` says: the leader anyway, the original (index 0), or
 * nobody yet (a person picks).
 */
export function decide(arms: Arm[], confidence: number, ifInconclusive: IfInconclusive): Verdict {
  if (arms.length < 2) throw new Error('an A/B decision needs two variations or more');
  const post = posteriors(arms);
  let leader = 0;
  for (let i = 1; i < post.length; i += 1) if (post[i].mean > post[leader].mean) leader = i;
  // A leader level with another variation is never ahead on evidence, whatever the bar (at 0.5 two
  // equal variations would each reach it).
  const alone = post.every((p, i) => i === leader || p.mean < post[leader].mean);
  if (alone && post[leader].probabilityBest >= confidence) return { winner: leader, decidedBy: 'significant', leader, posteriors: post };
  if (ifInconclusive === 'send_leader') return { winner: leader, decidedBy: 'leader', leader, posteriors: post };
  if (ifInconclusive === 'send_original') return { winner: 0, decidedBy: 'original', leader, posteriors: post };
  return { winner: null, decidedBy: null, leader, posteriors: post };
}
