import type { Knex } from 'knex';

/**
 * The recipient-row queue in PostgreSQL. Rows are claimed with `FOR UPDATE SKIP LOCKED`, so
 * any number of workers share the work and never take the same row; a claim is a lease
 * (`locked_until`): a row whose worker died is queued again once its lease runs out.
 */
export interface ClaimedRow {
  id: number;
  user_id: number;
  single_send_id: number | null;
  automation_id: number | null;
  automation_schedule_id: number | null;
  email: string;
  token: string;
  data: Record<string, unknown>;
  attempts: number;
}

/**
 * Claims up to `limit` due rows, oldest `next_attempt_at` first, by walking
 * `deliveries_due_index` in order and stopping after `limit` rows: a cost independent of the
 * queue's length. The order is the index's alone (no `id` tie-break: a fan-out chunk shares one
 * timestamp, and sorting by id made PostgreSQL read and sort the whole chunk on every claim).
 *
 * Bitmap scans are switched off for this statement: right after a large fan-out the table's
 * statistics still say "few queued rows" (autovacuum has not analyzed it yet), and the planner
 * then prefers a bitmap scan of *every* queued row plus a sort — measured at 50–120 ms per
 * claim with 100,000 queued rows (the sort spilling to disk), growing with the audience.
 */
export async function claimBatch(db: Knex, limit: number, leaseMs: number): Promise<ClaimedRow[]> {
  return db.transaction(async (trx) => {
    await trx.raw('SET LOCAL enable_bitmapscan = off');
    const result = await trx.raw(
      `WITH picked AS (
         SELECT id FROM deliveries
         WHERE status = 'queued' AND next_attempt_at <= now()
         ORDER BY next_attempt_at
         LIMIT ?
         FOR UPDATE SKIP LOCKED
       )
       UPDATE deliveries d
       SET status = 'sending', attempts = d.attempts + 1, locked_until = now() + (? * interval '1 millisecond')
       FROM picked WHERE d.id = picked.id
       RETURNING d.id, d.user_id, d.single_send_id, d.automation_id, d.automation_schedule_id, d.email, d.token, d.data, d.attempts`,
      [limit, leaseMs],
    );
    return result.rows as ClaimedRow[];
  });
}

/**
 * Rows this worker claimed and never tried (it is stopping): back to the queue as they were,
 * the claim's attempt undone. A row another worker has since taken over is left alone.
 */
export async function releaseClaimed(db: Knex, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.raw(
    `UPDATE deliveries SET status = 'queued', attempts = attempts - 1, locked_until = NULL
     WHERE id = ANY(?::bigint[]) AND status = 'sending'`,
    [ids],
  );
}

/** Rows left `sending` by a worker that died: back to the queue (they may go out again). */
export async function releaseExpiredLeases(db: Knex): Promise<number> {
  const result = await db.raw(
    `UPDATE deliveries SET status = 'queued', locked_until = NULL, next_attempt_at = now()
     WHERE status = 'sending' AND locked_until < now()`,
  );
  return result.rowCount ?? 0;
}

export type Outcome =
  | { id: number; status: 'sent'; messageId: string }
  | { id: number; status: 'bounced' | 'failed'; error: string }
  | { id: number; status: 'queued'; error: string; retryAt: Date };

/** Writes a batch's outcomes in one statement (no per-message round trip). */
export async function recordOutcomes(db: Knex, outcomes: Outcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  const values = outcomes.map((o) => ({
    id: o.id,
    status: o.status,
    message_id: o.status === 'sent' ? o.messageId : null,
    error: o.status === 'sent' ? null : o.error.slice(0, 1000),
    retry_at: o.status === 'queued' ? o.retryAt.toISOString() : null,
  }));
  await db.raw(
    `UPDATE deliveries d SET
       status = v.status,
       sent_at = CASE WHEN v.status = 'sent' THEN now() ELSE d.sent_at END,
       message_id = coalesce(v.message_id, d.message_id),
       last_error = v.error,
       next_attempt_at = coalesce(v.retry_at, d.next_attempt_at),
       locked_until = NULL
     FROM json_to_recordset(?::json) AS v(id bigint, status text, message_id text, error text, retry_at timestamptz)
     WHERE d.id = v.id AND d.status = 'sending'`,
    [JSON.stringify(values)],
  );
}
