import type { Knex } from 'knex';
import { ACCOUNT_EVENT_TYPES } from './types';

/**
 * One address's events (issue 35: a person's export and erasure): the message events of its
 * recipient rows or its address (events keep addresses lower-cased: one probe of
 * events_email_index), and the account events whose facts name it (a confirmation, say).
 */
function ofAddress(q: Knex.QueryBuilder, userId: number, email: string, deliveryIds: number[]): Knex.QueryBuilder {
  return q.where('user_id', userId).andWhere((w) => {
    w.whereRaw('email = lower(?)', [email])
      .orWhereIn('delivery_id', deliveryIds)
      .orWhere((a) => a.whereIn('type', [...ACCOUNT_EVENT_TYPES]).whereRaw('strpos(lower(data::text), lower(?)) > 0', [email]));
  });
}

/** The address's events, oldest first, at most `limit` (the export's cap). */
export async function eventsOfAddress(db: Knex, userId: number, email: string, deliveryIds: number[], limit: number): Promise<Array<Record<string, unknown>>> {
  return (await ofAddress(db('events'), userId, email, deliveryIds)
    .orderBy('id')
    .limit(limit)
    .select('id', 'type', 'email', 'single_send_id', 'automation_id', 'delivery_id', 'occurred_at', 'data')) as Array<Record<string, unknown>>;
}

/** Deletes the address's events (erasure). Returns how many went. */
export async function eraseEventsOf(trx: Knex, userId: number, email: string, deliveryIds: number[]): Promise<number> {
  return ofAddress(trx('events'), userId, email, deliveryIds).delete();
}
