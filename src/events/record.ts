import type { Knex } from 'knex';
import type { MessageEvent } from './types';
import { ownerColumnsOf, variationIndexes } from '../sources';
import { applyStatistics } from '../statistics';

/**
 * The one place events are written. Each fact is recorded where it becomes true, in the same
 * transaction as the state change it describes (a delivery's outcome, an unsubscribe), and
 * its consumers run from here: the statistics counters in the same transaction, notification
 * mail as a notification job (account events, src/events/account-events.ts).
 */

/** Advisory-lock class for pg_advisory_xact_lock(class, account): one event writer per account at a time. */
export const EVENTS_LOCK_CLASS = 0x6576; // 'ev'

/**
 * Event ids are the cursor of GET /events. A bigserial is drawn at INSERT but becomes visible at
 * commit, so without care a reader paging by id could pass an id whose transaction commits
 * later. The per-account lock, taken right before the INSERT and held to commit, makes one
 * account's ids visible in order. The lock is taken late (the transaction's other work is done)
 * so it is held briefly; accounts are locked in ascending order, so two writers never deadlock.
 */
export async function lockAccountEvents(trx: Knex.Transaction, userIds: Iterable<number>): Promise<void> {
  const ids = [...new Set(userIds)].sort((a, b) => a - b);
  for (const id of ids) await trx.raw('SELECT pg_advisory_xact_lock(?, ?)', [EVENTS_LOCK_CLASS, id]);
}

/** Rows of one multi-row INSERT: a million-recipient send writes its events a batch at a time. */
const INSERT_SQL = `
  INSERT INTO events (user_id, type, email, single_send_id, automation_id, ab_variation_id, delivery_id, data)
  SELECT user_id, type, lower(email), single_send_id, automation_id, ab_variation_id, delivery_id, coalesce(data, '{}'::jsonb)
  FROM json_to_recordset(?::json)
    AS v(user_id integer, type text, email text, single_send_id integer, automation_id integer, ab_variation_id integer, delivery_id bigint, data jsonb)`;

/** Records facts about messages (and updates the statistics they make), in the caller's transaction. */
export async function recordMessageEvents(trx: Knex.Transaction, events: MessageEvent[]): Promise<void> {
  if (events.length === 0) return;
  await applyStatistics(trx, events);
  await lockAccountEvents(
    trx,
    events.map((e) => e.userId),
  );
  // A message of an A/B send says which variation it was (its index, A = 0), whatever its type.
  const indexes = await variationIndexes(trx, events.flatMap((e) => (e.abVariationId ? [{ userId: e.userId, variationId: e.abVariationId }] : [])));
  await trx.raw(INSERT_SQL, [
    JSON.stringify(
      events.map((e) => ({
        user_id: e.userId,
        type: e.type,
        email: e.email,
        ...ownerColumnsOf(e),
        delivery_id: e.deliveryId,
        data: e.abVariationId && indexes.has(e.abVariationId) ? { ...e.data, variation: indexes.get(e.abVariationId) } : (e.data ?? {}),
      })),
    ),
  ]);
}
