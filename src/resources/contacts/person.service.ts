import type { Ctx } from '../../context';
import { recipientRowsOf } from '../../deliveries/person';
import { eventsOfAddress } from '../../events/person';
import { erasedHashBindings, erasedHashSql, erasureKey } from '../../suppression';
import { loadCustomFields } from './custom-values';

/**
 * What Herald holds about one address in one account (issue 35): its consent records (GET
 * /contacts/consent) and everything else (GET /contacts/export-person). Addresses compare
 * case-insensitively; every read carries the account.
 */

/** The export's cap per kind of message row (recipient rows, events): past it, `truncated` says so. */
export const EXPORT_PERSON_MAX_ROWS = 10_000;

export interface ConsentEntry {
  contact_type_id: number | null;
  list_name: string | null;
  /** form | import | api | dashboard; null: a contact added before consent was recorded. */
  source: string | null;
  form_id: number | null;
  import_id: number | null;
  actor: string | null;
  client_ip: string | null;
  user_agent: string | null;
  consent_text: string | null;
  consented_at: string | null;
  confirmed_at: string | null;
  confirm_ip: string | null;
  confirm_user_agent: string | null;
}

const RECORD_COLUMNS = `r.contact_type_id, t.name AS list_name, r.source, r.form_id, r.import_id, r.actor, r.client_ip, r.user_agent,
  r.consent_text, r.consented_at, r.confirmed_at, r.confirm_ip, r.confirm_user_agent`;

/**
 * Every consent record of the address: its own (forms, API and dashboard adds), the imports that
 * inserted one of its contacts (one record per import and list, joined through contacts.import_id),
 * and a bare entry for a contact of a list with neither (added before consent was recorded).
 * Oldest first.
 */
export async function consentOf(ctx: Ctx, email: string): Promise<ConsentEntry[]> {
  const { rows } = await ctx.db.raw(
    `SELECT * FROM (
       SELECT ${RECORD_COLUMNS}
       FROM consent_records r LEFT JOIN contact_types t ON t.id = r.contact_type_id AND t.user_id = r.user_id
       WHERE r.user_id = ? AND lower(r.email) = lower(?)
       UNION ALL
       SELECT ${RECORD_COLUMNS}
       FROM contacts c
       JOIN consent_records r ON r.user_id = c.user_id AND r.import_id = c.import_id AND r.contact_type_id = c.contact_type_id AND r.email IS NULL
       LEFT JOIN contact_types t ON t.id = r.contact_type_id AND t.user_id = r.user_id
       WHERE c.user_id = ? AND lower(c.email) = lower(?) AND c.import_id IS NOT NULL
       UNION ALL
       SELECT c.contact_type_id, t.name, NULL, NULL, NULL, NULL, NULL, NULL, NULL, c.created_at, NULL, NULL, NULL
       FROM contacts c LEFT JOIN contact_types t ON t.id = c.contact_type_id AND t.user_id = c.user_id
       WHERE c.user_id = ? AND lower(c.email) = lower(?) AND c.deleted_at IS NULL AND c.import_id IS NULL
         AND NOT EXISTS (SELECT 1 FROM consent_records r WHERE r.user_id = c.user_id AND lower(r.email) = lower(c.email) AND r.contact_type_id = c.contact_type_id)
     ) x ORDER BY consented_at, contact_type_id`,
    [ctx.userId, email, ctx.userId, email, ctx.userId, email],
  );
  return rows as ConsentEntry[];
}

type Row = Record<string, unknown>;

const rowsOf = async (q: Promise<unknown>): Promise<Row[]> => (await q) as Row[];

