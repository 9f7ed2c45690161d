import type { Knex } from 'knex';
import { onCitus } from '../db/per-account';
import { runPrepared } from '../db/prepared';
import { secret } from '../db/secrets';
import { SenderVerification } from '../states';
import { formPublicId, type FormRef } from './public-id';

/**
 * A signup form as the public endpoint (`/subscribe/<public id>`) shows and applies it (issue 35).
 * The API that writes forms is src/resources/forms; this module is what the public pages, the
 * confirmation mail and the statistics read, below resources (eslint.config.js LAYERS).
 */
export const CAPTCHAS = ['none', 'proof_of_work'] as const;
export type Captcha = (typeof CAPTCHAS)[number];

/** The subject of the confirmation mail when the form names none. */
export const DEFAULT_CONFIRMATION_SUBJECT = 'Please confirm your subscription';

/** Reserved fields a form may show: the contact's text columns (email always; alt_email and country are not offered). */
export const FORM_RESERVED_FIELDS = [
  'email',
  'first_name',
  'last_name',
  'state',
  'city',
  'address_line1',
  'address_line2',
  'state_province_region',
  'postal_code',
] as const;

/** A field as stored in `forms.fields`. */
export interface StoredFormField {
  field_id: number;
  required: 0 | 1;
  label: string;
}

export interface PublicFormField {
  /** The id in the `fields` view (reserved fields 1–11, custom fields above). */
  fieldId: number;
  /** The field's name: a reserved column (`email`, `first_name`, …) or the custom field's name. */
  name: string;
  kind: 'reserved' | 'custom';
  type: 'text' | 'number' | 'datetime-local';
  label: string;
  required: boolean;
  /** The name of its input in the HTML form: the reserved column's name, or `custom_field[<name>]`. */
  inputName: string;
}

export interface PublicFormSender {
  id: number;
  fromName: string;
  fromEmail: string;
  replyTo: string;
}

export interface PublicForm {
  /** The public id (src/forms/public-id.ts). */
  id: string;
  userId: number;
  formId: number;
  name: string;
  /** The lists it subscribes to, live ones only, in the order the form names them. */
  lists: Array<{ id: number; name: string }>;
  /** In the form's order; `email` is always among them, required. */
  fields: PublicFormField[];
  doubleOptIn: boolean;
  consentText: string;
  successUrl: string | null;
  confirmUrl: string | null;
  confirmationSubject: string;
  confirmationSenderId: number | null;
  /** The confirmation sender when it is still live and verified, else null (then no confirmation mail can go). */
  sender: PublicFormSender | null;
  captcha: Captcha;
  /** The form row's updated_at as text (every change of the row moves it): what a cached copy is checked against (src/public/subscribe-service.ts). */
  version: string;
}

/** The input name of a field in the HTML form and the JSON body. */
export function inputName(field: { name: string; kind: 'reserved' | 'custom' }): string {
  return field.kind === 'reserved' ? field.name : `custom_field[${field.name}]`;
}

