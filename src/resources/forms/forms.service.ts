import type { Knex } from 'knex';
import type { Config } from '../../config';
import type { Ctx } from '../../context';
import { secret } from '../../db/secrets';
import { DEFAULT_CONFIRMATION_SUBJECT, FORM_RESERVED_FIELDS, loadPublicForm, type Captcha, type StoredFormField } from '../../forms/forms';
import { pendingByDay } from '../../forms/pending';
import { formPublicId } from '../../forms/public-id';
import { formUsage } from '../../forms/snippet';
import { statsByDay } from '../../forms/stats';
import { invalid, notFound1, type FieldErrors } from '../../http/errors';
import { listRows, type Paging } from '../../http/pagination';
import { SenderVerification } from '../../states';
import { findVerifiedSender } from '../senders/senders.service';
import { findOrFail, liveRows } from '../shared/crud';
import type { FormRecord, FormStats, SaveFormInput } from './forms.schemas';

/**
 * An account's signup forms (issue 35; src/forms has what the public endpoint reads). A save
 * and an update take the whole form; what names other records (lists, fields, the sender) is
 * checked against the account's live rows here, and the row keeps ids.
 */
const TABLE = 'forms';
const LIST_COLUMNS = ['id', 'name', 'contact_type_ids', 'double_opt_in', 'captcha', 'created_at', 'updated_at'].map((c) => `${TABLE}.${c}`);
const COLUMNS = [...LIST_COLUMNS, ...['fields', 'consent_text', 'success_url', 'confirm_url', 'confirmation_subject', 'confirmation_sender_id'].map((c) => `${TABLE}.${c}`)];

export const EMAIL_REQUIRED = 'The email field of a form is always required.';
export const NOT_ON_FORMS = 'The :attribute cannot be shown on a form.';
export const SENDER_REQUIRED = 'The confirmation sender id field is required when double opt in is 1.';
export const SENDER_MISSING = 'The selected confirmation sender id is invalid.';
export const SENDER_UNVERIFIED = 'The selected confirmation sender id is not verified.';
export const LIST_MISSING = 'The selected contact type ids is invalid.';
const FIELD_MISSING = 'The selected :attribute is invalid.';
const FIELD_TWICE = 'The :attribute field has a duplicate value.';

interface FormRow {
  id: number;
  name: string;
  contact_type_ids: number[];
  double_opt_in: 0 | 1;
  captcha: Captcha;
  created_at: string;
  updated_at: string;
  fields: StoredFormField[];
  consent_text: string;
  success_url: string | null;
  confirm_url: string | null;
  confirmation_subject: string;
  confirmation_sender_id: number | null;
}

export interface SavedForm {
  id: number;
  public_id: string;
}

const attribute = (path: string) => path.replace(/_/g, ' ');

/** The form's fields as ids, email first when the input leaves it out; VAL for names the account does not have. */
async function resolveFields(ctx: Ctx, input: SaveFormInput, errors: FieldErrors, db: Knex): Promise<StoredFormField[]> {
  const names = input.fields.map((f) => f.field_name.toLowerCase());
  const r = await db.raw(
    `SELECT id, field_name, 1 AS is_reserved FROM reserved_fields WHERE lower(field_name) = ANY(?::text[])
     UNION ALL
     SELECT id, field_name, 0 AS is_reserved FROM custom_fields WHERE user_id = ? AND lower(field_name) = ANY(?::text[])`,
    [names, ctx.userId, names],
  );
  const byName = new Map((r.rows as Array<{ id: number; field_name: string; is_reserved: number }>).map((f) => [f.field_name.toLowerCase(), f]));
  const out: StoredFormField[] = [];
  const seen = new Set<number>();
  input.fields.forEach((f, i) => {
    const key = `fields.${i}.field_name`;
    const found = byName.get(f.field_name.toLowerCase());
    if (!found) {
      errors[key] = [FIELD_MISSING.replace(':attribute', attribute(key))];
      return;
    }
    if (Number(found.is_reserved) && !(FORM_RESERVED_FIELDS as readonly string[]).includes(found.field_name)) {
      errors[key] = [NOT_ON_FORMS.replace(':attribute', attribute(key))];
      return;
    }
    if (seen.has(found.id)) {
      errors[key] = [FIELD_TWICE.replace(':attribute', attribute(key))];
      return;
    }
    seen.add(found.id);
    const isEmail = Number(found.is_reserved) === 1 && found.field_name === 'email';
    if (isEmail && f.required === 0) errors[`fields.${i}.required`] = [EMAIL_REQUIRED];
    out.push({ field_id: found.id, required: isEmail ? 1 : (f.required ?? 0), label: f.label ?? '' });
  });
  const email = (await db('reserved_fields').where('field_name', 'email').first('id')) as { id: number };
  if (!seen.has(email.id)) out.unshift({ field_id: email.id, required: 1, label: '' });
  return out;
}

