import { randomInt } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * A form's submissions and confirmations per UTC day (`form_stats_daily`, issue 35). Each count
 * is upserted into one of STAT_SLOTS rows of the form and day (`slot`, chosen at random), and a
 * day's figure is the sum of its slots (statsByDay): a row stays locked until the caller's
 * transaction commits, and with one row per form and day every submission to a form waited on the
 * one before it through its commit (bench/subscribe.ts: Lock:transactionid). One statement each,
 * on one account's rows (one node on Citus). Call these last, just before the commit.
 */
export const STAT_SLOTS = 16;

function bumpSql(userId: number, formId: number, column: 'submissions' | 'confirmations', when?: string): { sql: string; bindings: Knex.RawBinding[] } {
  return {
    sql: `INSERT INTO form_stats_daily (user_id, form_id, day, slot, ${column})
     SELECT ?, ?, (now() AT TIME ZONE 'UTC')::date, ?, 1${when ? ` WHERE ${when}` : ''}
     ON CONFLICT (user_id, form_id, day, slot) DO UPDATE SET ${column} = form_stats_daily.${column} + 1`,
    bindings: [userId, formId, randomInt(STAT_SLOTS)],
  };
}

function bump(db: Knex, userId: number, formId: number, column: 'submissions' | 'confirmations'): Promise<unknown> {
  const { sql, bindings } = bumpSql(userId, formId, column);
  return db.raw(sql, bindings);
}

/** countFormSubmission as a CTE of the submission's one statement, counted when `when` (SQL) holds. */
export function countFormSubmissionSql(userId: number, formId: number, when: string): { sql: string; bindings: Knex.RawBinding[] } {
  return bumpSql(userId, formId, 'submissions', when);
}

/** One more submission today (every accepted submission: pending or, single opt-in, added at once). */
export function countFormSubmission(trx: Knex, userId: number, formId: number): Promise<unknown> {
  return bump(trx, userId, formId, 'submissions');
}

/** One more confirmation today (a pending subscription confirmed). */
export function countFormConfirmation(trx: Knex, userId: number, formId: number): Promise<unknown> {
  return bump(trx, userId, formId, 'confirmations');
}

/** A form's counts by UTC day (`YYYY-MM-DD`) from `since` on: the days with a count only, their slots summed. */
export async function statsByDay(db: Knex, userId: number, formId: number, since: string): Promise<Array<{ day: string; submissions: number; confirmations: number }>> {
  const { rows } = await db.raw(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, sum(submissions)::int AS submissions, sum(confirmations)::int AS confirmations
     FROM form_stats_daily WHERE user_id = ? AND form_id = ? AND day >= ?::date
     GROUP BY day`,
    [userId, formId, since],
  );
  return rows;
}