/** Everything the account holds about the address, as one JSON document. */
export async function exportPerson(ctx: Ctx, email: string): Promise<Row> {
  const { db, userId } = ctx;
  const byAddress = (column: string) => [`lower(${column}) = lower(?)`, [email]] as const;
  const fields = new Map((await loadCustomFields(ctx)).map((f) => [String(f.id), f.field_name]));
  const contacts = await rowsOf(
    db('contacts as c')
      .leftJoin('contact_types as t', (j) => j.on('t.id', 'c.contact_type_id').andOn('t.user_id', 'c.user_id'))
      .leftJoin('countries as k', 'k.id', 'c.country_id')
      .where('c.user_id', userId)
      .whereRaw(...byAddress('c.email'))
      .orderBy('c.id')
      .select(
        'c.id', 'c.contact_type_id', 't.name as list_name', 'c.email', 'c.alt_email', 'c.first_name', 'c.last_name', 'k.name as country',
        'c.state', 'c.city', 'c.address_line1', 'c.address_line2', 'c.state_province_region', 'c.postal_code', 'c.custom_fields',
        'c.import_id', 'c.created_at', 'c.updated_at', 'c.deleted_at',
      ),
  );
  for (const c of contacts) {
    const stored = (c.custom_fields ?? {}) as Record<string, string>;
    c.custom_fields = Object.fromEntries(Object.entries(stored).map(([id, v]) => [fields.get(id) ?? `field ${id}`, v]));
  }
  const lists = new Map<number, string | null>();
  for (const c of contacts) if (c.deleted_at === null) lists.set(c.contact_type_id as number, c.list_name as string | null);
  const key = await erasureKey(db);
  const [consent, globalUnsubscribes, groupUnsubscribes, suppressions, segments, automations, pending, deliveries] = await Promise.all([
    consentOf(ctx, email),
    rowsOf(db('global_unsubscribers').where('user_id', userId).whereRaw(...byAddress('email_address')).select('email_address', 'unsubscribe_groups_id', 'created_at')),
    rowsOf(
      db('unsubscribe_group_recipients as r')
        .join('unsubscribe_groups as g', (j) => j.on('g.id', 'r.unsubscribe_groups_id').andOn('g.user_id', 'r.user_id'))
        .where('r.user_id', userId)
        .whereRaw(...byAddress('r.email_address'))
        .select('r.email_address', 'r.unsubscribe_groups_id', 'g.group_name', 'r.created_at'),
    ),
    rowsOf(
      db('suppressions')
        .where('user_id', userId)
        .where((w) => w.whereRaw(...byAddress('email')).orWhereRaw(`lower(email) = ${erasedHashSql('?::text')}`, [...erasedHashBindings(key), email]))
        .orderBy('id')
        .select('email', 'type', 'reason', 'diagnostic', 'source', 'single_send_id', 'automation_id', 'created_at'),
    ),
    rowsOf(db('segment_recipients').where('user_id', userId).whereRaw(...byAddress('email')).select('segment_id', 'contact_id', 'email', 'first_name', 'last_name', 'country', 'state', 'city', 'address_line1', 'created_at')),
    rowsOf(db('automation_contacts').where('user_id', userId).whereRaw(...byAddress('email')).select('automation_id', 'contact_id', 'email', 'state', 'exit_reason', 'entered_at', 'last_sent_at', 'next_due_at')),
    pendingOf(ctx, email),
    recipientRowsOf(db, userId, email, EXPORT_PERSON_MAX_ROWS + 1),
  ]);
  const events = await eventsOfAddress(db, userId, email, deliveries.map((d) => Number(d.id)), EXPORT_PERSON_MAX_ROWS + 1);
  return {
    email,
    contacts,
    lists: [...lists].map(([id, name]) => ({ contact_type_id: id, list_name: name })),
    consent,
    pending_subscriptions: pending,
    unsubscribes: { global: globalUnsubscribes, groups: groupUnsubscribes },
    suppressions,
    segments,
    automations,
    deliveries: deliveries.slice(0, EXPORT_PERSON_MAX_ROWS),
    events: events.slice(0, EXPORT_PERSON_MAX_ROWS),
    truncated: { deliveries: deliveries.length > EXPORT_PERSON_MAX_ROWS, events: events.length > EXPORT_PERSON_MAX_ROWS },
  };
}

/** The address's pending double opt-in subscriptions (src/forms, migrations/202612300300). */
async function pendingOf(ctx: Ctx, email: string): Promise<Row[]> {
  return rowsOf(
    ctx.db('pending_subscriptions')
      .where('user_id', ctx.userId)
      .whereRaw('lower(email) = lower(?)', [email])
      .orderBy('id')
      .select('form_id', 'email', 'fields', 'contact_type_ids', 'consent_text', 'ip', 'user_agent', 'created_at', 'confirmed_at', 'confirm_ip', 'confirm_user_agent'),
  );
}
