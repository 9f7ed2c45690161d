import type { Knex } from 'knex';
import { COUNTERS, readCounters, readLinks, type Counts, type LinkCounts } from '../statistics';
import { variationsWithSend } from '../single-sends/rows';
import { posteriors, type Arm, type ArmPosterior } from './bayes';
import type { AbCriteria, AbType } from './settings';

/**
 * The variations of an A/B send side by side: each one's test-phase counters (src/statistics, the
 * `ab_variation` owner), its rates, and the statistics of the decision (src/ab/bayes.ts) on the
 * test's criterion. What the decision is made on, what it freezes into `ab_tests.result`, and
 * what GET /single/send/stats shows while the test runs.
 */

export interface VariationResult {
  index: number;
  /** The field of the test's type: the variation's subject, template id or sender id. */
  subject?: string;
  template_id?: number;
  sender_id?: number;
  recipients: number;
  delivered: number;
  unique_opens: number;
  unique_clicks: number;
  open_rate: number;
  click_rate: number;
  interval: [number, number];
  probability_best: number;
  /** A design test's: the variation's tracked links. */
  links?: LinkCounts[];
}

/** What a decision counts as a success: a person who opened (an open a person's click implied included) or clicked. */
export function successesOf(criteria: AbCriteria): 'unique_opens' | 'unique_clicks' {
  // A person picks on the report; its numbers are the default criterion's (clicks).
  return criteria === 'open' ? 'unique_opens' : 'unique_clicks';
}

interface VariationRow {
  id: number;
  idx: number;
  subject: string | null;
  template_id: number | null;
  sender_id: number | null;
}

/** The variations of a send, in index order, with the field of the test's type (A's from the send). */
export async function variationsOf(db: Knex, userId: number, singleSendId: number): Promise<VariationRow[]> {
  return variationsWithSend<VariationRow>(db, userId, singleSendId);
}

/** A send's variations with their live test-phase counters. */
export interface LoadedVariations {
  rows: VariationRow[];
  counts: Counts[];
  /** The decision's evidence on `criteria`: successes over delivered messages, per variation. */
  arms: Arm[];
}

export async function loadVariations(db: Knex, userId: number, singleSendId: number, criteria: AbCriteria): Promise<LoadedVariations> {
  const rows = await variationsOf(db, userId, singleSendId);
  const byId = await readCounters(db, userId, 'ab_variation', rows.map((r) => r.id));
  const zero = Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Counts;
  const counts = rows.map((r) => byId.get(r.id) ?? zero);
  const success = successesOf(criteria);
  return { rows, counts, arms: counts.map((c) => ({ successes: c[success], trials: c.delivered })) };
}

/** The variations side by side, with the statistics `post` computed from their arms. */
export async function describeVariations(db: Knex, userId: number, type: AbType, v: LoadedVariations, post: ArmPosterior[] = posteriors(v.arms)): Promise<VariationResult[]> {
  const results: VariationResult[] = [];
  for (const [i, r] of v.rows.entries()) {
    const c = v.counts[i];
    const field = type === 'subject' ? { subject: r.subject ?? '' } : type === 'design' ? { template_id: r.template_id ?? 0 } : { sender_id: r.sender_id ?? 0 };
    results.push({
      index: r.idx,
      ...field,
      recipients: c.triggered,
      delivered: c.delivered,
      unique_opens: c.unique_opens,
      unique_clicks: c.unique_clicks,
      open_rate: c.delivered > 0 ? c.unique_opens / c.delivered : 0,
      click_rate: c.delivered > 0 ? c.unique_clicks / c.delivered : 0,
      interval: post[i].interval,
      probability_best: post[i].probabilityBest,
      ...(type === 'design' ? { links: await readLinks(db, userId, { kind: 'ab_variation', id: r.id }) } : {}),
    });
  }
  return results;
}
