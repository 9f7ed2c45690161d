import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { invalid, notFound1 } from '../../http/errors';
import { listRows, type Listed, type Paging } from '../../http/pagination';
import { prepare, runPrepared } from '../../db/prepared';
import { deleteById, findOrFail, liveRows, scoped } from '../shared/crud';
import { bumpContactsVersion } from '../contacts/contacts-version';
import type { ContactTypeInput } from './contact-types.schemas';

const TABLE = 'contact_types';
const COLUMNS = ['id', 'user_id', 'name', 'deleted_at', 'created_at', 'updated_at'].map((c) => `ct.${c}`);

/**
 * Newest first, each with `contacts_count`: a correlated count per listed type, answered
 * from the (contact_type_id, lower(email)) partial index without loading contacts.
 */
export function contactTypesQuery(ctx: Ctx): Knex.QueryBuilder {
  const count = ctx.db('contacts as c')
    .count('*')
    .whereRaw('c.contact_type_id = ct.id')
    .whereNull('c.deleted_at')
    .as('contacts_count');
  return liveRows(ctx, `${TABLE} as ct`).select([...COLUMNS, count]).orderBy('ct.id', 'desc');
}

/** The whole list (no paging), the one every client polls: a prepared statement (db/prepared.ts). */
const LIST = prepare('contact_types_list', ['userId'], (db, p) => contactTypesQuery({ userId: p.userId, db }));

export async function listContactTypes(ctx: Ctx, paging?: Paging): Promise<Listed<Record<string, unknown>>> {
  if (!paging) return { rows: await runPrepared(ctx.db, LIST, { userId: ctx.userId }) };
  return listRows(contactTypesQuery(ctx), liveRows(ctx, `${TABLE} as ct`), paging);
}

export function getContactType(ctx: Ctx, id: number) {
  return findOrFail(liveRows(ctx, `${TABLE} as ct`).where('ct.id', id).select(COLUMNS), notFound1);
}

/** Names are unique per account among live types, compared case-insensitively. */
async function assertNameFree(trx: Knex.Transaction, ctx: Ctx, name: string, exceptId?: number): Promise<void> {
  const taken = liveRows(ctx, `${TABLE} as ct`, trx).whereRaw('lower(ct.name) = lower(?)', [name]);
  if (exceptId) taken.whereNot('ct.id', exceptId);
  if (await taken.first('ct.id')) throw invalid({ name: ['The name has already been taken.'] });
}

export function addContactType(ctx: Ctx, input: ContactTypeInput): Promise<number> {
  return ctx.db.transaction(async (trx) => {
    await assertNameFree(trx, ctx, input.name);
    const [row] = await trx(TABLE).insert({ user_id: ctx.userId, name: input.name }).returning(['id']);
    return row.id as number;
  });
}

export function updateContactType(ctx: Ctx, id: number, input: ContactTypeInput): Promise<void> {
  return ctx.db.transaction(async (trx) => {
    await findOrFail(liveRows(ctx, `${TABLE} as ct`, trx).where('ct.id', id).forUpdate().select('ct.id'), notFound1);
    await assertNameFree(trx, ctx, input.name, id);
    await scoped(ctx, TABLE, trx).where({ id }).update({ name: input.name, updated_at: trx.fn.now() });
  });
}

/** Soft delete (docs/decisions.md, "Conventions"); the type's contacts and segments go with it, in the same transaction. */
export function deleteContactType(ctx: Ctx, id: number): Promise<void> {
  return deleteById(ctx, TABLE, id, {
    notFound: notFound1,
    soft: true,
    after: async (trx, ids) => {
      await scoped(ctx, 'contacts', trx)
        .whereIn('contact_type_id', ids)
        .whereNull('deleted_at')
        .update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
      await bumpContactsVersion(trx, ctx.userId, ids);
      // Segments over a deleted type have nothing left to select.
      await scoped(ctx, 'segments', trx)
        .whereIn('contact_type_id', ids)
        .whereNull('deleted_at')
        .update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
    },
  });
}
