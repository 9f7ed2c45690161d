import { randomInt } from 'node:crypto';
import type { Ctx } from '../../context';
import { unsubscribeFromGroup } from '../../suppression';
import { invalid, notFound1 } from '../../http/errors';
import { listRows, type Paging } from '../../http/pagination';
import { deleteByIds, findOrFail, liveRows, scoped } from '../shared/crud';
import type { GroupRecord, ManuallyAddInput, SaveGroupInput } from './unsubscribe-groups.schemas';

const GROUPS = 'unsubscribe_groups';
const RECIPIENTS = 'unsubscribe_group_recipients';
const GROUP_COLUMNS = ['id', 'user_id', 'rand_id', 'group_name', 'description', 'is_display', 'created_at', 'updated_at'].map(
  (c) => `${GROUPS}.${c}`,
);
const RECIPIENT_COLUMNS = ['id', 'user_id', 'unsubscribe_groups_id', 'email_address', 'created_at', 'updated_at'].map(
  (c) => `${RECIPIENTS}.${c}`,
);
const RAND_ID_DIGITS = 10;
const RAND_ID_CONSTRAINT = 'unsubscribe_groups_rand_id_unique';

/**
 * The account's groups that are not deleted. A deleted group keeps its row (old emails'
 * unsubscribe pages still resolve it) but is gone from everything the API shows.
 */
function randomDigits(n: number): string {
  let out = '';
  for (let i = 0; i < n; i += 1) out += String(randomInt(10));
  return out;
}

function isRandIdClash(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && e.constraint === RAND_ID_CONSTRAINT;
}

/** Newest first, each with its recipient count counted in SQL (only for the rows returned). */
export function listGroups(ctx: Ctx, paging?: Paging) {
  const base = liveRows(ctx, GROUPS);
  const count = ctx.db.raw(
    `(SELECT count(*)::int FROM ${RECIPIENTS} r WHERE r.unsubscribe_groups_id = ${GROUPS}.id AND r.user_id = ?) AS unsubscribe_clients_count`,
    [ctx.userId],
  );
  return listRows(base.clone().select([...GROUP_COLUMNS, count]).orderBy(`${GROUPS}.id`, 'desc'), base, paging);
}

/** `rand_id` is unique across accounts; a clash (1 in 10^10 per pair) just draws again. */
export async function saveGroup(ctx: Ctx, input: SaveGroupInput): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await ctx.db(GROUPS).insert({ user_id: ctx.userId, rand_id: randomDigits(RAND_ID_DIGITS), ...input });
      return;
    } catch (err) {
      if (attempt < 5 && isRandIdClash(err)) continue;
      throw err;
    }
  }
}

export function findGroup(ctx: Ctx, id: number): Promise<GroupRecord> {
  return findOrFail<GroupRecord>(liveRows(ctx, GROUPS).where(`${GROUPS}.id`, id).select(GROUP_COLUMNS), notFound1);
}

export async function updateGroup(ctx: Ctx, id: number, input: SaveGroupInput): Promise<void> {
  const changed = await liveRows(ctx, GROUPS)
    .where(`${GROUPS}.id`, id)
    .update({ ...input, updated_at: ctx.db.fn.now() });
  if (!changed) throw notFound1();
}

/** Soft delete (Herald extension): the row and its recipients stay for old emails' pages. */
export function deleteGroup(ctx: Ctx, id: number): Promise<void> {
  return deleteByIds(ctx, GROUPS, [id], { notFound: notFound1, soft: true });
}

/**
 * Adds the addresses to a live group of the account in one statement; addresses already in
 * the group (in any case) are skipped by its unique index. The group row is share-locked so
 * a concurrent delete cannot slip between the check and the insert.
 */
export async function addRecipients(ctx: Ctx, input: ManuallyAddInput): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const group = await liveRows(ctx, GROUPS, trx).where(`${GROUPS}.id`, input.unsubscribe_groups_id).forShare().first(`${GROUPS}.id`);
    if (!group) throw invalid({ unsubscribe_groups_id: ['The selected unsubscribe groups id is invalid.'] });
    await unsubscribeFromGroup(trx, ctx.userId, group.id, input.email_address);
  });
}

/** A live group's recipients, newest first; an unknown or deleted group is not found. */
export async function listRecipients(ctx: Ctx, groupId: number, paging?: Paging) {
  await findOrFail(liveRows(ctx, GROUPS).where(`${GROUPS}.id`, groupId).select(`${GROUPS}.id`), notFound1);
  const base = scoped(ctx, RECIPIENTS).where(`${RECIPIENTS}.unsubscribe_groups_id`, groupId);
  return listRows(base.clone().select(RECIPIENT_COLUMNS).orderBy(`${RECIPIENTS}.id`, 'desc'), base, paging);
}

/**
 * All or nothing, like every bulk delete: each id must be a recipient of a live group of
 * the account (recipients of a deleted group are not shown, so they are not found either).
 */
export async function deleteRecipients(ctx: Ctx, ids: number[]): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const found = await scoped(ctx, RECIPIENTS, trx)
      .whereIn(`${RECIPIENTS}.id`, ids)
      .whereExists(liveRows(ctx, GROUPS, trx).select(trx.raw('1')).whereRaw(`${GROUPS}.id = ${RECIPIENTS}.unsubscribe_groups_id`))
      .forUpdate()
      .pluck(`${RECIPIENTS}.id`);
    if (found.length !== ids.length) throw notFound1();
    await scoped(ctx, RECIPIENTS, trx).whereIn(`${RECIPIENTS}.id`, ids).delete();
  });
}
