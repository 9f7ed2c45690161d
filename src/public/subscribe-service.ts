import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { recordConsent } from '../consent/record';
import { recordAccountEvent } from '../events/account-events';
import { FORM_RESERVED_FIELDS, type PublicForm } from '../forms/forms';
import { onCitus } from '../db/per-account';
import { runPrepared } from '../db/prepared';
import { queueConfirmationMailSql } from '../forms/optin-mail';
import { confirmPending, pendingUpsertSql, submissionTime, type PendingFields, type PendingRow } from '../forms/pending';
import { countFormConfirmation, countFormSubmission, countFormSubmissionSql } from '../forms/stats';
import { clientCountSql, countClientSubmission } from '../forms/subscribe-guards';
import { EMAIL_PATTERN } from '../http/fields';
import type { FieldErrors } from '../http/errors';
import { bumpContactsVersion } from '../resources/contacts/contacts-version';
import { checkCustomValue } from '../resources/contacts/custom-values';
import { erasureKey, suppressionJoins } from '../suppression';

/**
 * What a submission to a public form does (issue 35), apart from HTTP: its checks, and the
 * writes of a submission and of a confirmation. Here, above resources (eslint LAYERS), because
 * a subscription is written like a contact the API adds: the contact type's contacts_version
 * is bumped in the same transaction, so segments and automations (welcome) see the new member.
 */
export interface Submission {
  email: string;
  fields: PendingFields;
  contactTypeIds: number[];
}

export interface Client {
  ip: string | null;
  userAgent: string | null;
}

const flat = (v: unknown): unknown => (Array.isArray(v) ? v[v.length - 1] : v);
const human = (name: string) => name.replace(/_/g, ' ');
const ACCEPTED = new Set(['1', 'on', 'yes', 'true']);

/** Reads and checks a submitted body against the form: the submission, or the errors by input name (VAL wording). */
export function readSubmission(form: PublicForm, body: Record<string, unknown>): { ok: true; submission: Submission } | { ok: false; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const custom = (body.custom_field && typeof body.custom_field === 'object' ? body.custom_field : {}) as Record<string, unknown>;
  const reserved: Record<string, string> = {};
  const customValues: Record<string, string> = {};
  let email = '';
  for (const f of form.fields) {
    const raw = flat(f.kind === 'reserved' ? body[f.name] : (custom[f.name] ?? body[f.name]));
    const key = f.inputName;
    if (raw !== undefined && raw !== null && typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') {
      errors[key] = [`The ${human(f.name)} must be a string.`];
      continue;
    }
    const text = raw === undefined || raw === null ? '' : String(raw).trim();
    if (text === '') {
      if (f.required) errors[key] = [`The ${human(f.name)} field is required.`];
      continue;
    }
    if (f.kind === 'reserved') {
      if (f.name === 'email') {
        if (text.length > 254 || !EMAIL_PATTERN.test(text)) errors[key] = ['The email must be a valid email address.'];
        else email = text;
      } else if (text.length > 255) errors[key] = [`The ${human(f.name)} must not be greater than 255 characters.`];
      else reserved[f.name] = text;
    } else {
      const checked = checkCustomValue({ id: f.fieldId, field_name: f.name, field_type: f.type }, text);
      if ('error' in checked) errors[key] = [checked.error];
      else customValues[String(f.fieldId)] = checked.value;
    }
  }
  let contactTypeIds = form.lists.map((l) => l.id);
  if (form.lists.length > 1) {
    const raw = body.contact_type_ids;
    const chosen = (Array.isArray(raw) ? raw : raw === undefined || raw === '' ? [] : [raw]).map((v) => Number(v));
    if (chosen.length === 0) errors.contact_type_ids = ['The contact type ids field is required.'];
    else if (chosen.some((id) => !contactTypeIds.includes(id))) errors.contact_type_ids = ['The selected contact type ids is invalid.'];
    else contactTypeIds = contactTypeIds.filter((id) => chosen.includes(id));
  }
  if (!ACCEPTED.has(String(flat(body.consent) ?? '').toLowerCase())) errors.consent = ['The consent must be accepted.'];
  if (Object.keys(errors).length) return { ok: false, errors };
  return { ok: true, submission: { email, fields: { reserved, custom: customValues }, contactTypeIds } };
}

