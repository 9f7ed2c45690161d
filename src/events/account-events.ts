import type { Knex } from 'knex';
import type { Logger } from '../logger';
import { lockAccountEvents } from './record';
import type { AccountEventType } from './types';

export interface EventDeps {
  db: Knex;
  logger: Logger;
}

/** What an account event carries: the facts shown in its notification mail and in GET /events. */
export type Facts = Record<string, string | number | null>;

/**
 * Records an account event and queues its notification mail for the worker (src/events/outbox.ts):
 * one `outbox_jobs` row naming the account's notification recipients as they are now. The caller
 * (often an API request) does not wait for SMTP. `data` holds the facts and the mail's subject.
 */
export async function recordAccountEvent(
  deps: Pick<EventDeps, 'db'>,
  userId: number,
  type: AccountEventType,
  subject: string,
  facts: Facts,
): Promise<void> {
  await deps.db.transaction(async (trx) => {
    await lockAccountEvents(trx, [userId]);
    const [event] = await trx('events')
      .insert({ user_id: userId, type, data: JSON.stringify({ ...facts, subject: subject.slice(0, 255) }) })
      .returning(['id']);
    // Read, then insert (not INSERT … SELECT): on Citus both statements then run on the account's node.
    const { rows } = await trx.raw(
      `SELECT jsonb_build_object('to', jsonb_agg(jsonb_build_object('name', email_owner, 'email', email_address) ORDER BY id)) AS payload
       FROM notification_recipients WHERE user_id = ?
       HAVING count(*) > 0`,
      [userId],
    );
    if (rows.length) await trx('outbox_jobs').insert({ user_id: userId, kind: 'notification', event_id: event.id, payload: rows[0].payload });
  });
}
