import type { Response } from 'express';
import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { ADDRESS_COLUMNS, RESERVED_COLUMNS } from '../../contacts/columns';
import { extraRecipients, loadRuleFields, matchingContacts, storedRules } from '../../contacts/segments.sql';
import { invalid, notFound1, notFound2 } from '../../http/errors';
import { scoped } from '../shared/crud';
import { findSegment } from '../segments/segments.service';
import { streamCsv } from './export-csv';
import { loadCustomFields, type CustomField } from './custom-values';

/** GET /contacts/export: exactly one of the two (ids as contactExportQuery reads them: 0 names nothing). */
export interface ContactExport {
  contactTypeId?: number;
  segmentId?: number;
}

/** One exported person: the reserved columns as the import reads them, and custom values by field id. */
type ExportRow = Record<(typeof RESERVED_COLUMNS)[number], string | null> & { id: number; custom_fields: Record<string, string> | null };

/** Rows per statement: keyset batches, so the export holds one batch at a time whatever the list's size. */
const BATCH = 5000;

const CONTACT_COLUMNS = [
  'c.id',
  'c.first_name',
  'c.last_name',
  'c.email',
  'c.alt_email',
  'co.name as country',
  ...ADDRESS_COLUMNS.map((a) => `c.${a}`),
  'c.custom_fields',
];
// Hand-added segment recipients have no alternate address, second address line, region,
// postal code or custom values (the CSV leaves those cells empty).
const RECIPIENT_COLUMNS = ['id', 'first_name', 'last_name', 'email', 'country', 'state', 'city', 'address_line1'].map((col) => `r.${col}`);

/** Keyset batches in id order: `fetch(after)` returns rows with ids above `after`, at most BATCH of them. */
async function* batches(fetch: (after: number) => Promise<ExportRow[]>): AsyncGenerator<ExportRow[]> {
  let after = 0;
  for (;;) {
    const rows = await fetch(after);
    if (rows.length) yield rows;
    if (rows.length < BATCH) return;
    after = rows[rows.length - 1].id;
  }
}

async function page(query: Knex.QueryBuilder, idColumn: string, after: number): Promise<ExportRow[]> {
  return (await query.where(idColumn, '>', after).orderBy(idColumn).limit(BATCH)) as ExportRow[];
}

interface Source {
  name: string;
  rows: AsyncIterable<ExportRow[]>;
}

/** A contact type's live contacts. */
async function typeSource(ctx: Ctx, id: number): Promise<Source> {
  const type = await scoped(ctx, 'contact_types').where({ id }).whereNull('deleted_at').first('name');
  if (!type) throw notFound1();
  const contacts = () =>
    ctx.db('contacts as c')
      .leftJoin('countries as co', 'co.id', 'c.country_id')
      .where({ 'c.user_id': ctx.userId, 'c.contact_type_id': id })
      .whereNull('c.deleted_at')
      .select(CONTACT_COLUMNS);
  return { name: type.name as string, rows: batches((after) => page(contacts(), 'c.id', after)) };
}

/**
 * A segment's members, as GET /segment/email/list has them (src/contacts/segments.sql.ts): its
 * hand-added recipients, then the matching contacts. Rules naming a deleted field match nobody.
 */
async function segmentSource(ctx: Ctx, id: number): Promise<Source> {
  const [seg, fields] = await Promise.all([findSegment(ctx, id, notFound2), loadRuleFields(ctx)]);
  const rules = storedRules(seg, fields);
  async function* rows(): AsyncGenerator<ExportRow[]> {
    if (!rules) return;
    yield* batches((after) => page(extraRecipients(ctx.db, seg, rules).select(RECIPIENT_COLUMNS), 'r.id', after));
    const contacts = () => matchingContacts(ctx.db, seg, rules).leftJoin('countries as co', 'co.id', 'c.country_id').select(CONTACT_COLUMNS);
    yield* batches((after) => page(contacts(), 'c.id', after));
  }
  return { name: seg.segment_name, rows: rows() };
}

function checkExport(input: ContactExport): void {
  const type = input.contactTypeId !== undefined;
  const segment = input.segmentId !== undefined;
  if (!type && !segment) throw invalid({ contact_type_id: ['The contact type id field is required when segment id is not present.'] });
  if (type && segment) throw invalid({ contact_type_id: ['The contact type id field prohibits segment id from being present.'] });
}

/** The download's name: the list's or segment's name in lower case, letters and digits, and the day. */
function fileName(name: string): string {
  const slug = name.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 60);
  return `${slug || 'contacts'}-${new Date().toISOString().slice(0, 10)}.csv`;
}

/** The CSV's records: the reserved columns, then the custom values in the header's order. */
async function* records(rows: AsyncIterable<ExportRow[]>, custom: CustomField[]): AsyncGenerator<string[][]> {
  for await (const batch of rows) {
    yield batch.map((row) => {
      const values = row.custom_fields ?? {};
      return [...RESERVED_COLUMNS.map((col) => row[col] ?? ''), ...custom.map((f) => values[String(f.id)] ?? '')];
    });
  }
}

/**
 * GET /contacts/export (and the dashboard's export button): streams the CSV of a contact type's
 * live contacts or a segment's members to `res` (export-csv.ts: formulas neutralised, the
 * envelope for what fails before the first byte, a cut connection after). The header is what
 * the CSV import reads: the reserved fields, then the account's custom fields by name (oldest
 * first). Rows go oldest first, read in keyset batches: one batch in memory at a time. `opened`
 * runs once the list or segment is found, before the first byte (the route's audit entry).
 */
export async function exportContactsCsv(ctx: Ctx, input: ContactExport, res: Response, opened: () => Promise<void>): Promise<void> {
  checkExport(input);
  const [source, custom] = await Promise.all([
    input.contactTypeId !== undefined ? typeSource(ctx, input.contactTypeId) : segmentSource(ctx, input.segmentId!),
    loadCustomFields(ctx),
  ]);
  await opened();
  const header = [...RESERVED_COLUMNS, ...custom.map((f) => f.field_name)];
  await streamCsv(res, fileName(source.name), header, records(source.rows, custom));
}
