import type { Knex } from 'knex';
import { recordConsent, type ConsentRecord } from '../../consent/record';
import type { Ctx } from '../../context';
import { prepare, runPrepared } from '../../db/prepared';
import { invalid, notFound1, type FieldErrors } from '../../http/errors';
import { listRows, type Listed, type Paging } from '../../http/pagination';
import { keysetBatches } from '../../http/stream';
import { deleteByIds, scoped } from '../shared/crud';
import type { AddContactInput } from './contacts.schemas';
import { bumpContactsVersion } from './contacts-version';
import { checkCustomValue, customFieldsQuery, loadCustomFields, serializeCustomFields, type CustomField } from './custom-values';
import { ADDRESS_COLUMNS } from '../../contacts/columns';

export interface ContactRow {
  id: number;
  user_id: number;
  contact_type_id: number;
  first_name: string;
  last_name: string;
  email: string;
  alt_email: string | null;
  country_id: number | null;
  country_name: string | null;
  state: string;
  city: string;
  address_line1: string;
  address_line2: string;
  state_province_region: string;
  postal_code: string;
  custom_fields: Record<string, string>;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
  ct_name?: string;
  ct_deleted_at?: string | null;
  ct_created_at?: string;
  ct_updated_at?: string;
}

const COLUMNS = [
  'c.id',
  'c.user_id',
  'c.contact_type_id',
  'c.first_name',
  'c.last_name',
  'c.email',
  'c.alt_email',
  'c.country_id',
  'co.name as country_name',
  ...ADDRESS_COLUMNS.map((a) => `c.${a}`),
  'c.custom_fields',
  'c.deleted_at',
  'c.created_at',
  'c.updated_at',
];
const TYPE_COLUMNS = ['ct.name as ct_name', 'ct.deleted_at as ct_deleted_at', 'ct.created_at as ct_created_at', 'ct.updated_at as ct_updated_at'];

/** The account's live contacts with their country (and, for the list, their contact type). */
export function liveContacts(ctx: Ctx, withType: boolean): Knex.QueryBuilder {
  const q = ctx
    .db('contacts as c')
    .leftJoin('countries as co', 'co.id', 'c.country_id')
    .where('c.user_id', ctx.userId)
    .whereNull('c.deleted_at');
  return withType
    ? q.join('contact_types as ct', (j) => j.on('ct.id', 'c.contact_type_id').andOn('ct.user_id', 'c.user_id')).select([...COLUMNS, ...TYPE_COLUMNS])
    : q.select(COLUMNS);
}

function base(row: ContactRow, fields: CustomField[], country: string) {
  return {
    id: row.id,
    user_id: row.user_id,
    contact_type_id: row.contact_type_id,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    alt_email: row.alt_email,
    country,
    state: row.state,
    city: row.city,
    address_line1: row.address_line1,
    address_line2: row.address_line2,
    state_province_region: row.state_province_region,
    postal_code: row.postal_code,
    custom_field: serializeCustomFields(fields, row.custom_fields),
    deleted_at: row.deleted_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
    fullname: `${row.first_name} ${row.last_name}`.trim(),
  };
}

/** List shape: `country` is the name, plus the `contact_type` object. */
export function listRecord(row: ContactRow, fields: CustomField[]) {
  return {
    ...base(row, fields, row.country_name ?? ''),
    contact_type: {
      id: row.contact_type_id,
      user_id: row.user_id,
      name: row.ct_name,
      deleted_at: row.ct_deleted_at ?? null,
      created_at: row.ct_created_at,
      updated_at: row.ct_updated_at,
    },
  };
}

/** Detail shape: `country` is the country id as a string. */
function detailRecord(row: ContactRow, fields: CustomField[]) {
  return base(row, fields, row.country_id === null ? '' : String(row.country_id));
}

export async function listContactsPage(ctx: Ctx, paging: Paging): Promise<Listed<ReturnType<typeof listRecord>>> {
  const fields = await loadCustomFields(ctx);
  const listed = await listRows<ContactRow>(
    liveContacts(ctx, true).orderBy('c.id', 'desc'),
    scoped(ctx, 'contacts').whereNull('deleted_at'),
    paging,
  );
  return { ...listed, rows: listed.rows.map((r) => listRecord(r, fields)) };
}

