import type { Ctx } from '../../context';
import { notFound1 } from '../../http/errors';
import { listRows, type Paging } from '../../http/pagination';
import { unsubscribeGlobally } from '../../suppression';
import { deleteByIds, scoped } from '../shared/crud';

const TABLE = 'global_unsubscribers';
const COLUMNS = ['id', 'user_id', 'unsubscribe_groups_id', 'email_address', 'created_at', 'updated_at'];

export function listGlobalUnsubscribers(ctx: Ctx, paging?: Paging) {
  const base = scoped(ctx, TABLE);
  return listRows(base.clone().select(COLUMNS).orderBy('id', 'desc'), base, paging);
}

/**
 * One statement for the whole list, however long: addresses already suppressed (in any
 * case) are skipped by the unique index on (user_id, lower(email_address)). Ids follow the
 * order given, so the last address of the list is the newest.
 */
export async function addGlobalUnsubscribers(ctx: Ctx, emails: string[]): Promise<void> {
  await unsubscribeGlobally(ctx.db, ctx.userId, emails);
}

export function deleteGlobalUnsubscribers(ctx: Ctx, ids: number[]): Promise<void> {
  return deleteByIds(ctx, TABLE, ids, { notFound: notFound1 });
}