/** The row a valid input makes; VAL (every message at once) when it names what the account does not have. */
async function formColumns(ctx: Ctx, input: SaveFormInput, db: Knex) {
  const errors: FieldErrors = {};
  const lists = [...new Set(input.contact_type_ids)];
  const live = await liveRows(ctx, 'contact_types', db).whereIn('contact_types.id', lists).pluck('contact_types.id');
  if (live.length !== lists.length) errors.contact_type_ids = [LIST_MISSING];
  const fields = await resolveFields(ctx, input, errors, db);
  const doubleOptIn = input.double_opt_in ?? 1;
  if (input.confirmation_sender_id !== undefined) {
    const sender = await findVerifiedSender(ctx, input.confirmation_sender_id, { db });
    if (sender === 'missing') errors.confirmation_sender_id = [SENDER_MISSING];
    else if (sender === 'unverified') errors.confirmation_sender_id = [SENDER_UNVERIFIED];
  } else if (doubleOptIn === 1) {
    errors.confirmation_sender_id = [SENDER_REQUIRED];
  }
  if (Object.keys(errors).length) throw invalid(errors);
  return {
    name: input.name,
    contact_type_ids: lists,
    fields: JSON.stringify(fields),
    double_opt_in: doubleOptIn,
    consent_text: input.consent_text,
    success_url: input.success_url ?? null,
    confirm_url: input.confirm_url ?? null,
    confirmation_subject: input.confirmation_subject ?? DEFAULT_CONFIRMATION_SUBJECT,
    confirmation_sender_id: input.confirmation_sender_id ?? null,
    captcha: input.captcha ?? 'none',
  };
}

async function publicIdOf(ctx: Ctx, formId: number): Promise<string> {
  return formPublicId(await secret(ctx.db, 'tracking'), { userId: ctx.userId, formId });
}

export async function saveForm(ctx: Ctx, input: SaveFormInput): Promise<SavedForm> {
  const columns = await formColumns(ctx, input, ctx.db);
  const [{ id }] = (await ctx.db(TABLE).insert({ user_id: ctx.userId, ...columns }).returning('id')) as Array<{ id: number }>;
  return { id, public_id: await publicIdOf(ctx, id) };
}

/** Replaces the whole form (absent optional fields take their defaults again); its public id stays. */
export async function updateForm(ctx: Ctx, id: number, input: SaveFormInput): Promise<SavedForm> {
  await ctx.db.transaction(async (trx) => {
    await findOrFail(liveRows(ctx, TABLE, trx).where(`${TABLE}.id`, id).forUpdate().select(`${TABLE}.id`), notFound1);
    const columns = await formColumns(ctx, input, trx);
    await liveRows(ctx, TABLE, trx).where(`${TABLE}.id`, id).update({ ...columns, updated_at: trx.fn.now() });
  });
  return { id, public_id: await publicIdOf(ctx, id) };
}

export async function listForms(ctx: Ctx, paging?: Paging) {
  const base = liveRows(ctx, TABLE);
  const key = await secret(ctx.db, 'tracking');
  const page = await listRows(base.clone().select(LIST_COLUMNS).orderBy(`${TABLE}.id`, 'desc'), base, paging);
  return {
    ...page,
    rows: (page.rows as FormRow[]).map((r) => ({ ...listRecord(r), public_id: formPublicId(key, { userId: ctx.userId, formId: r.id }) })),
  };
}

