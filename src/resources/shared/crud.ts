import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import type { NotFound } from '../../http/errors';
import { isUtr, MAX_INT } from '../../http/fields';

/** The account's rows of a tenant table: every service query starts here. */
export function scoped(ctx: Ctx, table: string, db: Knex = ctx.db): Knex.QueryBuilder {
  return db(table).where(`${table}.user_id`, ctx.userId);
}

/**
 * The account's rows of a soft-deleting table that are not deleted (docs/decisions.md,
 * "Conventions": soft delete). `table` may carry an alias, e.g. `'single_sends as s'`.
 */
export function liveRows(ctx: Ctx, table: string, db: Knex = ctx.db): Knex.QueryBuilder {
  const name = table.split(/\s+as\s+/i).pop()!;
  return db(table).where(`${name}.user_id`, ctx.userId).whereNull(`${name}.deleted_at`);
}

export interface DeleteOptions {
  notFound: NotFound;
  /** Tables with `deleted_at` keep their rows (docs/decisions.md, "Conventions": soft delete). */
  soft?: boolean;
  /** Extra work in the same transaction (e.g. cascading a soft delete). */
  after?: (trx: Knex.Transaction, ids: number[]) => Promise<void>;
}

/** Parses bulk ids; anything that cannot be one of our integer ids means "not found". */
export function parseIds(values: unknown[], notFound: NotFound): number[] {
  const ids = new Set<number>();
  for (const v of values) {
    const s = String(v).trim();
    if (!/^\d{1,10}$/.test(s) || Number(s) < 1 || Number(s) > MAX_INT) throw notFound();
    ids.add(Number(s));
  }
  if (ids.size === 0) throw notFound();
  return [...ids];
}

/**
 * Deletes the account's records with these ids, all or nothing: if any id is not a live
 * record of this account, nothing changes and the route answers not found.
 */
export async function deleteByIds(ctx: Ctx, table: string, ids: number[], opts: DeleteOptions): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const found = await (opts.soft ? liveRows(ctx, table, trx) : scoped(ctx, table, trx)).whereIn(`${table}.id`, ids)
      .forUpdate()
      .pluck(`${table}.id`);
    if (found.length !== ids.length) throw opts.notFound();
    const target = scoped(ctx, table, trx).whereIn('id', ids);
    if (opts.soft) await target.update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
    else await target.delete();
    if (opts.after) await opts.after(trx, ids);
  });
}

export function deleteById(ctx: Ctx, table: string, id: number, opts: DeleteOptions): Promise<void> {
  return deleteByIds(ctx, table, [id], opts);
}

/** One live record of the account, or the route's not-found error. */
export async function findOrFail<T>(
  qb: Knex.QueryBuilder,
  notFound: NotFound,
): Promise<T> {
  const row = (await qb.first()) as T | undefined;
  if (!row) throw notFound();
  return row;
}

/**
 * Locks the live records named by bulk-delete keys that may be ids or utrs (spec rule 8
 * leaves the kind open, so both are accepted) and returns their ids. All or nothing: a key
 * that names no live record of the account answers `notFound`.
 */
export function lockByKeys(ctx: Ctx, trx: Knex.Transaction, table: string, keys: string[], notFound: NotFound): Promise<number[]> {
  return lockKeysWith(keys, notFound, async (ids, utrs) =>
    (await scoped(ctx, table, trx)
      .whereNull(`${table}.deleted_at`)
      .where((q) => q.whereIn(`${table}.id`, ids).orWhereIn(`${table}.utr`, utrs))
      .forUpdate()
      .select(`${table}.id`, `${table}.utr`)) as Array<{ id: number; utr: string }>,
  );
}

/** lockByKeys with the lock taken by `lock` (a table's owner locks its own rows: src/single-sends). */
export async function lockKeysWith(
  keys: string[],
  notFound: NotFound,
  lock: (ids: number[], utrs: string[]) => Promise<Array<{ id: number; utr: string }>>,
): Promise<number[]> {
  const ids = keys.filter((k) => /^\d{1,10}$/.test(k) && Number(k) <= MAX_INT).map(Number);
  const utrs = keys.filter(isUtr).map((k) => k.toLowerCase());
  if (keys.length === 0 || ids.length + utrs.length !== keys.length) throw notFound();
  const found = await lock(ids, utrs);
  const named = (k: string) => found.some((f) => String(f.id) === k || f.utr === k.toLowerCase());
  if (!keys.every(named)) throw notFound();
  return found.map((f) => f.id);
}
