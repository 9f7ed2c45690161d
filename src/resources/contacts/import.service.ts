import fs from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse } from 'csv-parse';
import type { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Ctx } from '../../context';
import { invalid } from '../../http/errors';
import { scoped } from '../shared/crud';
import { isEmail } from '../../http/fields';
import { decodeWindows1252, sniffCsv } from './csv-sniff';
import { checkCustomValue, loadCustomFields, type CustomField } from './custom-values';
import { UPSERT_STAGED_CONTACTS, STAGING_COLUMNS } from './import.sql';

/** Columns a CSV may set, matched by header (case-insensitive, spaces = underscores). */
const TEXT_COLUMNS = [
  'first_name',
  'last_name',
  'state',
  'city',
  'address_line1',
  'address_line2',
  'state_province_region',
  'postal_code',
] as const;
type TextColumn = (typeof TEXT_COLUMNS)[number];

const MAX_REASONS = 20;
/** A line longer than this is not a contact: refuse the file instead of buffering it. */
export const MAX_LINE_BYTES = 1024 * 1024;

export interface ImportOutcome {
  id: number;
  rowsRead: number;
  inserted: number;
  updated: number;
  skipped: number;
  reasons: Array<{ row: number; reason: string }>;
  ignoredColumns: string[];
  durationMs: number;
}

interface ColumnMap {
  email: number;
  altEmail: number;
  country: number;
  text: Array<[TextColumn, number]>;
  custom: Array<[CustomField, number]>;
  ignored: string[];
}

const headerKey = (h: string) => h.trim().toLowerCase().replace(/[\s-]+/g, '_');

function mapHeader(header: string[], customFields: CustomField[]): ColumnMap {
  const map: ColumnMap = { email: -1, altEmail: -1, country: -1, text: [], custom: [], ignored: [] };
  const customByName = new Map(customFields.map((f) => [f.field_name.toLowerCase(), f]));
  const seen = new Set<string>();
  header.forEach((raw, i) => {
    const key = headerKey(raw);
    if (!key || seen.has(key)) {
      if (key) map.ignored.push(raw);
      return;
    }
    seen.add(key);
    if (key === 'email' || key === 'email_address') map.email = i;
    else if (key === 'alt_email') map.altEmail = i;
    else if (key === 'country' || key === 'country_id') map.country = i;
    else if ((TEXT_COLUMNS as readonly string[]).includes(key)) map.text.push([key as TextColumn, i]);
    else if (customByName.has(key)) map.custom.push([customByName.get(key)!, i]);
    else map.ignored.push(raw);
  });
  if (map.email < 0) throw invalid({ file: ['The file must have a header row with an email column.'] });
  return map;
}

/** Countries by lower-cased name, ISO code and id: a CSV may give any of the three. */
async function countryLookup(ctx: Ctx): Promise<Map<string, number>> {
  const rows = (await ctx.db('countries').select('id', 'name', 'iso_code')) as Array<{ id: number; name: string; iso_code: string }>;
  const map = new Map<string, number>();
  for (const r of rows) {
    map.set(r.name.toLowerCase(), r.id);
    map.set(r.iso_code.toLowerCase(), r.id);
    map.set(String(r.id), r.id);
  }
  return map;
}

const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
/** A value in COPY's text format (`\N` is NULL). */
function copyValue(v: string | null): string {
  if (v === null) return '\\N';
  return /[\\\t\n\r]/.test(v) ? v.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]) : v;
}

/**
 * Turns parsed CSV records into COPY lines for the staging table, checking each row on the
 * way: bad rows are counted and their first reasons kept, good rows flow on. Lines are
 * batched into ~64 KB chunks to keep per-chunk overhead off the hot path.
 */
class RowsToCopy extends Transform {
  rowsRead = 0;
  skipped = 0;
  readonly reasons: Array<{ row: number; reason: string }> = [];
  columns?: ColumnMap;
  private buffer = '';

  constructor(
    private readonly customFields: CustomField[],
    private readonly countries: Map<string, number>,
  ) {
    super({ writableObjectMode: true, readableObjectMode: false, writableHighWaterMark: 256 });
  }

  private skip(row: number, reason: string): undefined {
    this.skipped += 1;
    if (this.reasons.length < MAX_REASONS) this.reasons.push({ row, reason });
    return undefined;
  }

