import type { Knex } from 'knex';
import { SendStatus } from '../states';
import { joinTemplate, TEMPLATE_HTML } from '../sources/template-html';

/**
 * src/single-sends: the one owner of the `single_sends` table (a send's settings, state and
 * counters). Every statement that names it is in this folder, named for what it does, and the
 * rest of Herald calls these functions (eslint.config.js refuses SQL on the table elsewhere):
 *
 * - schedule.ts: a send's way through its states (the worker's due-send claim, fan-out, completion);
 * - this file: the record's reads and writes for the API, and the reads of reports, senders,
 *   A/B tests and message sources that join a send.
 *
 * The statistics writer and the utr joins reach the table by owner kind (src/sources `OWNERS`,
 * src/statistics), written once for sends and automations alike. The statements moved here
 * unchanged (their text, so their plans).
 */

/** The account's live sends (alias `s`): the API's reads start here. */
export function liveSends(db: Knex, userId: number): Knex.QueryBuilder {
  return db('single_sends as s').where('s.user_id', userId).whereNull('s.deleted_at');
}

/** A new send of these columns (with its `user_id`); returns its id. */
export async function insertSend(trx: Knex, row: Record<string, unknown>): Promise<number> {
  const [{ id }] = await trx('single_sends').insert(row).returning('id');
  return id as number;
}

/** Sets columns of send `id` of account `userId`. */
export async function updateSend(trx: Knex, userId: number, id: number, columns: Record<string, unknown>): Promise<void> {
  await trx('single_sends').where('single_sends.user_id', userId).where({ id }).update(columns);
}

/** Locks the account's live sends with these ids or utrs (for the caller's transaction); returns each one's id and utr. */
export async function lockLiveSends(trx: Knex.Transaction, userId: number, ids: number[], utrs: string[]): Promise<Array<{ id: number; utr: string }>> {
  return (await trx('single_sends')
    .where('single_sends.user_id', userId)
    .whereNull('single_sends.deleted_at')
    .where((q) => q.whereIn('single_sends.id', ids).orWhereIn('single_sends.utr', utrs))
    .forUpdate()
    .select('single_sends.id', 'single_sends.utr')) as Array<{ id: number; utr: string }>;
}

/** Soft-deletes the account's sends of these ids. */
export async function deleteSends(trx: Knex, userId: number, ids: number[]): Promise<void> {
  await trx('single_sends').where('single_sends.user_id', userId).whereIn('id', ids).update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
}

/** The status of send `id` of account `userId` (deleted or not); undefined when there is none. */
export async function statusOfSend(db: Knex, userId: number, id: number): Promise<SendStatus | undefined> {
  const send = await db('single_sends').where({ id, user_id: userId }).first('status');
  return send?.status as SendStatus | undefined;
}

/** The account's `limit` newest sends that went out (index single_sends_user_sent_index), live ones. */
export async function latestSentSends<T>(db: Knex, userId: number, limit: number): Promise<T[]> {
  return (await db('single_sends')
    .where({ user_id: userId })
    .whereNotNull('sent_at')
    .whereNull('deleted_at')
    .orderBy([
      { column: 'sent_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit)
    .select('id', 'utr', 'single_send_name', 'subject', 'status', 'sent_at')) as T[];
}

/** A ready or running live send of the account that sends from sender `senderId`, itself or by one of its A/B variations. */
export function sendUsingSender(trx: Knex, userId: number, senderId: number): Promise<{ id: number } | undefined> {
  return readySendUsing(trx, userId, 'sender_id', senderId);
}

/** A ready or running live send of the account whose design is template `templateId`, its own or one of its A/B variations'. */
export function sendUsingDesign(trx: Knex, userId: number, templateId: number): Promise<{ id: number } | undefined> {
  return readySendUsing(trx, userId, 'template_id', templateId);
}

/** A send that is sending with the design (its own or an A/B variation's): its messages are being made from it. */
export function runningSendUsingDesign(trx: Knex, userId: number, templateId: number): Promise<{ id: number } | undefined> {
  return readySendUsing(trx, userId, 'template_id', templateId, [SendStatus.Running]);
}

async function readySendUsing(
  trx: Knex,
  userId: number,
  column: 'sender_id' | 'template_id',
  value: number,
  statuses: SendStatus[] = [SendStatus.Ready, SendStatus.Running],
): Promise<{ id: number } | undefined> {
  return (await trx('single_sends')
    .where('single_sends.user_id', userId)
    .where((q) =>
      q
        .where(`single_sends.${column}`, value)
        .orWhereExists((v) =>
          v
            .from('single_send_variations as v')
            // The account as a value (Citus routes a correlated subquery by its own filter).
            .whereRaw('v.single_send_id = single_sends.id AND v.user_id = ?', [userId])
            .where(`v.${column}`, value),
        ),
    )
    .whereIn('single_sends.status', statuses)
    .whereNull('single_sends.deleted_at')
    .first('single_sends.id')) as { id: number } | undefined;
}

/** What a send's messages are made of (its sender was copied onto it when it was saved), with its template's HTML. */
export async function sendDesign(db: Knex, userId: number, id: number) {
  return joinTemplate(db('single_sends as s'), 's')
    .where({ 's.id': id, 's.user_id': userId })
    .first('s.user_id', 's.subject', 's.preheader', 's.template_html', db.raw(TEMPLATE_HTML), 's.from_sender', 's.reply_to', 's.sender_name', 's.sender_address');
}

/** The variations of a send, in index order, with the field of the test's type (A's from the send). */
export async function variationsWithSend<T>(db: Knex, userId: number, singleSendId: number): Promise<T[]> {
  return (await db('single_send_variations as v')
    .join('single_sends as s', (j) => j.on('s.id', 'v.single_send_id').andOn('s.user_id', 'v.user_id'))
    .where({ 'v.user_id': userId, 'v.single_send_id': singleSendId })
    .orderBy('v.idx')
    .select(
      'v.id',
      'v.idx',
      db.raw('coalesce(v.subject, s.subject) AS subject'),
      db.raw('coalesce(v.template_id, s.template_id) AS template_id'),
      db.raw('coalesce(v.sender_id, s.sender_id) AS sender_id'),
    )) as T[];
}

/** The A/B test of a send, locked for the caller's transaction, with its send's utr, name and whether it was deleted. */
export async function lockTestWithSend<T>(trx: Knex.Transaction, userId: number, singleSendId: number): Promise<T | undefined> {
  return (await trx('ab_tests as t')
    .join('single_sends as s', (j) => j.on('s.id', 't.single_send_id').andOn('s.user_id', 't.user_id'))
    .where({ 't.user_id': userId, 't.single_send_id': singleSendId })
    .forUpdate('t')
    .first('t.user_id', 't.single_send_id', 't.type', 't.winner_criteria', 't.confidence', 't.if_inconclusive', 't.status', 't.test_size', 't.audience_size', 's.utr', 's.single_send_name', 's.deleted_at')) as
    | T
    | undefined;
}

/** `JOIN` of an A/B test's (alias `test`) send as `s`, named with `account` (a value on Citus, so that it routes). */
export const JOIN_SEND_OF_TEST = (test: string, account: string) => `JOIN single_sends s ON s.id = ${test}.single_send_id AND s.user_id = ${account}`;
