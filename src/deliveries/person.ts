import type { Knex } from 'knex';
import { DeliveryStatus } from '../states';

/**
 * One address's recipient rows (issue 35: a person's export and erasure), matched by the
 * lower-cased address within one account.
 */
const ROW_COLUMNS = [
  'id', 'single_send_id', 'automation_id', 'automation_schedule_id', 'contact_id', 'email', 'status', 'attempts',
  'message_id', 'last_error', 'data', 'created_at', 'sent_at', 'opened_at', 'open_count', 'clicked_at', 'unsubscribed_at',
];

/** The address's recipient rows, oldest first, at most `limit` (the export's cap). */
export async function recipientRowsOf(db: Knex, userId: number, email: string, limit: number): Promise<Array<Record<string, unknown>>> {
  return (await db('deliveries')
    .where('user_id', userId)
    .whereRaw('lower(email) = lower(?)', [email])
    .orderBy('id')
    .limit(limit)
    .select(ROW_COLUMNS)) as Array<Record<string, unknown>>;
}

export interface ErasedRows {
  ids: number[];
  /** Per single send, the rows removed before they had an outcome (queued, sending or held). */
  unsent: Array<{ singleSendId: number; n: number }>;
}

const UNSENT: string[] = [DeliveryStatus.Queued, DeliveryStatus.Sending, DeliveryStatus.Held];

/**
 * Deletes the address's recipient rows (erasure): queued ones of a running send are not sent;
 * a row a worker is sending just then may still go out, and its outcome finds no row.
 */
export async function eraseRecipientRows(trx: Knex, userId: number, email: string): Promise<ErasedRows> {
  const { rows } = await trx.raw(
    'DELETE FROM deliveries WHERE user_id = ? AND lower(email) = lower(?) RETURNING id, single_send_id, status',
    [userId, email],
  );
  const unsent = new Map<number, number>();
  for (const r of rows as Array<{ id: number; single_send_id: number | null; status: string }>) {
    if (r.single_send_id !== null && UNSENT.includes(r.status)) unsent.set(r.single_send_id, (unsent.get(r.single_send_id) ?? 0) + 1);
  }
  return {
    ids: (rows as Array<{ id: number }>).map((r) => Number(r.id)),
    unsent: [...unsent].map(([singleSendId, n]) => ({ singleSendId, n })),
  };
}
