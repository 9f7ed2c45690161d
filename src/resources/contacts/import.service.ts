import fs from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Parser, type Options as CsvOptions } from 'csv-parse';
import type { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Ctx } from '../../context';
import { invalid } from '../../http/errors';
import { scoped } from '../shared/crud';
import { isEmail } from '../../http/fields';
import { decodeWindows1252, sniffCsv } from './csv-sniff';
import { checkCustomValue, loadCustomFields, type CustomField } from './custom-values';
import {
  CODE_POINT_COLLATIONS,
  COPY_INTO_CONTACTS,
  FK_TRIGGERS_SKIPPABLE,
  LOCK_REFERENCES,
  STAGING_COLUMNS,
  TYPE_HAS_CONTACTS,
  UPSERT_STAGED_CONTACTS,
} from './import.sql';

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
const NEEDS_ESCAPE = /[\\\t\n\r]/;
/** A value in COPY's text format (`\N` is NULL). */
function copyValue(v: string | null): string {
  if (v === null) return '\\N';
  return NEEDS_ESCAPE.test(v) ? v.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]) : v;
}

/** Parsed records in batches, each with the CSV line it ended on (what `info.lines` reports). */
interface RecordBatch {
  records: string[][];
  lines: number[];
}
const BATCH_RECORDS = 512;

/**
 * csv-parse's stream, with each record's line number read from the parser's own `info`
 * at the moment it emits the record (the value `info: true` copies into every record).
 * Why not `info: true`: that option builds two objects per record (≈1 s of a million-row
 * import), and one object-mode stream hop per record cost as much again; batches of 512
 * records with a line array cost next to nothing.
 */
class LineNumberedParser extends Parser {
  private batch: RecordBatch = { records: [], lines: [] };

  constructor(options: CsvOptions) {
    super({ ...options, info: false });
  }

  /** The records parsed before a CSV error still reach the row checks (rows_read counts them). */
  override _transform(chunk: Buffer, encoding: BufferEncoding, done: TransformCallback): void {
    super._transform(chunk, encoding, (err?: Error | null) => {
      if (err) this.pushBatch();
      done(err);
    });
  }

  override _flush(done: TransformCallback): void {
    super._flush((err?: Error | null) => {
      if (err) this.pushBatch();
      done(err);
    });
  }

  private pushBatch(): void {
    if (this.batch.records.length === 0) return;
    const full = this.batch;
    this.batch = { records: [], lines: [] };
    super.push(full);
  }

  override push(record: unknown): boolean {
    if (record === null) {
      this.pushBatch();
      return super.push(null);
    }
    this.batch.records.push(record as string[]);
    this.batch.lines.push(this.info.lines);
    if (this.batch.records.length >= BATCH_RECORDS) {
      const full = this.batch;
      this.batch = { records: [], lines: [] };
      return super.push(full);
    }
    return true;
  }
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
  /** Record index of each of TEXT_COLUMNS (staging order), or -1. */
  private textIndex: number[] = [];
  /** Per mapped custom column: its field, record index and `"<id>":` JSON key. */
  private customIndex: Array<{ field: CustomField; i: number; key: string }> = [];
  private buffer = '';
  /** What starts each line, and how a blank cell and "no custom values" are written. */
  private readonly prefix: string;
  private readonly blank: string;
  private readonly noCustom: string;

  /**
   * `into` undefined: lines for the staging table (row number first, blank cells NULL, so
   * the upsert can keep existing values). `into` a user and type: lines for COPY straight
   * into contacts (COPY_INTO_CONTACTS), written as the upsert would insert them.
   */
  constructor(
    private readonly customFields: CustomField[],
    private readonly countries: Map<string, number>,
    into?: { userId: number; typeId: number },
  ) {
    super({ writableObjectMode: true, readableObjectMode: false, writableHighWaterMark: 4 });
    this.prefix = into ? `${into.userId}\t${into.typeId}\t` : '';
    this.blank = into ? '' : '\\N';
    this.noCustom = into ? '{}' : '\\N';
  }

  private skip(row: number, reason: string): undefined {
    this.skipped += 1;
    if (this.reasons.length < MAX_REASONS) this.reasons.push({ row, reason });
    return undefined;
  }