/** `first_name` → `First name`: the label of a field the form gives none. */
export function defaultLabel(name: string): string {
  const words = name.replace(/_/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

interface FormRow {
  id: number;
  user_id: number;
  name: string;
  contact_type_ids: number[];
  fields: StoredFormField[];
  double_opt_in: number;
  consent_text: string;
  success_url: string | null;
  confirm_url: string | null;
  confirmation_subject: string;
  confirmation_sender_id: number | null;
  captcha: Captcha;
  sender_id: number | null;
  from_name: string | null;
  from_email: string | null;
  reply_to_email: string | null;
  is_verified: number | null;
  version: string;
}

interface FieldRow {
  id: number;
  field_name: string;
  field_type: PublicFormField['type'];
  is_reserved: number;
}

/** The stored fields as shown: a field deleted since is left out; email always shows, required. */
export function showFields(stored: StoredFormField[], found: Map<number, FieldRow>): PublicFormField[] {
  const out: PublicFormField[] = [];
  for (const f of stored) {
    const row = found.get(f.field_id);
    if (!row) continue;
    const kind = row.is_reserved ? 'reserved' : 'custom';
    out.push({
      fieldId: row.id,
      name: row.field_name,
      kind,
      type: row.field_type,
      label: f.label || defaultLabel(row.field_name),
      required: f.required === 1 || (kind === 'reserved' && row.field_name === 'email'),
      inputName: inputName({ name: row.field_name, kind }),
    });
  }
  return out;
}

const PUBLIC_FORM_SQL = `SELECT f.id, f.user_id, f.name, f.contact_type_ids, f.fields, f.double_opt_in, f.consent_text, f.success_url,
       f.confirm_url, f.confirmation_subject, f.confirmation_sender_id, f.captcha, f.updated_at::text AS version,
       s.id AS sender_id, s.from_name, s.from_email, s.reply_to_email, s.is_verified,
       (SELECT coalesce(json_agg(json_build_object('id', ct.id, 'name', ct.name)), '[]'::json) FROM contact_types ct
         WHERE ct.user_id = ? AND ct.id = ANY(f.contact_type_ids) AND ct.deleted_at IS NULL) AS list_rows,
       (SELECT coalesce(json_agg(x), '[]'::json) FROM (
          SELECT r.id, r.field_name, r.field_type, 1 AS is_reserved FROM reserved_fields r
           WHERE r.id IN (SELECT (e->>'field_id')::int FROM jsonb_array_elements(f.fields) e)
          UNION ALL
          SELECT c.id, c.field_name, c.field_type, 0 AS is_reserved FROM custom_fields c
           WHERE c.user_id = ? AND c.id IN (SELECT (e->>'field_id')::int FROM jsonb_array_elements(f.fields) e)
        ) x) AS field_rows
     FROM forms f
     LEFT JOIN senders s ON s.id = f.confirmation_sender_id AND s.user_id = ? AND s.deleted_at IS NULL
     WHERE f.user_id = ? AND f.id = ? AND f.deleted_at IS NULL`;

/** PUBLIC_FORM_SQL with $1 … $5 for a named prepared statement (src/db/prepared.ts); its bindings are loadPublicForm's. */
const PUBLIC_FORM_NATIVE = PUBLIC_FORM_SQL.split('?').reduce((sql, part, i) => `${sql}$${i}${part}`);

/**
 * The form a public id names, as the public page needs it, or undefined when it is deleted (or
 * was never there). One read of one account's rows (every table filtered by the account: one
 * node on Citus; reserved_fields is a reference table): the form with its sender, and as JSON its
 * live lists and its fields — one round trip per submission instead of three (issue 35).
 */
export async function loadPublicForm(db: Knex, ref: FormRef): Promise<PublicForm | undefined> {
  const bindings = [ref.userId, ref.userId, ref.userId, ref.userId, ref.formId];
  // Prepared once per connection of the pool, on one PostgreSQL: its plan took longer to make
  // than to run (bench:subscribe, EXPLAIN: ≈ 2–3 ms against ≈ 0.4 ms on a loaded machine).
  const rows = (db as Knex.Transaction).isTransaction || (await onCitus(db))
    ? ((await db.raw(PUBLIC_FORM_SQL, bindings)).rows as unknown[])
    : await runPrepared(db, { name: 'herald_public_form', text: PUBLIC_FORM_NATIVE, values: () => bindings }, {});
  const row = rows[0] as (FormRow & { list_rows: Array<{ id: number; name: string }>; field_rows: FieldRow[] }) | undefined;
  if (!row) return undefined;
  const key = await secret(db, 'tracking');
  const listById = new Map(row.list_rows.map((l) => [l.id, l]));
  const lists = row.contact_type_ids.flatMap((id) => (listById.has(id) ? [listById.get(id)!] : []));
  const found = new Map(row.field_rows.map((f) => [f.id, f]));
  const verified = row.sender_id !== null && row.is_verified === SenderVerification.Verified;
  return {
    id: formPublicId(key, ref),
    userId: ref.userId,
    formId: ref.formId,
    name: row.name,
    lists,
    fields: showFields(row.fields, found),
    doubleOptIn: row.double_opt_in === 1,
    consentText: row.consent_text,
    successUrl: row.success_url,
    confirmUrl: row.confirm_url,
    confirmationSubject: row.confirmation_subject || DEFAULT_CONFIRMATION_SUBJECT,
    confirmationSenderId: row.confirmation_sender_id,
    sender: verified
      ? { id: row.sender_id!, fromName: row.from_name ?? '', fromEmail: row.from_email ?? '', replyTo: row.reply_to_email ?? '' }
      : null,
    captcha: row.captcha,
    version: row.version,
  };
}

/** How long a process keeps a form it read for the public submissions (cachedPublicForm). */
const PUBLIC_FORM_CACHE_MS = 5_000;
const FORM_CACHE_MAX = 1_000;
const formCache = new Map<string, { form: PublicForm; at: number }>();

/**
 * loadPublicForm's answer as this process read it within PUBLIC_FORM_CACHE_MS (issue 35: one
 * round trip less per submission). A double opt-in submission checks the copy against the form
 * row in its own statement (`version`: a changed or deleted form writes nothing, and the caller
 * reads it again), so there a change of the form takes effect at once; what the copy shows
 * otherwise — the hosted form's fields after an invalid submission, a single opt-in form, a list,
 * sender or field deleted since — may be up to PUBLIC_FORM_CACHE_MS old. `fresh`: read it now.
 */
export async function cachedPublicForm(db: Knex, ref: FormRef, fresh = false): Promise<PublicForm | undefined> {
  const key = `${ref.userId}:${ref.formId}`;
  const hit = formCache.get(key);
  const now = Date.now();
  if (!fresh && hit && now - hit.at < PUBLIC_FORM_CACHE_MS) return hit.form;
  const form = await loadPublicForm(db, ref);
  if (formCache.size >= FORM_CACHE_MAX) formCache.clear();
  if (form) formCache.set(key, { form, at: now });
  else formCache.delete(key);
  return form;
}
