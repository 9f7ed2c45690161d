import type { Knex } from 'knex';

/**
 * The test messages of single sends (POST /single/send/test), counted for their limit per account
 * and hour (`test_sends`, one row per message; migrations/202612280300). Nothing else reads them:
 * a test message has no recipient row, so it moves no statistics and no status.
 */

/** Advisory-lock class of pg_advisory_xact_lock(class, account): one reservation per account at a time, across processes. */
const TEST_SENDS_LOCK_CLASS = 0x7473; // 'ts'

/** Rows past this age are of no use to the hourly count; an account's are removed as it reserves more. */
const KEEP = "interval '1 day'";

export type Reservation = { ids: number[] } | { retryAfterSeconds: number };

/**
 * Reserves one test message of send `singleSendId` per address of `emails` (repeat an address for
 * several messages), unless that would make more than `perHour` in the last hour for the account:
 * then nothing is reserved and the answer is how many seconds until enough of the hour's messages
 * have aged out. Serialised per account (an advisory lock on its id, taken on the coordinator on
 * Citus), so concurrent requests on any process never pass the limit together.
 */
export async function reserveTestMessages(db: Knex, userId: number, singleSendId: number, emails: string[], perHour: number): Promise<Reservation> {
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(?, ?)', [TEST_SENDS_LOCK_CLASS, userId]);
    const recent = (
      await trx.raw(
        `SELECT ceil(extract(epoch FROM created_at + interval '1 hour' - now()))::int AS expires_in
         FROM test_sends WHERE user_id = ? AND created_at > now() - interval '1 hour' ORDER BY created_at`,
        [userId],
      )
    ).rows as Array<{ expires_in: number }>;
    const over = recent.length + emails.length - perHour;
    if (over > 0) return { retryAfterSeconds: Math.max(1, recent[Math.min(over, recent.length) - 1]?.expires_in ?? 3600) };
    await trx('test_sends').where('user_id', userId).whereRaw(`created_at < now() - ${KEEP}`).delete();
    const rows = (await trx('test_sends')
      .insert(emails.map((email) => ({ user_id: userId, single_send_id: singleSendId, email })))
      .returning('id')) as Array<{ id: string | number }>;
    return { ids: rows.map((r) => Number(r.id)) };
  });
}

/** Gives back reserved messages that were not sent (the mail server refused them): they do not count. */
export async function releaseTestMessages(db: Knex, userId: number, ids: number[]): Promise<void> {
  if (ids.length) await db('test_sends').where('user_id', userId).whereIn('id', ids).delete();
}
