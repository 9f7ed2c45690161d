import type { Ctx } from '../../context';
import { accountEventsWithNotice } from '../../events/reads';
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
     DO UPDATE SET email_owner = EXCLUDED.email_owner, updated_at = EXCLUDED.updated_at`,
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
  const { rows, all } = accountEventsWithNotice(ctx.db, ctx.userId);
  return listRows(rows, all, paging);
}