/**
 * The reason the account must not mail the address (suppressions, erased addresses, the global
 * unsubscribe list: src/suppression's one rule), and how many of the lists `typeIds` already have
 * it as a live contact: the SELECT of a CTE, over the CTE `go` (`ok`: within the client's limit),
 * with the account as a value in every join so the statement runs on one node on Citus.
 */
async function checkSql(db: Knex, userId: number, email: string, typeIds: number[]): Promise<{ sql: string; bindings: Knex.RawBinding[] }> {
  // The account bound, not a literal in the text: the statement is prepared once for every account.
  const { joins, reason } = suppressionJoins(db, userId, null, 'v.email', await erasureKey(db), '?::int');
  return {
    sql: `SELECT ${reason} AS reason,
       (SELECT count(DISTINCT c.contact_type_id) FROM contacts c WHERE c.user_id = ? AND c.contact_type_id = ANY(?::int[])
          AND lower(c.email) = lower(v.email) AND c.deleted_at IS NULL)::int AS present,
       ?::int AS lists
     FROM go CROSS JOIN (SELECT ?::text AS email) v ? WHERE go.ok`,
    bindings: [userId, userId, typeIds, new Set(typeIds).size, email, joins],
  };
}

/** The lists among `typeIds` where the address is a live contact already. */
async function listsWithContact(db: Knex, userId: number, email: string, typeIds: number[]): Promise<Set<number>> {
  const rows = (await db('contacts')
    .where('user_id', userId)
    .whereIn('contact_type_id', typeIds)
    .whereRaw('lower(email) = lower(?)', [email])
    .whereNull('deleted_at')
    .select('contact_type_id')) as Array<{ contact_type_id: number }>;
  return new Set(rows.map((r) => r.contact_type_id));
}

/**
 * Adds the address to the lists (those still live), or — `update` — also writes what was
 * submitted onto the contacts it already is (a confirmation by the address's owner). Fields not
 * submitted are left as they are. Bumps the lists' contacts_version. Returns the lists written.
 */
export async function writeContacts(trx: Knex, userId: number, email: string, fields: PendingFields, typeIds: number[], update: boolean): Promise<number[]> {
  const live = (await trx('contact_types').where('user_id', userId).whereIn('id', typeIds).whereNull('deleted_at').pluck('id')) as number[];
  if (live.length === 0) return [];
  const columnNames: readonly string[] = FORM_RESERVED_FIELDS;
  const reserved = Object.fromEntries(Object.entries(fields.reserved).filter(([k]) => k !== 'email' && columnNames.includes(k)));
  const onConflict = update
    ? `DO UPDATE SET ${[...Object.keys(reserved).map((c) => `"${c}" = excluded."${c}"`), `custom_fields = contacts.custom_fields || excluded.custom_fields`, 'updated_at = excluded.updated_at'].join(', ')}`
    : 'DO NOTHING';
  // updated_at is a value, not now(): Citus refuses a function that is not IMMUTABLE in DO UPDATE SET.
  const columns = ['user_id', 'contact_type_id', 'email', ...Object.keys(reserved), 'custom_fields', 'updated_at'];
  const now = new Date();
  for (const typeId of live) {
    const values = [userId, typeId, email, ...Object.values(reserved), JSON.stringify(fields.custom), now];
    await trx.raw(
      `INSERT INTO contacts (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
       ON CONFLICT (contact_type_id, lower(email), user_id) WHERE deleted_at IS NULL ${onConflict}`,
      values,
    );
  }
  await bumpContactsVersion(trx, userId, live);
  return live;
}

/** `stale`: the form (a copy read before, cachedPublicForm) changed or went since: nothing was written, read it again. */
export type SubmitOutcome = 'pending' | 'unchanged' | 'added' | 'stale';

/** The per-client-address limit a submission counts against (SUBSCRIBE_LIMIT_PER_HOUR; 0: none). */
export interface ClientLimit {
  address: string;
  perHour: number;
}