  private setHeader(rec: string[]): void {
    const c = mapHeader(rec, this.customFields);
    this.columns = c;
    this.textIndex = TEXT_COLUMNS.map((name) => c.text.find(([n]) => n === name)?.[1] ?? -1);
    this.customIndex = c.custom.map(([field, i]) => ({ field, i, key: `${JSON.stringify(String(field.id))}:` }));
  }

  /**
   * One record → one COPY line, or a reason to skip it. `row` is the CSV line number. The
   * checks run in the order the reasons are documented: email, alt email, country, text
   * columns and custom values in header order.
   */
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
    let countryId = '\\N';
    if (c.country >= 0) {
      const v = (rec[c.country] ?? '').trim();
      if (v) {
        const found = this.countries.get(v.toLowerCase());
        if (found === undefined) return this.skip(row, `The selected country is invalid (${JSON.stringify(v.slice(0, 100))}).`);
        countryId = String(found);
      }
    }
    for (const [name, i] of c.text) {
      const v = rec[i];
      if (v !== undefined && v.length > 255 && v.trim().length > 255) {
        return this.skip(row, `The ${name.replace(/_/g, ' ')} must not be greater than 255 characters.`);
      }
    }
    let out = `${this.prefix || `${row}\t`}${copyValue(email)}\t${copyValue(altEmail)}\t${countryId}`;
    for (const i of this.textIndex) {
      const v = i < 0 ? '' : (rec[i] ?? '').trim();
      out += v ? `\t${copyValue(v)}` : `\t${this.blank}`;
    }
    // The custom values as a JSON object keyed by field id (jsonb ignores key order).
    let custom = '';
    for (const { field, i, key } of this.customIndex) {
      const v = (rec[i] ?? '').trim();
      if (!v) continue;
      const checked = checkCustomValue(field, v);
      if ('error' in checked) return this.skip(row, checked.error);
      custom += `${custom ? ',' : '{'}${key}${JSON.stringify(checked.value)}`;
    }
    out += custom ? `\t${copyValue(custom + '}')}\n` : `\t${this.noCustom}\n`;
    if (out.includes('\u0000')) return this.skip(row, 'The row contains a NUL character.');
    return out;
  }

  override _transform(batch: RecordBatch, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      const { records, lines } = batch;
      for (let k = 0; k < records.length; k += 1) {
        if (!this.columns) {
          this.setHeader(records[k]);
          continue;
        }
        this.rowsRead += 1;
        const out = this.line(records[k], lines[k]);
        if (out !== undefined) this.buffer += out;
      }
      if (this.buffer.length >= 65_536) {
        this.push(this.buffer);
        this.buffer = '';
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

/**
 * Lets the import write contacts without PostgreSQL's per-row foreign-key triggers when that
 * is provably the same: every contact of the file has the same user and type, and countries
 * come from the lookup above. The triggers cost three index probes and row locks per contact
 * (12 of the 22 s of a million-row upsert, measured with EXPLAIN ANALYZE); instead the rows
 * they would lock (the account, the contact type, every country) are locked here once, FOR
 * KEY SHARE as the triggers do, before anything is written. Only where the role may set
 * session_replication_role (a superuser, as the embedded database's is, or a role granted
 * SET on it) and contacts has no trigger the setting would also silence; otherwise, or if a
 * referenced row has vanished meanwhile, the triggers run and report as before. SET LOCAL:
 * the setting cannot outlive the transaction.
 */
async function skipForeignKeyTriggers(client: PoolClient, userId: number, typeId: number, countryIds: Set<number>): Promise<boolean> {
  const version = await client.query<{ v: number }>(`SELECT current_setting('server_version_num')::int AS v`);
  const canSet =
    version.rows[0].v >= 150000
      ? `current_setting('is_superuser') = 'on' OR has_parameter_privilege('session_replication_role', 'SET')`
      : `current_setting('is_superuser') = 'on'`;
  const check = await client.query<{ skippable: boolean }>(FK_TRIGGERS_SKIPPABLE(canSet));
  if (!check.rows[0].skippable) return false;
  const locked = await client.query<{ found: string }>(LOCK_REFERENCES, [userId, typeId, [...countryIds]]);
  if (Number(locked.rows[0].found) !== 2 + countryIds.size) return false;
  await client.query('SET LOCAL session_replication_role = replica');
  return true;
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

const PARSE_OPTIONS: CsvOptions = {
  bom: true,
  relax_column_count: true,
  skip_empty_lines: true,
  max_record_size: MAX_LINE_BYTES,
};

/** The upload → csv-parse → row checks → one COPY statement; resolves to the rows COPY took. */
async function copyFile(client: PoolClient, filePath: string, encoding: string, rows: RowsToCopy, copySql: string): Promise<number> {
  const copy = client.query(copyFrom(copySql));
  const source = fs.createReadStream(filePath, { highWaterMark: 256 * 1024 });
  const parser = new LineNumberedParser(PARSE_OPTIONS);
  await (encoding === 'utf-8' ? pipeline(source, parser, rows, copy) : pipeline(source, decodeWindows1252(), parser, rows, copy));
  return copy.rowCount;
}

/**
 * Imports a CSV file into a contact type, atomically: csv-parse → row checks → COPY into an
 * unlogged staging table → one set-based upsert (sorted by the unique key) → commit. Memory
 * stays flat: records stream through with backpressure from PostgreSQL. Returns the counts
 * (also kept in contact_imports).
 *
 * A contact type without contacts takes a shorter road with the same outcome: the checked
 * rows COPY straight into contacts, so PostgreSQL inserts while csv-parse is still reading
 * (both cores busy, no staging table, sort or upsert); a million rows went from 29.7 s to
 * within 75 % of a raw COPY's time (bench/README.md).
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
  let rows = new RowsToCopy(customFields, countries);
  const client = (await ctx.db.client.acquireConnection()) as PoolClient;
  try {
    await client.query('BEGIN');
    // The upsert sorts a million staged rows by email: keep that sort in memory.
    await client.query(`SET LOCAL work_mem = '256MB'`);
    const skipTriggers = await skipForeignKeyTriggers(client, ctx.userId, input.contactTypeId, new Set(countries.values()));
    let written: { inserted: number; updated: number } | undefined;
    if ((await client.query(TYPE_HAS_CONTACTS, [input.contactTypeId])).rows[0].has_contacts === false) {
      // Nothing to update: COPY straight into contacts, while the file is still being
      // parsed, unless the file names an address twice (the unique index says so; then
      // the savepoint undoes it and the staged upsert below decides which row wins).
      rows = new RowsToCopy(customFields, countries, { userId: ctx.userId, typeId: input.contactTypeId });
      await client.query('SAVEPOINT direct_copy');
      try {
        const inserted = await copyFile(client, input.filePath, encoding, rows, COPY_INTO_CONTACTS);
        await client.query('RELEASE SAVEPOINT direct_copy');
        written = { inserted, updated: 0 };
      } catch (err) {
        if ((err as { code?: string }).code !== '23505') throw parseError(err);
        await client.query('ROLLBACK TO SAVEPOINT direct_copy');
        rows = new RowsToCopy(customFields, countries);
      }
    }
    if (!written) {
      // Unlogged: nothing of the staging table needs to survive a crash, and it skips the WAL.
      await client.query(`CREATE UNLOGGED TABLE ${staging} (${STAGING_COLUMNS})`);
      await copyFile(client, input.filePath, encoding, rows, `COPY ${staging} FROM STDIN`).catch((err: unknown) => {
        throw parseError(err);
      });
      const codePoint = await client.query<{ code_point: boolean }>(CODE_POINT_COLLATIONS);
      const collate = codePoint.rows[0]?.code_point ? 'COLLATE "C"' : '';
      const result = await client.query(UPSERT_STAGED_CONTACTS(staging, collate), [ctx.userId, input.contactTypeId]);
      written = result.rows[0] as { inserted: number; updated: number };
    }
    if (skipTriggers) await client.query('SET LOCAL session_replication_role = origin');
    const { inserted, updated } = written;
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
    await client.query(`DROP TABLE IF EXISTS ${staging}`);
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
