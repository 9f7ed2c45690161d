import type { Ctx } from '../../context';
import { ACCOUNT_EVENT_TYPES } from '../../events/types';
import { notFound1 } from '../../http/errors';
import { listRows, type Paging } from '../../http/pagination';
import { deleteByIds, scoped } from '../shared/crud';
import type { SaveNotificationInput } from './notifications.schemas';

const TABLE = 'notification_recipients';
const COLUMNS = ['id', 'user_id', 'email_address', 'email_owner', 'created_at', 'updated_at'];

export function listNotificationRecipients(ctx: Ctx, paging?: Paging) {
  const base = scoped(ctx, TABLE);
  return listRows(base.clone().select(COLUMNS).orderBy('id', 'desc'), base, paging);
}

/**
 * Adding an address that is already a recipient updates its owner's name instead of adding
 * it twice (addresses compare case-insensitively).
 */
export async function saveNotificationRecipient(ctx: Ctx, input: SaveNotificationInput): Promise<void> {
  await ctx.db.raw(
    `INSERT INTO notification_recipients (user_id, email_address, email_owner)
     VALUES (?, ?, ?)
     ON CONFLICT (user_id, lower(email_address))
     DO UPDATE SET email_owner = EXCLUDED.email_owner, updated_at = now()`,
    [ctx.userId, input.email_address, input.email_owner],
  );
}

export function deleteNotificationRecipients(ctx: Ctx, ids: number[]): Promise<void> {
  return deleteByIds(ctx, TABLE, ids, { notFound: notFound1 });
}

/**
 * The account's events, newest first, in the shape this endpoint always had: the mail's subject
 * and facts from the event, how its mailing went from its notification job (none: nobody to notify).
 */
export function listEvents(ctx: Ctx, paging?: Paging) {
  const base = scoped(ctx, 'events').whereIn('events.type', ACCOUNT_EVENT_TYPES);
  return listRows(
    base
      .clone()
      .leftJoin('outbox_jobs as j', (j) =>
        j.on('j.user_id', 'events.user_id').andOn('j.event_id', 'events.id').andOnVal('j.kind', 'notification'),
      )
      .select(
        'events.id',
        'events.type',
        ctx.db.raw("coalesce(events.data->>'subject', '') AS subject"),
        ctx.db.raw("events.data - 'subject' AS payload"),
        ctx.db.raw('coalesce(j.done_count, 0) AS notified'),
        'j.last_error as notify_error',
        'events.occurred_at as created_at',
      )
      .orderBy('events.id', 'desc'),
    base,
    paging,
  );
}