/**
 * A checked submission to a form. Double opt-in: unless the address is suppressed (never mailed)
 * or already a contact of every chosen list (nothing to change), it becomes a pending
 * subscription and — at most once per RESEND_MINUTES — one confirmation mail is queued. The
 * answer the person sees is the same in every case (the caller's). Single opt-in: the contacts
 * are made at once, with their consent records (no confirmation). Counted as a submission.
 *
 * `limit`: the client address is counted first, in the same transaction (one commit per
 * submission); past the limit the answer is `{ retryAfter }` and only the count is written.
 */
export async function submit(db: Knex, form: PublicForm, s: Submission, client: Client, limit?: ClientLimit): Promise<SubmitOutcome | { retryAfter: number }> {
  if (form.doubleOptIn) return submitDoubleOptIn(db, form, s, client, limit);
  return db.transaction(async (trx) => {
    if (limit) {
      const counted = await countClientSubmission(trx, limit.address, limit.perHour);
      if (!counted.ok) return { retryAfter: counted.retryAfter };
    }
    const present = await listsWithContact(trx, form.userId, s.email, s.contactTypeIds);
    let outcome: SubmitOutcome = 'unchanged';
    const added = await writeContacts(trx, form.userId, s.email, s.fields, s.contactTypeIds.filter((id) => !present.has(id)), false);
    if (added.length) {
      await recordConsent(trx, added.map((contactTypeId) => consentRecord(form, s.email, contactTypeId, client, new Date(), null)));
      outcome = 'added';
    }
    await countFormSubmission(trx, form.userId, form.formId);
    return outcome;
  });
}

/**
 * A double opt-in submission in one statement (issue 35's benchmark: it was ten round trips
 * and a transaction), its steps CTEs that all commit or none: the client address counted (`lim`,
 * `go`), the address checked (`chk`), the pending subscription written with its mail turn
 * (`pend`), the confirmation mail queued (`job`) and the submission counted (`stat`). Each step
 * reads the statement's one snapshot, as the statements of the transaction did (READ COMMITTED).
 * On Citus the count of the client address, a table of the coordinator (GLOBAL_TABLES), is a
 * statement before it, in one transaction with it: Citus plans no statement that writes a local
 * table and a distributed one.
 */
/**
 * Runs a statement as a named prepared statement on a connection of the pool (src/db/prepared.ts):
 * PostgreSQL plans the submission's statement once per connection — planning it took longer than
 * running it (bench:subscribe, EXPLAIN: ≈ 4 ms against ≈ 2 ms on a loaded machine). Its text is the
 * same for every account and submission (the values are all bound), so there are a few such
 * statements per connection: with or without the client's count, with or without a mail.
 */
async function runNamed(db: Knex, statement: Knex.Raw): Promise<Array<Record<string, unknown>>> {
  const { sql, bindings } = statement.toSQL().toNative();
  const name = `herald_subscribe_${createHash('sha1').update(sql).digest('hex').slice(0, 16)}`;
  return runPrepared(db, { name, text: sql, values: () => [...bindings] }, {});
}

