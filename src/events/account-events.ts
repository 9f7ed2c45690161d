import type { Knex } from 'knex';
import type { Logger } from '../logger';
import { queueNotice } from './notification-mail';
import { lockAccountEvents } from './record';
import type { AccountEventType } from './types';

export interface EventDeps {
  db: Knex;
  logger: Logger;
}

/** What an account event carries: the facts shown in its notification mail and in GET /events. */
export type Facts = Record<string, string | number | null>;

/** The single send or automation an account event is about, kept in the event's own columns. */
export interface AccountEventOf {
  singleSendId?: number;
  automationId?: number;
}

/**
 * Records an account event and queues its notification mail for the worker (src/events/notification-mail.ts):
 * one `outbox_jobs` row naming the account's notification recipients as they are now. The caller
 * (often an API request) does not wait for SMTP. `data` holds the facts and the mail's subject;
 * `of` the send or automation it is about, so `GET /events?single_send_utr=` (and webhooks'
 * `single_send_utr`) find it like the send's message events.
 */
export async function recordAccountEvent(
  deps: Pick<EventDeps, 'db'>,
  userId: number,
  type: AccountEventType,
  subject: string,
  facts: Facts,
  of: AccountEventOf = {},
  /** `email`: the address the event is about (its column, so an erasure finds it); `notify: false`: no notification mail. */
  opts: { email?: string; notify?: boolean } = {},
): Promise<void> {
  await deps.db.transaction(async (trx) => {
    await lockAccountEvents(trx, [userId]);
    const [event] = await trx('events')
      .insert({
        user_id: userId,
        type,
        single_send_id: of.singleSendId ?? null,
        automation_id: of.automationId ?? null,
        ...(opts.email ? { email: opts.email.toLowerCase() } : {}),
        data: JSON.stringify({ ...facts, subject: subject.slice(0, 255) }),
      })
      .returning(['id']);
    if (opts.notify !== false) await queueNotice(trx, userId, event.id);
  });
}
