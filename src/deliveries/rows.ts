import type { Knex } from 'knex';
import { ofOneAccount } from '../db/per-account';
import { secret } from '../db/secrets';
import { lookupToken } from '../recipient-token';
import { deliveryStatus, type DeliveryStatus, type Move } from '../states';

/**
 * src/deliveries: the one owner of the `deliveries` table, the recipient rows (one per message).
 * Every statement that reads or writes it is in this folder, named for what it does, and the
 * rest of Herald calls these functions (eslint.config.js refuses SQL on the table elsewhere):
 *
 * - queue.ts: the send's claims, leases and outcomes (the hot path bench:send measures);
 * - fanout.ts: a send's audience written as rows (`INSERT … SELECT`, bench:fanout);
 * - this file: the other reads and writes — rows found by key or token, automation emails
 *   queued, opens, clicks and unsubscribes marked, unsent rows cancelled.
 *
 * The statements moved here unchanged (their text, so their plans); each caller's comment on
 * why stayed with it or came along.
 */

/** A row's columns, prefixed by the alias `d` (the only alias these statements give the table). */
const inD = (columns: readonly string[]) => columns.map((c) => `d.${c}`);

/**
 * The row behind a link's token: a signed token names it by its key (primary-key lookup), a
 * token of a row written before signed tokens by its stored value. Undefined for anything else,
 * without a query.
 */
export async function rowOfToken<T>(db: Knex, token: string, columns: readonly string[]): Promise<T | undefined> {
  const found = lookupToken(await secret(db, 'tracking'), token);
  if (!found) return undefined;
  const q = db('deliveries as d');
  if (found.by === 'key') q.where({ 'd.id': found.ref.deliveryId, 'd.user_id': found.ref.userId });
  else q.where('d.token', found.token);
  return (await q.first(inD(columns))) as T | undefined;
}

/** Account `userId`'s rows of these ids (one node's read on Citus). */
export async function rowsByIds<T>(db: Knex, userId: number, ids: number[], columns: readonly string[]): Promise<T[]> {
  const { rows } = await db.raw(`SELECT ${inD(columns).join(', ')} FROM deliveries d WHERE d.user_id = ? AND d.id = ANY (?::bigint[])`, [userId, ids]);
  return rows as T[];
}

/** The rows of these stored tokens (rows written before signed tokens: the token names no account). */
export async function rowsByStoredTokens<T>(db: Knex, tokens: string[], columns: readonly string[]): Promise<T[]> {
  const { rows } = await db.raw(`SELECT ${inD(columns).join(', ')} FROM deliveries d WHERE d.token = ANY (?::text[])`, [tokens]);
  return rows as T[];
}

/** The rows of these keys (`{ id, user_id }`), with these columns. */
export async function rowsByKeys<T>(trx: Knex, keys: ReadonlyArray<{ id: number | null; user_id: number }>, columns: readonly string[]): Promise<T[]> {
  const { rows } = await trx.raw(
    `SELECT ${inD(columns).join(', ')}
     FROM json_to_recordset(?::json) AS v(id bigint, user_id integer)
     JOIN deliveries d ON d.id = v.id AND d.user_id = v.user_id${ofOneAccount('d', keys.map((k) => k.user_id))}`,
    [JSON.stringify(keys)],
  );
  return rows as T[];
}

/**
 * `NOT EXISTS` a row of the send (alias `send`) still to be sent: queued, being sent, or held for
 * an A/B decision. One binding: the send's account.
 */
export const NOTHING_LEFT_TO_SEND = (send: string) => `NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.single_send_id = ${send}.id AND d.user_id = ?
                           AND d.status IN (${deliveryStatus.sql.Queued}, ${deliveryStatus.sql.Sending}, ${deliveryStatus.sql.Held}))`;

/**
 * Queues one row per automation email due (`queue`: the account, automation, schedule and
 * contact of each), addressed to the contact's address now; an email a contact already has a
 * row of is skipped (unique per email and address). Returns the rows written.
 */
