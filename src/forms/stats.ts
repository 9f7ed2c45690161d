import type { Knex } from 'knex';

/**
 * A form's submissions and confirmations per UTC day (`form_stats_daily`, issue 35): one row per
 * form and day, upserted. One statement each, on one account's row (one node on Citus). The row
 * is locked until the caller's transaction ends: call these last, just before the commit, so
 * concurrent submissions to one form wait on each other as briefly as possible.
 */
function bump(db: Knex, userId: number, formId: number, column: 'submissions' | 'confirmations'): Promise<unknown> {
  return db.raw(
    `INSERT INTO form_stats_daily (user_id, form_id, day, ${column})
     VALUES (?, ?, (now() AT TIME ZONE 'UTC')::date, 1)
     ON CONFLICT (user_id, form_id, day) DO UPDATE SET ${column} = form_stats_daily.${column} + 1`,
    [userId, formId],
  );
}

/** One more submission today (every accepted submission: pending or, single opt-in, added at once). */
export function countFormSubmission(trx: Knex, userId: number, formId: number): Promise<unknown> {
  return bump(trx, userId, formId, 'submissions');
}

/** One more confirmation today (a pending subscription confirmed). */
export function countFormConfirmation(trx: Knex, userId: number, formId: number): Promise<unknown> {
  return bump(trx, userId, formId, 'confirmations');
}