async function submitDoubleOptIn(db: Knex, form: PublicForm, s: Submission, client: Client, limit?: ClientLimit): Promise<SubmitOutcome | { retryAfter: number }> {
  const counted = limit && limit.perHour > 0 ? limit : undefined;
  const run = async (q: Knex, withCount: boolean): Promise<SubmitOutcome | { retryAfter: number }> => {
    const ctes: string[] = [];
    const bindings: Knex.RawBinding[] = [];
    const add = (name: string, part: { sql: string; bindings: Knex.RawBinding[] }) => {
      ctes.push(`${name} AS (${part.sql})`);
      bindings.push(...part.bindings);
    };
    let retryAfter = 0;
    // The form as the caller read it (maybe a copy a few seconds old): nothing is written, not even the count, once it changed.
    add('frm', { sql: 'SELECT 1 AS live FROM forms WHERE user_id = ? AND id = ? AND deleted_at IS NULL AND updated_at = ?::timestamptz', bindings: [form.userId, form.formId, form.version] });
    if (withCount && counted) {
      const count = clientCountSql(counted.address, 'EXISTS (SELECT 1 FROM frm)');
      retryAfter = count.retryAfter;
      add('lim', count);
      add('go', { sql: 'SELECT n <= ? AS ok FROM lim', bindings: [counted.perHour] });
    } else {
      add('go', { sql: 'SELECT true AS ok FROM frm', bindings: [] });
    }
    add('chk', await checkSql(q, form.userId, s.email, s.contactTypeIds));
    const pending = {
      userId: form.userId,
      formId: form.formId,
      email: s.email,
      fields: s.fields,
      contactTypeIds: s.contactTypeIds,
      consentText: form.consentText,
      ip: client.ip,
      userAgent: client.userAgent,
    };
    add('pend', pendingUpsertSql(pending, submissionTime(), 'EXISTS (SELECT 1 FROM chk WHERE chk.reason IS NULL AND chk.present < chk.lists)'));
    if (form.sender) add('job', queueConfirmationMailSql(form.userId, 'pend'));
    add('stat', countFormSubmissionSql(form.userId, form.formId, 'EXISTS (SELECT 1 FROM go WHERE go.ok)'));
    const statement = q.raw(
      `WITH ${ctes.join(',\n')}\nSELECT EXISTS (SELECT 1 FROM frm) AS live, (SELECT ok FROM go) AS ok, (SELECT count(*) FROM pend)::int AS pending`,
      bindings,
    );
    const row = (citus ? (await statement).rows[0] : (await runNamed(q, statement))[0]) as { live: boolean; ok: boolean; pending: number };
    if (!row.live) return 'stale';
    if (!row.ok) return { retryAfter };
    return row.pending > 0 ? 'pending' : 'unchanged';
  };
  const citus = await onCitus(db);
  if (!counted || !citus) return run(db, true);
  return db.transaction(async (trx) => {
    const ok = await countClientSubmission(trx, counted.address, counted.perHour);
    return ok.ok ? run(trx, false) : { retryAfter: ok.retryAfter };
  });
}

function consentRecord(form: PublicForm, email: string, contactTypeId: number, client: Client, consentedAt: Date | string, confirm: (Client & { at: Date }) | null) {
  return {
    userId: form.userId,
    email,
    contactTypeId,
    source: 'form' as const,
    formId: form.formId,
    clientIp: client.ip,
    userAgent: client.userAgent,
    consentText: form.consentText,
    consentedAt,
    confirmedAt: confirm?.at ?? null,
    confirmIp: confirm?.ip ?? null,
    confirmUserAgent: confirm?.userAgent ?? null,
  };
}

/**
 * Confirms a pending subscription (the POST of the confirmation page): stamps it, adds or
 * updates the contacts on its lists (welcome automations take them in from here, never from the
 * pending row), writes the consent records with both the submission and the confirmation, records
 * the account event `contact.confirmed` (to webhooks; no notification mail per confirmation) and
 * counts the confirmation — all in one transaction. Undefined when the link was used already.
 */
export async function confirm(
  db: Knex,
  form: PublicForm,
  ref: { userId: number; pendingId: number; generation: number },
  client: Client,
): Promise<PendingRow | undefined> {
  return db.transaction(async (trx) => {
    const row = await confirmPending(trx, ref, client);
    if (!row) return undefined;
    const at = new Date(row.confirmed_at ?? Date.now());
    const lists = await writeContacts(trx, ref.userId, row.email, row.fields, row.contact_type_ids, true);
    if (lists.length) {
      await recordConsent(
        trx,
        lists.map((id) => consentRecord({ ...form, consentText: row.consent_text }, row.email, id, { ip: row.ip, userAgent: row.user_agent }, row.created_at, { ...client, at })),
      );
    }
    await recordAccountEvent(
      { db: trx },
      ref.userId,
      'contact.confirmed',
      `Subscription confirmed: ${row.email}`,
      { email: row.email, form: form.name, form_id: form.formId, contact_type_ids: lists.join(',') },
      {},
      { email: row.email, notify: false },
    );
    await countFormConfirmation(trx, ref.userId, form.formId);
    return row;
  });
}