export async function queueAutomationEmails<T>(
  trx: Knex,
  queue: ReadonlyArray<{ user_id: number; automation_id: number; schedule_id: number; contact_id: number }>,
): Promise<T[]> {
  const inserted = await trx.raw(
    `INSERT INTO deliveries (user_id, automation_id, automation_schedule_id, contact_id, email)
         SELECT v.user_id, v.automation_id, v.schedule_id, c.id, c.email
         FROM json_to_recordset(?::json) AS v(user_id integer, automation_id integer, schedule_id integer, contact_id integer)
         JOIN contacts c ON c.id = v.contact_id AND c.user_id = v.user_id${ofOneAccount('c', queue.map((r) => r.user_id))}
         ON CONFLICT (automation_schedule_id, lower(email), user_id) WHERE automation_schedule_id IS NOT NULL DO NOTHING
         RETURNING user_id, single_send_id, automation_id, automation_schedule_id`,
    [JSON.stringify(queue)],
  );
  return inserted.rows as T[];
}

/**
 * Adds each row's opens (`n`, first at `at`) and returns which rows were opened for the first
 * time by them (their open count is now exactly `n`).
 */
export async function addOpens(trx: Knex, perRow: ReadonlyArray<{ id: number; user_id: number; n: number; at: string }>): Promise<Set<number>> {
  const { rows } = await trx.raw(
    `UPDATE deliveries d SET open_count = d.open_count + v.n, opened_at = coalesce(d.opened_at, v.at)
     FROM json_to_recordset(?::json) AS v(id bigint, user_id integer, n integer, at timestamptz)
     WHERE d.id = v.id AND d.user_id = v.user_id${ofOneAccount('d', perRow.map((r) => r.user_id))}
     RETURNING d.id, d.open_count = v.n AS first`,
    [JSON.stringify(perRow)],
  );
  return new Set((rows as Array<{ id: string | number; first: boolean }>).filter((r) => r.first).map((r) => Number(r.id)));
}

/** Marks rows clicked (by ids, of the accounts `userIds`); returns the ids clicked for the first time. */
export async function markClicked(trx: Knex, ids: number[], userIds: Iterable<number>): Promise<Set<number>> {
  const { rows } = await trx.raw(
    `UPDATE deliveries d SET clicked_at = now() WHERE d.id = ANY(?::bigint[]) AND d.clicked_at IS NULL${ofOneAccount('d', userIds)} RETURNING d.id`,
    [ids],
  );
  return new Set((rows as Array<{ id: string }>).map((r) => Number(r.id)));
}

/** Marks a row unsubscribed through its message; false when it was already. */
export async function markUnsubscribed(trx: Knex, userId: number, id: number): Promise<boolean> {
  const marked = await trx('deliveries').where({ id, user_id: userId }).whereNull('unsubscribed_at').update({ unsubscribed_at: trx.fn.now() });
  return marked > 0;
}

/** Cancels account `userId`'s rows not sent yet (`cancel.from`) of these sends or automations. */
export async function cancelRowsOf(
  trx: Knex,
  userId: number,
  owner: 'single_send_id' | 'automation_id',
  ids: readonly number[],
  cancel: Move<DeliveryStatus>,
): Promise<void> {
  await trx('deliveries').where('deliveries.user_id', userId).whereIn(owner, ids).whereIn('status', cancel.from).update({ status: cancel.to });
}

/**
 * The account's rows of these ids, locked for the caller's transaction in id order (a fixed order
 * keeps two transactions from deadlocking), with how long ago each was sent (`age`, seconds; null
 * while its outcome is not written): a tracking hit's row (src/public/tracking.ts).
 */