  /** One record → one COPY line, or a reason to skip it. `row` is the CSV line number. */
  private line(rec: string[], row: number): string | undefined {
    const c = this.columns!;
    const email = (rec[c.email] ?? '').trim();
    if (!email) return this.skip(row, 'The email field is required.');
    if (!isEmail(email)) return this.skip(row, `The email must be a valid email address (${JSON.stringify(email.slice(0, 100))}).`);
    let altEmail: string | null = null;
    if (c.altEmail >= 0) {
      const v = (rec[c.altEmail] ?? '').trim();
      if (v && !isEmail(v)) return this.skip(row, 'The alt email must be a valid email address.');
      altEmail = v || null;
    }
    let countryId: string | null = null;
    if (c.country >= 0) {
      const v = (rec[c.country] ?? '').trim();
      if (v) {
        const found = this.countries.get(v.toLowerCase());
        if (found === undefined) return this.skip(row, `The selected country is invalid (${JSON.stringify(v.slice(0, 100))}).`);
        countryId = String(found);
      }
    }
    const parts = [String(row), copyValue(email), copyValue(altEmail), countryId ?? '\\N'];
    const text: Record<string, string | null> = {};
    for (const [name, i] of c.text) {
      const v = (rec[i] ?? '').trim();
      if (v.length > 255) return this.skip(row, `The ${name.replace(/_/g, ' ')} must not be greater than 255 characters.`);
      text[name] = v || null;
    }
    for (const name of TEXT_COLUMNS) parts.push(copyValue(text[name] ?? null));
    let custom: Record<string, string> | null = null;
    for (const [field, i] of c.custom) {
      const v = (rec[i] ?? '').trim();
      if (!v) continue;
      const checked = checkCustomValue(field, v);
      if ('error' in checked) return this.skip(row, checked.error);
      (custom ??= {})[String(field.id)] = checked.value;
    }
    parts.push(custom ? copyValue(JSON.stringify(custom)) : '\\N');
    const lineText = parts.join('\t');
    if (lineText.includes('\u0000')) return this.skip(row, 'The row contains a NUL character.');
    return lineText + '\n';
  }

  override _transform(record: { record: string[]; info: { lines: number } }, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      const rec = record.record;
      if (!this.columns) {
        this.columns = mapHeader(rec, this.customFields);
        done();
        return;
      }
      this.rowsRead += 1;
      const out = this.line(rec, record.info.lines);
      if (out !== undefined) {
        this.buffer += out;
        if (this.buffer.length >= 65_536) {
          this.push(this.buffer);
          this.buffer = '';
        }
      }
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    if (!this.columns) {
      done(invalid({ file: ['The file must have a header row with an email column.'] }));
      return;
    }
    if (this.buffer) this.push(this.buffer);
    done();
  }
}

/** csv-parse's own errors, worded for the client. */
function parseError(err: unknown): Error {
  const e = err as { code?: string; lines?: number; message?: string };
  if (e && typeof e.code === 'string' && e.code.startsWith('CSV_')) {
    if (e.code === 'CSV_MAX_RECORD_SIZE') {
      return invalid({ file: [`The file has a line longer than ${MAX_LINE_BYTES / 1024} kilobytes (line ${e.lines ?? '?'}).`] });
    }
    return invalid({ file: [`The file is not a valid CSV file (line ${e.lines ?? '?'}: ${e.message ?? e.code}).`] });
  }
  return err as Error;
}

/**
 * Imports a CSV file into a contact type, atomically: csv-parse → row checks → COPY into an
 * unlogged staging table → one set-based upsert (sorted by the unique key) → commit. Memory
 * stays flat: records stream through with backpressure from PostgreSQL. Returns the counts
 * (also kept in contact_imports).
 */
