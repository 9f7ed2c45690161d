import type { Knex } from 'knex';
import { COUNTERS, type Counts, type LinkCounts } from '../statistics';
import { AbStatus } from '../states';
import type { DecidedBy } from './bayes';
import { describeVariations, loadVariations, type VariationResult } from './results';
import type { AbCriteria, AbIfInconclusive, AbType } from './settings';
import type { AbSettingsRow } from './store';

/**
 * The `ab` block of GET /single/send/stats (docs/decisions.md, "A/B tests: the report"):
 * the settings, where the test stands, the winner and why, the variations side by side — live
 * while the test runs, as frozen at the decision after it — and the send's counters split by
 * phase. Everything is read from counters, never from the recipient rows, so it costs the same
 * for ten recipients as for a million.
 */

export interface AbReport {
  type: AbType;
  test_percentage: number;
  duration_minutes: number;
  winner_criteria: AbCriteria;
  confidence: number;
  if_inconclusive: AbIfInconclusive;
  /** `pending` until the send starts; `completed` once decided and the send completed. */
  status: AbStatus | 'completed';
  test_size: number | null;
  winner: number | null;
  decided_at: string | null;
  decided_by: DecidedBy | null;
  variations: VariationResult[];
  phases: { test: Counts; winner: Counts };
}

type TestRow = AbSettingsRow & {
  status: AbStatus;
  test_size: number | null;
  winner: number | null;
  decided_at: string | null;
  decided_by: DecidedBy | null;
  result: { variations: VariationResult[] } | null;
};

/**
 * The report of a send's A/B test (undefined: an ordinary send), given the send's own counters
 * (the totals) and whether it completed; with the send's tracked links for a design test, whose
 * links are its variations' (added up by URL).
 */
export async function abReport(
  db: Knex,
  userId: number,
  singleSendId: number,
  send: { counts: Counts; completed: boolean },
): Promise<{ ab: AbReport; links?: LinkCounts[] } | undefined> {
  const t = (await db('ab_tests')
    .where({ user_id: userId, single_send_id: singleSendId })
    .first('type', 'test_percentage', 'duration_minutes', 'winner_criteria', 'confidence', 'if_inconclusive', 'status', 'test_size', 'winner', 'decided_at', 'decided_by', 'result')) as
    | TestRow
    | undefined;
  if (!t) return undefined;
  const loaded = await loadVariations(db, userId, singleSendId, t.winner_criteria);
  const variations = t.status === AbStatus.Decided && t.result ? t.result.variations : await describeVariations(db, userId, t.type, loaded);
  const test = Object.fromEntries(COUNTERS.map((c) => [c, loaded.counts.reduce((sum, v) => sum + v[c], 0)])) as Counts;
  const winner = Object.fromEntries(COUNTERS.map((c) => [c, Math.max(0, send.counts[c] - test[c])])) as Counts;
  const ab: AbReport = {
    type: t.type,
    test_percentage: t.test_percentage,
    duration_minutes: t.duration_minutes,
    winner_criteria: t.winner_criteria,
    confidence: Number(t.confidence),
    if_inconclusive: t.if_inconclusive,
    status: t.status === AbStatus.Decided && send.completed ? 'completed' : t.status,
    test_size: t.test_size,
    winner: t.winner,
    decided_at: t.decided_at,
    decided_by: t.decided_by,
    variations,
    phases: { test, winner },
  };
  if (t.type !== 'design') return { ab };
  return { ab, links: await designLinks(db, userId, loaded.rows.map((r) => r.id)) };
}

/** A design test's links as the send's: every variation's, added up by URL, in variation order (A's first), then as each design has them. */
async function designLinks(db: Knex, userId: number, variationIds: number[]): Promise<LinkCounts[]> {
  return (await db('tracked_links as l')
    .join('single_send_variations as v', (j) => j.on('v.id', 'l.ab_variation_id').andOn('v.user_id', 'l.user_id'))
    .where('l.user_id', userId)
    .whereIn('l.ab_variation_id', variationIds)
    .groupBy('l.url')
    .orderByRaw('min(v.idx), min(l.id)')
    .select('l.url', db.raw('sum(l.unique_clicks)::int AS unique_clicks'), db.raw('sum(l.total_clicks)::int AS total_clicks'))) as LinkCounts[];
}
