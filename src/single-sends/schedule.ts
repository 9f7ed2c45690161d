import type { Knex } from 'knex';
import { ofAccount, type DueWork } from '../db/per-account';
import { NOTHING_LEFT_TO_SEND } from '../deliveries/rows';
import { SendStatus, sendStatus } from '../states';

/**
 * A single send's way through its states, as statements (the worker's scheduler,
 * src/delivery/scheduler.ts, runs them): ready and due → running, its audience written chunk by
 * chunk, completed once every recipient row has a final outcome.
 */

const START = sendStatus.move(SendStatus.Ready, SendStatus.Running);
const COMPLETE = sendStatus.move(SendStatus.Running, SendStatus.Completed);

const DUE_SENDS = `status IN (${START.fromSql}) AND deleted_at IS NULL AND due_at <= now()`;

/** Where ready sends whose time has come are (src/db/per-account.ts: the accounts with due sends, on Citus). */
export const DUE_SENDS_WORK: DueWork = { from: 'single_sends', where: DUE_SENDS, account: 'user_id', due: 'due_at' };

/**
 * Up to `limit` ready sends whose time has come (of account `userId` when given) → running,
 * claimed with `FOR UPDATE SKIP LOCKED`, due longest first. Returns them.
 */
export async function startDue<T>(trx: Knex.Transaction, userId: number | undefined, limit: number): Promise<T[]> {
  const result = await trx.raw(
    `UPDATE single_sends s SET status = ${START.toSql}, sent_at = now(), updated_at = now()
       WHERE s.id IN (
         SELECT id FROM single_sends
         WHERE ${DUE_SENDS}${ofAccount('user_id', userId)}
         ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED
       )${ofAccount('s.user_id', userId)}
       RETURNING s.id, s.user_id, s.utr, s.single_send_name`,
    [limit],
  );
  return result.rows as T[];
}

/** Running sends whose audience is still being written, not paused and not parked after a failure, 20 at most: every account's (a read). */
export async function sendsToFanOut(db: Knex): Promise<Array<{ id: number; user_id: number }>> {
  return (await db('single_sends')
    .where({ status: SendStatus.Running })
    .whereNull('fanout_done_at')
    .whereNull('deleted_at')
    .whereNull('paused_at')
    .where((q) => q.whereNull('fanout_retry_at').orWhere('fanout_retry_at', '<=', db.fn.now()))
    .orderBy('id')
    .limit(20)
    .select('id', 'user_id')) as Array<{ id: number; user_id: number }>;
}

/**
 * Whether some running send's audience is being written right now (one not parked after a
 * failure): every account's, one read. The sender paces itself while it is (src/delivery/fanout-pace.ts).
 */
export async function anyFanOutRunning(db: Knex): Promise<boolean> {
  const { rows } = await db.raw(
    `SELECT EXISTS (SELECT 1 FROM single_sends WHERE status = ? AND fanout_done_at IS NULL AND deleted_at IS NULL AND paused_at IS NULL
       AND (fanout_retry_at IS NULL OR fanout_retry_at <= now())) AS any`,
    [SendStatus.Running],
  );
  return Boolean((rows as Array<{ any: boolean }>)[0].any);
}

/**
 * Send `id` of account `userId` while its audience is still to be written and it is not paused
 * (undefined otherwise), locked for the chunk's transaction: a pause (which locks the send too)
 * waits for the chunk and then holds its rows, or comes first and no chunk is written.
 */
export async function sendStillFanningOut<T>(trx: Knex, id: number, userId: number): Promise<T | undefined> {
  return (await trx('single_sends')
    .where({ id, user_id: userId, status: SendStatus.Running })
    .whereNull('fanout_done_at')
    .whereNull('deleted_at')
    .whereNull('paused_at')
    .forUpdate()
    .first()) as T | undefined;
}

/** A send whose audience chunk failed waits a minute before the next try, its error kept. */
export async function parkFanOut(db: Knex, send: { id: number; user_id: number }, error: string): Promise<void> {
  await db('single_sends')
    .where({ id: send.id, user_id: send.user_id })
    .update({ fanout_retry_at: db.raw("now() + interval '1 minute'"), fanout_error: error });
}

/**
 * One chunk of a running send's audience written: its cursor moved on (`next`; null and
 * `doneAt` set when it was the last), `inserted` more recipients counted. Returns how many
 * sends were updated (0: the send was deleted or is no longer running).
 */
export async function advanceFanOut(
  trx: Knex.Transaction,
  send: { id: number; user_id: number },
  step: { next: unknown; done: boolean; doneAt: Date | null; inserted: number },
): Promise<number> {
  const { next, done, doneAt, inserted } = step;
  return trx('single_sends')
    .where({ id: send.id, user_id: send.user_id, status: SendStatus.Running })
    .whereNull('deleted_at')
    .update({
      fanout_cursor: done ? null : JSON.stringify(next),
      fanout_done_at: doneAt,
      fanout_retry_at: null,
      fanout_error: null,
      triggered: trx.raw('triggered + ?', [inserted]),
    });
}

/**
 * Running sends with a complete audience whose statistics say every recipient written is
 * delivered or bounced: the ones that may be complete (completeSend confirms it).
 */
export async function sendsMaybeComplete(db: Knex): Promise<Array<{ id: number; user_id: number }>> {
  return (await db('single_sends')
    .where({ status: SendStatus.Running })
    .whereNull('deleted_at')
    .whereNull('paused_at')
    .whereNotNull('fanout_done_at')
    .whereRaw('delivered + bounces >= triggered')
    .select('id', 'user_id')) as Array<{ id: number; user_id: number }>;
}

/**
 * Send `id` of account `userId` → completed, if it is running, not deleted, not paused and has no message
 * left to try (confirmed against its rows through the send's unique index). Returns the
 * completed send's row, undefined when it was not.
 */
export async function completeSend<T>(trx: Knex.Transaction, id: number, userId: number): Promise<T | undefined> {
  const result = await trx.raw(
    `UPDATE single_sends s SET status = ${COMPLETE.toSql}, completed_at = now(), updated_at = now()
         WHERE s.id = ? AND s.user_id = ? AND s.status IN (${COMPLETE.fromSql}) AND s.deleted_at IS NULL AND s.paused_at IS NULL
           AND ${NOTHING_LEFT_TO_SEND('s')}
         RETURNING s.*`,
    [id, userId, userId],
  );
  return (result.rows as T[])[0];
}