/** One keyset batch of the streamed list: live contacts below `before`, newest first. */
export function contactListQuery(ctx: Ctx, limit: number, before?: number): Knex.QueryBuilder {
  const q = liveContacts(ctx, true).orderBy('c.id', 'desc').limit(limit);
  if (before !== undefined) q.where('c.id', '<', before);
  return q;
}

/**
 * The streamed list is what clients poll: its statements are prepared (db/prepared.ts). A
 * list that fits in one batch costs two statements, run together.
 */
const FIRST_BATCH = prepare('contacts_list_first', ['userId', 'limit'], (db, p) => contactListQuery({ userId: p.userId, db }, p.limit));
const NEXT_BATCH = prepare('contacts_list_next', ['userId', 'limit', 'before'], (db, p) => contactListQuery({ userId: p.userId, db }, p.limit, p.before));
const CUSTOM_FIELDS = prepare('custom_fields_of_account', ['userId'], (db, p) => customFieldsQuery({ userId: p.userId, db }));

/** Every live contact, newest first, in keyset batches (for the streamed list). */
export async function contactBatches(ctx: Ctx, batchSize = 5000) {
  const [fields, first] = await Promise.all([
    runPrepared<'userId', CustomField>(ctx.db, CUSTOM_FIELDS, { userId: ctx.userId }),
    runPrepared<'userId' | 'limit', ContactRow>(ctx.db, FIRST_BATCH, { userId: ctx.userId, limit: batchSize }),
  ]);
  return keysetBatches(async (before) => {
    const rows =
      before === undefined ? first : await runPrepared<'userId' | 'limit' | 'before', ContactRow>(ctx.db, NEXT_BATCH, { userId: ctx.userId, limit: batchSize, before });
    return rows.map((r) => listRecord(r, fields));
  }, batchSize);
}

export async function getContact(ctx: Ctx, id: number) {
  const [row, fields] = await Promise.all([liveContacts(ctx, false).where('c.id', id).first(), loadCustomFields(ctx)]);
  if (!row) throw notFound1();
  return detailRecord(row as ContactRow, fields);
}

/**
 * Custom values from `custom_field[<name>]` or a top-level `<name>` field, checked by type.
 * Returns the values to store by field id; '' clears a value. A value sent empty (blank, or
 * null) in either spelling clears it; `blank` names the top-level fields sent so, which the
 * normalised input no longer holds (docs/decisions.md, "Clearing a custom value").
 */
function readCustomValues(fields: CustomField[], input: Record<string, unknown>, errors: FieldErrors, blank: ReadonlySet<string>): Record<string, string> {
  const byName = new Map(fields.map((f) => [f.field_name.toLowerCase(), f]));
  const out: Record<string, string> = {};
  const take = (field: CustomField, raw: unknown, key: string) => {
    // A top-level `<name>` field is not checked by the form schema: it may be nested
    // (`plan[0]=…`, a JSON object), which is no value of a field.
    if (raw !== undefined && raw !== null && typeof raw !== 'string' && typeof raw !== 'number') {
      errors[key] = [`The ${field.field_name.replace(/_/g, ' ')} must be a string.`];
      return;
    }
    const text = String(raw ?? '');
    if (text.trim() === '') {
      out[String(field.id)] = '';
      return;
    }
    const checked = checkCustomValue(field, text);
    if ('error' in checked) errors[key] = [checked.error];
    else out[String(field.id)] = checked.value;
  };
  const map = (input.custom_field ?? {}) as Record<string, unknown>;
  for (const [name, raw] of Object.entries(map)) {
    const field = byName.get(name.toLowerCase());
    if (!field) errors[`custom_field.${name}`] = [`The custom field ${name} does not exist.`];
    else take(field, raw, `custom_field.${name}`);
  }
  for (const field of fields) {
    if (field.field_name in map) continue;
    if (field.field_name in input) take(field, input[field.field_name], field.field_name);
    else if (blank.has(field.field_name)) out[String(field.id)] = '';
  }
  return out;
}

interface Checked {
  fields: CustomField[];
  custom: Record<string, string>;
}

