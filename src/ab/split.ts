import { createHmac } from 'node:crypto';
import type { Knex } from 'knex';
import { secret } from '../db/secrets';
import { assignVariations, countSendRows, rankedSendRows } from '../deliveries/rows';
import { AbPhase, AbStatus, abStatus, DeliveryStatus, deliveryStatus } from '../states';

/**
 * Who is in an A/B send's test group, and which variation each of them gets (docs/decisions.md,
 * "A/B tests: the split"). Fan-out writes the whole audience as `held` rows; once it is complete,
 * in the same transaction as its last chunk, the test group is taken from them:
 *
 * - every recipient's rank is a keyed hash of the send and the address: md5 of a key (an HMAC of
 *   the send's utr under the installation's tracking secret, src/db/secrets.ts) and the lower-cased
 *   address, so the order is uniform, the same whenever it is computed, independent of the order
 *   rows were written in, and unknown to anyone without the secret;
 * - the test group is the first round(N × test_percentage / 100) recipients in that order, N the
 *   recipients written (dropped ones are no recipients), but never fewer than one per variation
 *   (testGroupSize), and they are dealt to the variations in turn (rank 1 → A, 2 → B, …), so the
 *   groups differ in size by one at most;
 * - they become `queued` with their variation and phase; the rest stay `held` until the decision.
 *
 * The audience is therefore fixed when the send starts: a contact added to its list during the
 * test is no recipient of it.
 */

const ASSIGN = deliveryStatus.move(DeliveryStatus.Held, DeliveryStatus.Queued);
const START = abStatus.move(AbStatus.Pending, AbStatus.Testing);

/** The key of a send's ranking: an HMAC of its utr under the installation's secret, as hex. */
async function rankingKey(db: Knex, utr: string): Promise<string> {
  return createHmac('sha256', await secret(db, 'tracking')).update(`ab-split:${utr.toLowerCase()}`).digest('hex');
}

/** The ranking's order, on a deliveries row (alias `d`): the keyed hash, then the address (a tie is all but impossible). */
const RANK_ORDER = `md5(:key::text || lower(d.email)), lower(d.email)`;

/**
 * How many of `audience` recipients are the test group: `percentage` of them, rounded, but at
 * least one per variation, so that every variation has evidence to be decided on (a test group
 * of 0 held everyone until a decision made on nothing). An audience smaller than that is refused
 * when the send is created or updated (src/resources/single-sends/ab-input.ts); should it have
 * shrunk below it by the time the send starts, all of it is the test group — nobody is held for a
 * decision, each recipient gets one variation, and the send completes.
 */
export function testGroupSize(audience: number, percentage: number, variations: number): number {
  return Math.min(audience, Math.max(Math.round((audience * percentage) / 100), variations));
}

/**
 * The test group of an A/B send whose audience was just written: ranks the held rows and queues
 * the first of them, dealt to the variations in turn. Runs in the caller's transaction (the fan-out's
 * last chunk). Returns the size of the test group, or undefined when the send has no test waiting
 * to start.
 */
export async function startTestGroup(trx: Knex.Transaction, send: { id: number; user_id: number; utr: string }): Promise<number | undefined> {
  const test = await trx('ab_tests')
    .where({ single_send_id: send.id, user_id: send.user_id, status: START.from[0] })
    .forUpdate()
    .first('test_percentage');
  if (!test) return undefined;
  const variations = (await trx('single_send_variations')
    .where({ single_send_id: send.id, user_id: send.user_id })
    .orderBy('idx')
    .pluck('id')) as number[];
  const key = await rankingKey(trx, send.utr);
  // Three plain statements — the size, the ranked ids, their assignment — where one statement (a
  // window function over the ranked rows, in a CTE that updates them) crashed the Citus 13.2.2
  // coordinator on the cluster (signal 11, with or without bind parameters; docs/scaling.md).
  const held = await countSendRows(trx, send.user_id, send.id, ASSIGN.fromSql);
  const size = testGroupSize(held, test.test_percentage, variations.length);
  const ranked = size ? await rankedSendRows(trx, { userId: send.user_id, sendId: send.id, key, size }, ASSIGN.fromSql, RANK_ORDER) : [];
  // Dealt in turn: rank 1 → A, 2 → B, …
  const dealt = ranked.map((r, i) => ({ id: r.id, v: variations[i % variations.length] }));
  const rows = dealt.length ? await assignVariations(trx, send.user_id, dealt, ASSIGN, AbPhase.Test) : [];
  const counts = new Map<number, number>();
  for (const r of rows) counts.set(r.ab_variation_id, (counts.get(r.ab_variation_id) ?? 0) + 1);
  for (const id of variations) {
    await trx('single_send_variations').where({ id, user_id: send.user_id }).update({ triggered: counts.get(id) ?? 0 });
  }
  await trx('ab_tests')
    .where({ single_send_id: send.id, user_id: send.user_id })
    .update({ status: START.to, test_size: [...counts.values()].reduce((s, n) => s + n, 0), audience_size: held, updated_at: trx.fn.now() });
  return [...counts.values()].reduce((s, n) => s + n, 0);
}