function listRecord(r: FormRow) {
  return {
    id: r.id,
    name: r.name,
    contact_type_ids: r.contact_type_ids,
    double_opt_in: r.double_opt_in,
    captcha: r.captcha,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** One form with its fields as shown and the three ways to use it (hosted page, JSON endpoint, HTML snippet). */
export async function findForm(ctx: Ctx, config: Config, id: number): Promise<FormRecord> {
  const row = await findOrFail<FormRow>(liveRows(ctx, TABLE).where(`${TABLE}.id`, id).select(COLUMNS), notFound1);
  const form = await loadPublicForm(ctx.db, { userId: ctx.userId, formId: id });
  if (!form) throw notFound1();
  const usage = formUsage(form, config.publicUrl);
  return {
    ...listRecord(row),
    public_id: form.id,
    fields: form.fields.map((f) => ({
      field_id: f.fieldId,
      field_name: f.name,
      is_reserved: f.kind === 'reserved' ? 1 : 0,
      label: f.label,
      required: f.required ? 1 : 0,
      input_name: f.inputName,
    })),
    consent_text: row.consent_text,
    success_url: row.success_url,
    confirm_url: row.confirm_url,
    confirmation_subject: row.confirmation_subject,
    confirmation_sender_id: row.confirmation_sender_id,
    hosted_url: usage.hostedUrl,
    json_url: usage.jsonUrl,
    html_snippet: usage.snippet,
  };
}

/**
 * Soft delete: its statistics and the consent records naming it keep their meaning, its public
 * id answers not found. Its pending (unconfirmed) subscriptions go in the same transaction: nobody
 * is mailed or added through a form the account removed; their links then find nothing.
 */
export async function deleteForm(ctx: Ctx, id: number): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    await findOrFail(liveRows(ctx, TABLE, trx).where(`${TABLE}.id`, id).forUpdate().select(`${TABLE}.id`), notFound1);
    await liveRows(ctx, TABLE, trx).where(`${TABLE}.id`, id).update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
    await trx('pending_subscriptions').where({ user_id: ctx.userId, form_id: id }).whereNull('confirmed_at').delete();
  });
}

const DAY_MS = 86_400_000;
const rate = (confirmations: number, submissions: number) => (submissions ? Math.round((confirmations / submissions) * 10_000) / 10_000 : null);

/**
 * Submissions and confirmations by UTC day (form_stats_daily, its slots summed: statsByDay), and the day's submissions still
 * pending (pending_subscriptions), for the last `days` days ending today, every day listed
 * (zeros included), oldest first.
 */
export async function formStats(ctx: Ctx, id: number, days = 30): Promise<FormStats> {
  await findOrFail(liveRows(ctx, TABLE).where(`${TABLE}.id`, id).select(`${TABLE}.id`), notFound1);
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const since = new Date(today - (days - 1) * DAY_MS);
  const until = new Date(today + DAY_MS);
  const [counted, pending] = await Promise.all([
    statsByDay(ctx.db, ctx.userId, id, since.toISOString().slice(0, 10)),
    pendingByDay(ctx.db, ctx.userId, id, since, until),
  ]);
  const byDay = new Map(counted.map((r) => [r.day, r]));
  const pendingOn = new Map(pending.map((r) => [r.day, Number(r.pending)]));
  const out: FormStats['days'] = [];
  const totals = { submissions: 0, confirmations: 0, pending: 0 };
  for (let t = since.getTime(); t < until.getTime(); t += DAY_MS) {
    const day = new Date(t).toISOString().slice(0, 10);
    const submissions = byDay.get(day)?.submissions ?? 0;
    const confirmations = byDay.get(day)?.confirmations ?? 0;
    const waiting = pendingOn.get(day) ?? 0;
    totals.submissions += submissions;
    totals.confirmations += confirmations;
    totals.pending += waiting;
    out.push({ day, submissions, confirmations, confirmation_rate: rate(confirmations, submissions), pending: waiting });
  }
  return { form_id: id, days: out, totals: { ...totals, confirmation_rate: rate(totals.confirmations, totals.submissions) } };
}

export interface FormChoices {
  lists: Array<{ id: number; name: string }>;
  senders: Array<{ id: number; label: string }>;
  /** The fields a form may show: the reserved ones forms offer, then the account's custom fields. */
  fields: Array<{ name: string; is_reserved: boolean }>;
}

/** What the dashboard's form offers: the account's live lists, verified senders and fields. */
export async function formChoices(ctx: Ctx): Promise<FormChoices> {
  const [lists, senders, custom] = await Promise.all([
    liveRows(ctx, 'contact_types').orderBy('contact_types.name').select('contact_types.id', 'contact_types.name') as Promise<FormChoices['lists']>,
    liveRows(ctx, 'senders')
      .where('senders.is_verified', SenderVerification.Verified)
      .orderBy('senders.id', 'desc')
      .select('senders.id', 'senders.nickname', 'senders.from_email') as Promise<Array<{ id: number; nickname: string; from_email: string }>>,
    ctx.db('custom_fields').where('user_id', ctx.userId).orderBy('field_name').pluck('field_name') as Promise<string[]>,
  ]);
  return {
    lists,
    senders: senders.map((s) => ({ id: s.id, label: `${s.nickname} <${s.from_email}>` })),
    fields: [...FORM_RESERVED_FIELDS.map((name) => ({ name, is_reserved: true })), ...custom.map((name) => ({ name, is_reserved: false }))],
  };
}