/** The checks that need the database, all reported together like the form rules. */
async function checkContact(ctx: Ctx, input: AddContactInput, blank: ReadonlySet<string>, exceptId?: number): Promise<Checked> {
  const errors: FieldErrors = {};
  const [type, country, fields] = await Promise.all([
    scoped(ctx, 'contact_types').where({ id: input.contact_type_id }).whereNull('deleted_at').first('id'),
    ctx.db('countries').where({ id: input.country }).first('id'),
    loadCustomFields(ctx),
  ]);
  if (!type) errors.contact_type_id = ['The selected contact type id is invalid.'];
  if (!country) errors.country = ['The selected country is invalid.'];
  const custom = readCustomValues(fields, input as Record<string, unknown>, errors, blank);
  if (type) {
    const taken = scoped(ctx, 'contacts')
      .where({ contact_type_id: input.contact_type_id })
      .whereNull('deleted_at')
      .whereRaw('lower(email) = lower(?)', [input.email]);
    if (exceptId) taken.whereNot('id', exceptId);
    if (await taken.first('id')) errors.email = ['The email has already been taken.'];
  }
  if (Object.keys(errors).length) throw invalid(errors);
  return { fields, custom };
}

function columns(input: AddContactInput) {
  return {
    contact_type_id: input.contact_type_id,
    first_name: input.first_name ?? '',
    last_name: input.last_name ?? '',
    email: input.email,
    alt_email: input.alt_email ?? null,
    country_id: input.country,
    ...Object.fromEntries(ADDRESS_COLUMNS.map((a) => [a, input[a] ?? ''])),
  };
}

/** How an API or dashboard add records its consent (src/consent): the source and the key or session that made it (the client address and user agent of a consent are the person's own: a form's). */
export type ContactConsent = Pick<ConsentRecord, 'source' | 'actor'>;

export async function addContact(
  ctx: Ctx,
  input: AddContactInput,
  blank: ReadonlySet<string> = new Set(),
  consent?: ContactConsent,
): Promise<number> {
  const { custom } = await checkContact(ctx, input, blank);
  const stored = Object.fromEntries(Object.entries(custom).filter(([, v]) => v !== ''));
  return ctx.db.transaction(async (trx) => {
    const [row] = await trx('contacts')
      .insert({ user_id: ctx.userId, ...columns(input), custom_fields: JSON.stringify(stored) })
      .returning(['id']);
    await bumpContactsVersion(trx, ctx.userId, [input.contact_type_id]);
    if (consent) {
      await recordConsent(trx, [{ ...consent, userId: ctx.userId, email: input.email, contactTypeId: input.contact_type_id, consentedAt: new Date() }]);
    }
    return row.id as number;
  });
}

/**
 * Replaces the contact's own fields (absent optional ones become empty, as a form submit
 * would); custom values given are set (one sent empty is cleared), the others are kept.
 * `blank`: the top-level fields sent empty (http/form.ts blankFields).
 */
export async function updateContact(ctx: Ctx, id: number, input: AddContactInput, blank: ReadonlySet<string> = new Set()): Promise<void> {
  const existing = await scoped(ctx, 'contacts').where({ id }).whereNull('deleted_at').first('id', 'contact_type_id', 'custom_fields');
  if (!existing) throw notFound1();
  const { custom } = await checkContact(ctx, input, blank, id);
  const merged: Record<string, string> = { ...(existing.custom_fields as Record<string, string>) };
  for (const [k, v] of Object.entries(custom)) {
    if (v === '') delete merged[k];
    else merged[k] = v;
  }
  await ctx.db.transaction(async (trx) => {
    await scoped(ctx, 'contacts', trx)
      .where({ id })
      .update({ ...columns(input), custom_fields: JSON.stringify(merged), updated_at: trx.fn.now() });
    await bumpContactsVersion(trx, ctx.userId, [existing.contact_type_id as number, input.contact_type_id]);
  });
}

/** Soft delete (docs/decisions.md, "Conventions"): the contacts leave their segments and any future sends. */
export function deleteContacts(ctx: Ctx, ids: number[]): Promise<void> {
  return deleteByIds(ctx, 'contacts', ids, {
    notFound: notFound1,
    soft: true,
    after: async (trx, deleted) => {
      const types = (await scoped(ctx, 'contacts', trx).whereIn('id', deleted).distinct().pluck('contact_type_id')) as number[];
      await bumpContactsVersion(trx, ctx.userId, types);
    },
  });
}
