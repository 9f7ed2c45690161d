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

export async function claimBatch(db: Knex, limit: number, leaseMs: number): Promise<ClaimedRow[]> {
  const result = await db.raw(
    `WITH picked AS (
       SELECT id FROM deliveries
       WHERE status = 'queued' AND next_attempt_at <= now()
       ORDER BY next_attempt_at, id
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