export async function importContactsCsv(
  ctx: Ctx,
  input: { contactTypeId: number; filePath: string; fileName: string },
): Promise<ImportOutcome> {
  const started = Date.now();
  const type = await scoped(ctx, 'contact_types').where({ id: input.contactTypeId }).whereNull('deleted_at').first('id');
  if (!type) throw invalid({ contact_type_id: ['The selected contact type id is invalid.'] });
  const encoding = await sniffCsv(input.filePath);
  const [customFields, countries] = await Promise.all([loadCustomFields(ctx), countryLookup(ctx)]);
  const [record] = await ctx
    .db('contact_imports')
    .insert({ user_id: ctx.userId, contact_type_id: input.contactTypeId, file_name: input.fileName.slice(0, 255), status: 'running' })
    .returning(['id']);
  const importId = record.id as number;
  const staging = `contact_import_${importId}`;
  const rows = new RowsToCopy(customFields, countries);
  const client = (await ctx.db.client.acquireConnection()) as PoolClient;
  try {
    await client.query('BEGIN');
    // The upsert sorts a million staged rows by email: keep that sort in memory.
    await client.query(`SET LOCAL work_mem = '256MB'`);
    // Unlogged: nothing of the staging table needs to survive a crash, and it skips the WAL.
    await client.query(`CREATE UNLOGGED TABLE ${staging} (${STAGING_COLUMNS})`);
    const copy = client.query(copyFrom(`COPY ${staging} FROM STDIN`));
    const source = fs.createReadStream(input.filePath, { highWaterMark: 256 * 1024 });
    const parser = parse({
      bom: true,
      relax_column_count: true,
      skip_empty_lines: true,
      max_record_size: MAX_LINE_BYTES,
      info: true,
    });
    const flow =
      encoding === 'utf-8'
        ? pipeline(source, parser, rows, copy)
        : pipeline(source, decodeWindows1252(), parser, rows, copy);
    await flow.catch((err: unknown) => {
      throw parseError(err);
    });
    const result = await client.query(UPSERT_STAGED_CONTACTS(staging), [ctx.userId, input.contactTypeId]);
    const { inserted, updated } = result.rows[0] as { inserted: number; updated: number };
    // Every row that passed the checks was staged; rows whose email appears again further
    // down lose to the last one and count as skipped.
    const duplicates = rows.rowsRead - rows.skipped - Number(inserted) - Number(updated);
    const reasons = rows.reasons;
    if (duplicates > 0 && reasons.length < MAX_REASONS) {
      const dup = await client.query(
        `SELECT row_no FROM (
           SELECT row_no, row_number() OVER (PARTITION BY lower(email) ORDER BY row_no DESC) AS n FROM ${staging}
         ) d WHERE n > 1 ORDER BY row_no LIMIT $1`,
        [MAX_REASONS - reasons.length],
      );
      for (const r of dup.rows as Array<{ row_no: number }>) {
        reasons.push({ row: r.row_no, reason: 'The email appears again further down the file; the last row was used.' });
      }
      reasons.sort((a, b) => a.row - b.row);
    }
    await client.query(`DROP TABLE ${staging}`);
    // Cached segment counts of this type are stale now (see contacts-version.ts).
    await client.query('UPDATE contact_types SET contacts_version = contacts_version + 1 WHERE id = $1', [input.contactTypeId]);
    await client.query('COMMIT');
    const outcome: ImportOutcome = {
      id: importId,
      rowsRead: rows.rowsRead,
      inserted: Number(inserted),
      updated: Number(updated),
      skipped: rows.skipped + duplicates,
      reasons,
      ignoredColumns: rows.columns?.ignored ?? [],
      durationMs: Date.now() - started,
    };
    await ctx.db('contact_imports').where({ id: importId }).update({
      status: 'completed',
      rows_read: outcome.rowsRead,
      inserted: outcome.inserted,
      updated: outcome.updated,
      skipped: outcome.skipped,
      reasons: JSON.stringify(outcome.reasons),
      ignored_columns: JSON.stringify(outcome.ignoredColumns),
      duration_ms: outcome.durationMs,
      finished_at: ctx.db.fn.now(),
    });
    return outcome;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    const message = err instanceof Error ? err.message : String(err);
    await ctx
      .db('contact_imports')
      .where({ id: importId })
      .update({
        status: 'failed',
        rows_read: rows.rowsRead,
        skipped: rows.skipped,
        reasons: JSON.stringify(rows.reasons),
        error: (err as { errors?: unknown }).errors ? JSON.stringify((err as { errors: unknown }).errors).slice(0, 1000) : message.slice(0, 1000),
        duration_ms: Date.now() - started,
        finished_at: ctx.db.fn.now(),
      })
      .catch(() => undefined);
    throw err;
  } finally {
    ctx.db.client.releaseConnection(client);
  }
}