export async function lockRowsForHits<T>(trx: Knex.Transaction, userId: number, ids: number[], columns: readonly string[]): Promise<T[]> {
  const locked = await trx.raw(
    `SELECT ${columns.join(', ')},
                extract(epoch FROM now() - sent_at)::float8 AS age
         FROM deliveries WHERE user_id = ? AND id = ANY(?::bigint[]) ORDER BY id FOR UPDATE`,
    [userId, ids],
  );
  return locked.rows as T[];
}

/**
 * Per send (alias `s`), its opened rows as `[address, id, token]` (`opened`): one indexed subquery
 * (deliveries_opened_index). One binding, the account: given as a value, not as s.user_id — Citus
 * routes a correlated subquery by its own filter.
 */
export const OPENED_ROWS_OF_SEND = `(SELECT jsonb_agg(jsonb_build_array(lower(d.email), d.id, d.token))
        FROM deliveries d WHERE d.single_send_id = s.id AND d.user_id = ? AND d.opened_at IS NOT NULL) AS opened`;

/** How many of account `userId`'s rows of send `sendId` are in the states `statusIn` (SQL text: a Move's `fromSql`). */
export async function countSendRows(trx: Knex, userId: number, sendId: number, statusIn: string): Promise<number> {
  const { rows } = await trx.raw(`SELECT count(*)::int AS n FROM deliveries d WHERE d.user_id = ? AND d.single_send_id = ? AND d.status IN (${statusIn})`, [
    userId,
    sendId,
  ]);
  return rows[0].n as number;
}

/** The ids of the first `size` such rows in `order` (SQL on alias `d`, whose binding `:key` is given). */
export async function rankedSendRows(
  trx: Knex,
  at: { userId: number; sendId: number; key: Knex.Value; size: number },
  statusIn: string,
  order: string,
): Promise<Array<{ id: string | number }>> {
  const { rows } = await trx.raw(
    `SELECT d.id FROM deliveries d
         WHERE d.user_id = :userId AND d.single_send_id = :sendId AND d.status IN (${statusIn})
         ORDER BY ${order}
         LIMIT :size`,
    at,
  );
  return rows as Array<{ id: string | number }>;
}

/** Puts each dealt row (`{ id, v }`: its variation) in A/B phase `phase` with `assign`'s move; returns each moved row's variation. */
export async function assignVariations(
  trx: Knex,
  userId: number,
  dealt: ReadonlyArray<{ id: string | number; v: number }>,
  assign: Move<DeliveryStatus>,
  phase: number,
): Promise<Array<{ ab_variation_id: number }>> {
  const { rows } = await trx.raw(
    `UPDATE deliveries d
         SET status = ${assign.toSql}, ab_phase = ?, next_attempt_at = now(), ab_variation_id = v.v
         FROM json_to_recordset(?::json) AS v(id bigint, v integer)
         WHERE d.id = v.id AND d.user_id = ? AND d.status IN (${assign.fromSql})
         RETURNING d.ab_variation_id`,
    [phase, JSON.stringify(dealt), userId],
  );
  return rows as Array<{ ab_variation_id: number }>;
}

/** How many of the send's rows are held for an A/B decision. */
export async function countHeldRows(trx: Knex, userId: number, sendId: number): Promise<number> {
  const [row] = await trx('deliveries').where({ user_id: userId, single_send_id: sendId, status: deliveryStatus.named.Held }).count<{ n: string }[]>({ n: '*' });
  return Number(row.n);
}

/**
 * `NOT EXISTS` a test-group row of the test (alias `t`) still queued or being sent: the partial
 * index deliveries_ab_test_pending_index holds exactly those. `account` names the account.
 */
export const TEST_GROUP_SENT = (account: string, testPhase: number) => `NOT EXISTS (SELECT 1 FROM deliveries d
                         WHERE d.single_send_id = t.single_send_id AND d.user_id = ${account} AND d.ab_phase = ${testPhase}
                           AND d.status IN (${deliveryStatus.sql.Queued}, ${deliveryStatus.sql.Sending}))`;
