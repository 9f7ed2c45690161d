import type { Ctx } from '../../context';
import { invalid, notFound1 } from '../../http/errors';
import { listRows, type Paging } from '../../http/pagination';
import { deleteById, scoped } from '../shared/crud';
import { bumpContactsVersion } from '../contacts/contacts-version';
import { accountFields } from '../../contacts/fields';
import type { SaveCustomFieldInput } from './fields.schemas';

const COLUMNS = ['id', 'user_id', 'field_name', 'field_type', 'is_reserved', 'created_at', 'updated_at'];

/** The global reserved fields, in their fixed order (ids 1–11). */
export function listReservedFields(ctx: Ctx, paging?: Paging) {
  const base = accountFields(ctx, 'reserved');
  return listRows(base.clone().select(COLUMNS).orderBy('id'), base, paging);
}

/** The account's custom fields, newest first like every other list. */
export function listCustomFields(ctx: Ctx, paging?: Paging) {
  const base = scoped(ctx, 'fields');
  return listRows(base.clone().select(COLUMNS).orderBy('id', 'desc'), base, paging);
}

/** Names are unique per account, case-insensitively (the unique index catches races). */
export async function saveCustomField(ctx: Ctx, input: SaveCustomFieldInput): Promise<number> {
  const taken = await scoped(ctx, 'custom_fields').whereRaw('lower(field_name) = lower(?)', [input.field_name]).first('id');
  if (taken) throw invalid({ field_name: ['The field name has already been taken.'] });
  const [row] = await ctx
    .db('custom_fields')
    .insert({ user_id: ctx.userId, field_name: input.field_name, field_type: input.field_type })
    .returning(['id']);
  return row.id as number;
}

/**
 * Deletes a custom field and, in the same transaction, its values from the account's
 * contacts (stored by field id in `contacts.custom_fields`).
 */
export function deleteCustomField(ctx: Ctx, id: number): Promise<void> {
  return deleteById(ctx, 'custom_fields', id, {
    notFound: notFound1,
    after: async (trx, ids) => {
      for (const fieldId of ids) {
        await scoped(ctx, 'contacts', trx)
          .whereRaw('custom_fields \\? ?', [String(fieldId)])
          .update({ custom_fields: trx.raw('custom_fields - ?', [String(fieldId)]) });
      }
      await bumpContactsVersion(trx, ctx.userId);
    },
  });
}
