import fs from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Knex } from 'knex';
import { recordConsent } from '../../consent/record';
import type { PoolClient } from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import type { Ctx } from '../../context';
import { restoreConstraintName } from '../../db/citus';
import { recordAccountEvent } from '../../events/account-events';
import { AppError, invalid } from '../../http/errors';
import { scoped } from '../shared/crud';
import { AddressSet } from './address-set';
import { bytesOf, textOf, trimBytes } from './byte-strings';
import { bumpContactsVersion } from './contacts-version';
import {
  ANALYZE_FOR_MERGE,
  CODE_POINT_COLLATIONS,
  CONTACTS_STATISTICS,
  COPY_INTO_CONTACTS,
  COPY_INTO_STAGING,
  COPY_TYPE_ADDRESSES,
  COUNT_KNOWN_ADDRESSES,
  COUNT_TYPE_CONTACTS,
  HEAP_ORDER,
  HEAP_ORDER_RESET,
  CREATE_STAGING,
  DROP_STAGING,
  LOCK_LIVE_TYPE,
  MERGE_JOINS,
  MERGE_JOINS_RESET,
  MERGE_STAGED,
} from './csv-import.sql';
import { fingerprint, fingerprintColumns } from './contact-fingerprint';
import { CsvFormatError, CsvRecordReader, type CsvDelimiter, type RecordBatch } from './csv-records';
import { mapHeader, RowChecker, type ColumnMap } from './csv-rows';
import { readUpload, sniffCsv, toUtf8, type SniffedCsv } from './csv-sniff';
import { loadCustomFields, type CustomField } from './custom-values';
import { completeImportRecord, failImportRecord, openImportRecord, trackImportProgress, type ImportCounts, type ImportProgress } from './import-history.service';
import { LastRowsOnly, RowRouter, type Routing } from './row-router';
import { trackRunningImport, type RunningImport } from './running-imports';

/**
 * The CSV import (POST /contacts/upload-csv): one file into one contact type, all of it or
 * nothing, in one transaction.
 *
 *   open the upload → open the import record → choose how rows travel → stream the file
 *   (read, check, COPY) → merge the staged rows → close the import record
 *
 * How rows travel: the import knows the type's addresses (an AddressSet loaded at the start)
 * and the file's addresses so far. A row with an address new to both goes straight into
 * `contacts` through one COPY that runs while the file is being read, so PostgreSQL inserts
 * on one core while Node reads on the other. A row that names an existing contact, or an
 * address an earlier row named, is staged and merged once the file is read (MERGE_STAGED).
 * PostgreSQL has the last word: if the unique index says a "new" address exists after all
 * (another session added it, or the set's ASCII lower-casing missed a spelling), or the merge
 * finds the file order ambiguous, the transaction is rolled back and the file is read again
 * with every row staged. Into a type much larger than the file, every row is staged from the
 * start (loading its addresses would cost more than it saves).
 *
 * Limits: the import's statements run under IMPORT_TIMEOUT_MS, counted from the start of the
 * import, not under the per-request DB_QUERY_TIMEOUT_MS. Node's memory stays flat apart from
 * the AddressSet (~16 bytes an address).
 */

/** A line longer than this is not a contact: refuse the file instead of buffering it. */
export const MAX_LINE_CHARS = 1024 * 1024;
/**
 * At most this many addresses (the type's plus the file's) are kept in an AddressSet, ~16
 * bytes each: past it, every row is staged. Keeps Herald's memory bounded whatever the list.
 */
const ADDRESS_SET_MAX = 3_000_000;
/** Loading a type's addresses costs ~1 µs each, staging a row that could have gone straight in ~10 µs. */
const LOAD_ADDRESSES_PER_ROW = 8;
/** Places in the file (its start one of them) and rows at each whose addresses are looked up to size the address set (newAddressesExpected). */
const SAMPLE_POINTS = 8;
const SAMPLE_ROWS_AT = 64;
/** Share of the file's rows added to the new ones the sample predicts, so that a sample a little off does not make the set grow. */
const SAMPLE_MARGIN = 0.1;
/**
 * The file is read 64 KB at a time and every stage holds at most a couple of batches: what is
 * in flight when V8 collects its young generation is promoted to the old one, so bigger
 * chunks made the heap grow by ~60 MB more during a million-row import (bench/README.md).
 */
const READ_CHUNK_BYTES = 64 * 1024;
/** Sorts and hashes of the merge (a million staged rows sort in ~250 MB) and the reference checks' transition tables stay in memory. */
const IMPORT_WORK_MEM = '256MB';
/**
 * `contacts`' statistics are stale for the merge when the table was never analysed, or when
 * more than this share of `reltuples` changed since its last ANALYZE, the rows this import
 * COPY'd included: the column statistics then misjudge how many contacts the account has (an
 * ANALYZE of an empty table stores none). At 1 (more changed than the table held) a list of
 * 2,000 taking 98,000 new rows kept its old statistics and the merge of its 2,000 staged rows
 * ran 97 s on a plan that scanned the account's contacts per row; ANALYZE costs ~1 s at 1,000,000.
 * Autovacuum's own threshold is 10 %, but when it runs is not up to the import.
 */
const STALE_SHARE = 0.2;

export interface ImportOutcome extends ImportCounts {
  id: number;
  durationMs: number;
}

export interface ImportInput {
  contactTypeId: number;
  filePath: string;
  fileName: string;
  /** IMPORT_TIMEOUT_MS: the longest the import may take once the file is uploaded. */
  timeoutMs: number;
  /** The file's delimiter; by default the one its header line uses (csv-sniff.ts). */
  delimiter?: CsvDelimiter;
  /**
   * A column mapping (the dashboard's import): the field name of each of the file's columns in
   * order, read instead of the file's header row, which is then skipped like any header; ''
   * leaves a column out. Names are matched as header cells are (csv-rows.ts mapHeader).
   */
  header?: string[];
  /** The API key or dashboard session importing (src/consent/actor.ts), for the import's consent record. */
  actor?: string | null;
}

interface Upload {
  path: string;
  handle: FileHandle;
  bytes: number;
  sniffed: SniffedCsv;
}

/** An import's state; as a RunningImport, shutdown may stop it (running-imports.ts). */
interface ImportJob extends RunningImport {
  ctx: Ctx;
  actor: string | null;
  importId: number;
  fileName: string;
  typeId: number;
  upload: Upload;
  customFields: CustomField[];
  countries: Map<string, number>;
  started: number;
  deadline: number;
  timeoutMs: number;
  staging: string;
  bytesRead: number;
  /** The last attempt's router (its counts and reasons). */
  rows?: RowRouter;
  delimiter: CsvDelimiter;
  /** ImportInput.header as byte strings (byte-strings.ts), as the reader hands out cells. */
  header?: string[];
}

interface Written {
  inserted: number;
  updated: number;
  unchanged: number;
}

/** Signals that PostgreSQL disagreed with the routing: roll back and stage every row. */
class StageEverything extends Error {}

export async function importContactsCsv(ctx: Ctx, input: ImportInput): Promise<ImportOutcome> {
  const started = Date.now();
  const deadline = started + input.timeoutMs;
  await bounded(ctx, deadline, input.timeoutMs, async (own) => {
    const type = await scoped(own, 'contact_types').where({ id: input.contactTypeId }).whereNull('deleted_at').first('id');
    if (!type) throw invalid({ contact_type_id: ['The selected contact type id is invalid.'] });
  });
  const upload = await openUpload(input.filePath);
  try {
    const job = await openImport(ctx, input, upload, started, deadline);
    const untrack = trackRunningImport(ctx.db, job);
    const progress = trackImportProgress(ctx, job.importId, (): ImportProgress => ({ rowsRead: job.rows?.rowsRead ?? 0, bytesRead: job.bytesRead }));
    try {
      // The record is closed in the import's transaction: it commits with the contacts or not at all.
      const outcome = await writeContacts(job);
      await progress.stop();
      return outcome;
    } catch (err) {
      await progress.stop();
      throw await recordFailure(job, err, started);
    } finally {
      untrack();
    }
  } finally {
    await upload.handle.close();
  }
}

/**
 * The upload, opened once: read through this handle, it stays readable even if the request
 * ends and its temporary file is removed while the import still runs.
 */
async function openUpload(path: string): Promise<Upload> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    return { path, handle, bytes: size, sniffed: await sniffCsv(handle, size) };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * `fn` in a short transaction of its own whose statements are bound by the import's deadline,
 * not DB_QUERY_TIMEOUT_MS: every statement of an import is (the record's completion runs in
 * the import's transaction, see attempt()).
 */
async function bounded<T>(ctx: Ctx, deadline: number, timeoutMs: number, fn: (own: Ctx) => Promise<T>): Promise<T> {
  return ctx.db.transaction(async (trx) => {
    const left = Math.ceil(deadline - Date.now());
    if (left < 1) throw importTimedOut(timeoutMs);
    await trx.raw(`SET LOCAL statement_timeout = ${left}`);
    return fn({ userId: ctx.userId, db: trx });
  });
}

async function openImport(ctx: Ctx, input: ImportInput, upload: Upload, started: number, deadline: number): Promise<ImportJob> {
  // Committed at once: the record must be visible while the import runs.
  const opened = await bounded(ctx, deadline, input.timeoutMs, async (own) => {
    const customFields = await loadCustomFields(own);
    const countries = await countryLookup(own);
    const importId = await openImportRecord(own, { contactTypeId: input.contactTypeId, fileName: input.fileName, fileBytes: upload.bytes });
    return { customFields, countries, importId };
  });
  return {
    ctx,
    importId: opened.importId,
    fileName: input.fileName,
    typeId: input.contactTypeId,
    upload,
    customFields: opened.customFields,
    countries: opened.countries,
    started,
    deadline,
    timeoutMs: input.timeoutMs,
    staging: `contact_import_${opened.importId}`,
    bytesRead: 0,
    delimiter: input.delimiter ?? upload.sniffed.delimiter,
    header: input.header?.map(bytesOf),
    actor: input.actor ?? null,
  };
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

/**
 * Every contact of the file, in one transaction on a connection of its own (COPY needs the
 * raw client; knex's transaction runs on the same one so the shared helpers can join it).
 * A second attempt stages every row (see StageEverything).
 */
async function writeContacts(job: ImportJob): Promise<ImportOutcome> {
  const { db } = job.ctx;
  const client = (await db.client.acquireConnection()) as PoolClient;
  job.backendPid = (client as unknown as { processID: number }).processID;
  try {
    try {
      return await db.transaction((trx) => attempt(job, client, trx, false), { connection: client });
    } catch (err) {
      if (!(err instanceof StageEverything)) throw err;
    }
    return await db.transaction((trx) => attempt(job, client, trx, true), { connection: client });
  } finally {
    job.backendPid = undefined;
    db.client.releaseConnection(client);
  }
}

async function attempt(job: ImportJob, client: PoolClient, trx: Knex.Transaction, stageAll: boolean): Promise<ImportOutcome> {
  const { ctx, typeId } = job;
  await withinDeadline(job, client);
  await client.query(`SET LOCAL work_mem = '${IMPORT_WORK_MEM}'`);
  // Compiling these big one-off statements costs more than it saves.
  await client.query('SET LOCAL jit = off');
  const locked = await client.query(LOCK_LIVE_TYPE, [ctx.userId, typeId]);
  if (locked.rowCount === 0) throw invalid({ contact_type_id: ['The selected contact type id is invalid.'] });
  const known = stageAll ? undefined : await knownAddresses(job, client);
  const direct = known ? await streamFile(job, client, known.set, { direct: true, printed: known.printed }) : await streamFile(job, client, fileAddresses(job), { direct: false });
  const merged = job.rows!.staged > 0 ? await mergeStaged(job, client, known !== undefined, direct) : { inserted: 0, updated: 0, unchanged: 0 };
  await withinDeadline(job, client);
  // Rows the fingerprints found unchanged were never staged: nothing was written for them.
  const outcome = outcomeOf(job, { inserted: direct + merged.inserted, updated: merged.updated, unchanged: merged.unchanged + job.rows!.unchanged });
  // Cached segment counts of this type are stale now (see contacts-version.ts), unless no row changed anything.
  if (outcome.inserted + outcome.updated > 0) await bumpContactsVersion(trx, ctx.userId, [typeId]);
  await completeImportRecord({ userId: ctx.userId, db: trx }, job.importId, { ...outcome, fileBytes: job.upload.bytes });
  // One consent record for the import and its list; the contacts it inserted carry its id (contacts.import_id).
  if (outcome.inserted > 0) {
    await recordConsent(trx, [{ userId: ctx.userId, email: null, contactTypeId: typeId, source: 'import', importId: job.importId, actor: job.actor, consentedAt: new Date() }]);
  }
  // The notice commits with the contacts or not at all; its mail is the worker's (outbox).
  await recordAccountEvent({ db: trx }, ctx.userId, 'contacts.imported', `Contacts imported: ${job.fileName}`, {
    import_id: job.importId,
    file_name: job.fileName,
    contact_type_id: typeId,
    rows_read: outcome.rowsRead,
    inserted: outcome.inserted,
    updated: outcome.updated,
    unchanged: outcome.unchanged,
    skipped: outcome.skipped,
  });
  return outcome;
}

/**
 * Statements of the import stop at its deadline: each gets the time that is left (SET LOCAL:
 * the setting ends with the transaction, the pooled session keeps DB_QUERY_TIMEOUT_MS).
 */
async function withinDeadline(job: ImportJob, client: PoolClient): Promise<void> {
  if (job.stopReason !== undefined) throw new AppError(503, job.stopReason);
  const left = Math.ceil(job.deadline - Date.now());
  if (left < 1) throw importTimedOut(job.timeoutMs);
  await client.query(`SET LOCAL statement_timeout = ${left}`);
}

function importTimedOut(ms: number): AppError {
  const limit = ms >= 60_000 ? `${Math.round(ms / 6000) / 10} min` : `${Math.round(ms / 100) / 10} s`;
  return new AppError(503, `The import took longer than IMPORT_TIMEOUT_MS allows (${limit}); nothing was imported.`);
}

/** The file's addresses alone (every row staged): they still tell which rows lose to a later one. */
function fileAddresses(job: ImportJob): AddressSet {
  return new AddressSet(Math.min(job.upload.sniffed.estimatedRows, ADDRESS_SET_MAX), ADDRESS_SET_MAX);
}

/** The type's addresses, and the columns of the fingerprints it holds (none: every row that names a contact is merged). */
interface Known {
  set: AddressSet;
  printed?: string[];
}

/**
 * The type's addresses when routing pays (module comment), else undefined: every row is
 * staged. An empty type gives an empty set sized for the file. With them, when the file's
 * header can be read and a sampled row changes nothing on its contact (sampleUnchanged), a
 * fingerprint of each contact's values in the file's columns, so that a row that would change
 * nothing is neither staged nor merged (contact-fingerprint.ts).
 */
async function knownAddresses(job: ImportJob, client: PoolClient): Promise<Known | undefined> {
  const fileRows = Math.min(job.upload.sniffed.estimatedRows, ADDRESS_SET_MAX);
  const limit = Math.min(ADDRESS_SET_MAX - fileRows, fileRows * LOAD_ADDRESSES_PER_ROW);
  await client.query(HEAP_ORDER);
  const { rows } = await client.query<{ n: number }>(COUNT_TYPE_CONTACTS, [job.ctx.userId, job.typeId, limit + 1]);
  const existing = rows[0].n;
  if (existing > limit || existing === 0) {
    await client.query(HEAP_ORDER_RESET);
    return existing > limit ? undefined : { set: new AddressSet(fileRows, ADDRESS_SET_MAX) };
  }
  const head = await headOf(job);
  const set = new AddressSet(existing + (await newAddressesExpected(job, client, fileRows, head?.sample ?? [])), ADDRESS_SET_MAX);
  const printed = head && (await sampleUnchanged(job, client, head)) ? fingerprintColumns(head.columns) : undefined;
  if (printed) set.withFingerprints();
  const print = new Int32Array(2);
  await withinDeadline(job, client);
  await eachCopyLine(client, COPY_TYPE_ADDRESSES(job.ctx.userId, job.typeId, printed), (text, start, tab, end) => {
    if (printed) {
      // id, then the fingerprint's text: the address up to the next tab (or the line's end), the values after it.
      const next = text.indexOf('\t', tab + 1);
      fingerprint(text, tab + 1, end, print);
      set.addContact(text.slice(tab + 1, next >= 0 && next < end ? next : end), Number(text.slice(start, tab)), print);
    } else {
      set.addContact(text.slice(tab + 1, end), Number(text.slice(start, tab)));
    }
  });
  await client.query(HEAP_ORDER_RESET);
  return { set, printed };
}

/**
 * Each line of a `COPY … TO STDOUT` of contacts (`id` first), as a byte string (byte-strings.ts,
 * as the file's addresses are): `fn(text, start, tab, end)` gets the line `text[start, end)`
 * and its first tab.
 */
async function eachCopyLine(client: PoolClient, sql: string, fn: (text: string, start: number, tab: number, end: number) => void): Promise<void> {
  await pipeline(client.query(copyTo(sql)), async (chunks: AsyncIterable<Buffer>) => {
    let rest = '';
    for await (const chunk of chunks) {
      const text = rest + chunk.toString('latin1');
      let start = 0;
      for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
        fn(text, start, text.indexOf('\t', start), end);
        start = end + 1;
      }
      rest = text.slice(start);
    }
  });
}

/**
 * Whether a row of the sample (headOf) would change nothing on its contact: only then does the
 * import load the contacts' fingerprints. They cost 8 bytes a slot of the address set (17 MB of
 * 43 at 1,000,000 contacts and 600,000 new addresses, the difference between bench:import's
 * `stale` peaking over and under 200 MB) and the COPY of every value, and spare only rows that
 * change nothing. A file whose unchanged rows the sample misses gets them merged as before (the
 * merge counts them unchanged): time, never a wrong count or contact.
 */
async function sampleUnchanged(job: ImportJob, client: PoolClient, head: Head): Promise<boolean> {
  const checker = new RowChecker(head.columns, job.countries);
  const prints = new Set<string>();
  const addresses = new Set<string>();
  const print = new Int32Array(2);
  for (const r of head.rows) {
    if (checker.check(r.rec, r.plain, r.ascii) !== undefined) continue;
    const text = checker.fingerprintText();
    fingerprint(text, 0, text.length, print);
    prints.add(`${print[0]} ${print[1]}`);
    addresses.add(client.escapeLiteral(textOf(checker.email)));
  }
  if (addresses.size === 0) return false;
  let unchanged = false;
  await withinDeadline(job, client);
  await eachCopyLine(client, COPY_TYPE_ADDRESSES(job.ctx.userId, job.typeId, fingerprintColumns(head.columns), [...addresses]), (text, _start, tab, end) => {
    fingerprint(text, tab + 1, end, print);
    if (prints.has(`${print[0]} ${print[1]}`)) unchanged = true;
  });
  return unchanged;
}

/**
 * How many addresses new to the type the file is expected to bring, for sizing the address
 * set: the file's rows times the share of the sampled addresses (headOf) that the type does
 * not have yet, plus a margin of SAMPLE_MARGIN of the rows. Sizing for every row as new made
 * the set of a re-import of 1,000,000 contacts twice the size it needed (53 MB instead of
 * 29 MB, with fingerprints), most of what the import adds to Herald's memory (bench/README.md,
 * "Log"). A sample that misses the new addresses makes the set grow once while the file is
 * read (its table copied into one twice the size): time and, for that moment, memory — never
 * a wrong answer.
 */
async function newAddressesExpected(job: ImportJob, client: PoolClient, fileRows: number, sample: string[]): Promise<number> {
  // Distinct (the places of a small file's sample overlap); a NUL cannot be in an SQL text (the row checks refuse that row).
  const literals = [...new Set(sample.filter((a) => !a.includes('\0')).map((a) => client.escapeLiteral(textOf(a))))];
  if (literals.length === 0) return fileRows;
  const { rows } = await client.query<{ n: number }>(COUNT_KNOWN_ADDRESSES(job.ctx.userId, job.typeId, literals));
  const newShare = Math.max(0, literals.length - rows[0].n) / literals.length;
  return Math.ceil(fileRows * Math.min(1, newShare + SAMPLE_MARGIN));
}

/**
 * The columns of the file as its header names them, and a sample of its addresses (byte
 * strings) for sizing the address set: SAMPLE_ROWS_AT rows after the header and as many at
 * each of SAMPLE_POINTS - 1 places spread over the file (files are often sorted, old
 * contacts first: the first rows alone said "all known" of a file whose second half was new,
 * and the set then grew to twice its size while the file was read, 236.7 MB at its peak on
 * bench:import's `stale`). Read ahead of the import's pass, which reads everything again.
 * Undefined when the header cannot be read or names no address: that pass then says why.
 */
async function headOf(job: ImportJob): Promise<Head | undefined> {
  const first = await recordsAt(job, 0);
  if (first.length === 0) return undefined;
  let columns: ColumnMap;
  try {
    columns = mapHeader(job.header ?? first[0].rec, job.customFields);
  } catch {
    return undefined;
  }
  const sample: string[] = [];
  const rows: SampledRecord[] = [];
  const take = (records: SampledRecord[]) => {
    for (const r of records.slice(0, SAMPLE_ROWS_AT)) {
      const email = trimBytes(r.rec[columns.email] ?? '');
      if (email) sample.push(email);
      rows.push(r);
    }
  };
  take(first.slice(1));
  for (let i = 1; i < SAMPLE_POINTS; i += 1) take(await recordsAt(job, Math.floor((job.upload.bytes * i) / SAMPLE_POINTS)));
  return { columns, sample, rows };
}

/** A record read ahead of the import's pass, with its RecordBatch flags (csv-records.ts). */
interface SampledRecord {
  rec: string[];
  plain: boolean;
  ascii: boolean;
}

/** The file's columns (headOf), its sampled addresses (byte strings) and the sampled records they came from. */
interface Head {
  columns: ColumnMap;
  sample: string[];
  rows: SampledRecord[];
}

/**
 * The records of READ_CHUNK_BYTES of the upload from `position` (past 0: from the first line
 * that starts there), the last, maybe cut, line left out. A place inside a quoted field that
 * spans lines reads as other records or as none: only the sample suffers (an address it
 * misreads counts as new, which sizes the set as before the sample).
 */
async function recordsAt(job: ImportJob, position: number): Promise<SampledRecord[]> {
  const { buffer, bytesRead } = await job.upload.handle.read(Buffer.alloc(READ_CHUNK_BYTES), 0, READ_CHUNK_BYTES, position);
  const from = position === 0 ? 0 : buffer.indexOf(0x0a) + 1;
  const to = bytesRead < READ_CHUNK_BYTES ? bytesRead : buffer.lastIndexOf(0x0a, bytesRead - 1) + 1;
  if (from <= 0 && position > 0) return [];
  if (to <= from) return [];
  const records: SampledRecord[] = [];
  try {
    const reader = Readable.from([buffer.subarray(from, to)]).pipe(toUtf8(job.upload.sniffed.encoding, () => undefined)).pipe(new CsvRecordReader(MAX_LINE_CHARS, job.delimiter));
    for await (const batch of reader as AsyncIterable<RecordBatch>) batch.records.forEach((rec, k) => records.push({ rec, plain: batch.plain[k], ascii: batch.ascii[k] }));
  } catch {
    // a place inside a quoted field: what was read before it
  }
  return records;
}

/**
 * Reads the whole file through the row checks into one COPY: straight into contacts
 * (`direct`: staged rows wait in a file beside the upload, then go into the staging table;
 * `printed`: the columns of the address set's fingerprints) or into the staging table (every
 * row staged). Returns the rows that COPY took.
 */
async function streamFile(job: ImportJob, client: PoolClient, addresses: AddressSet, how: { direct: boolean; printed?: string[] }): Promise<number> {
  const sidePath = `${job.upload.path}.staged`;
  const side = how.direct ? fs.createWriteStream(sidePath) : undefined;
  const routing: Routing = side ? { mode: 'direct', staged: side, printed: how.printed } : { mode: 'stage-all' };
  const rows = new RowRouter(addresses, routing, { customFields: job.customFields, countries: job.countries, userId: job.ctx.userId, typeId: job.typeId, importId: job.importId, header: job.header });
  job.rows = rows;
  try {
    if (!side) await client.query(CREATE_STAGING(job.staging));
    await withinDeadline(job, client);
    // Progress is this pass's: a second pass reads the file again from its start.
    job.bytesRead = 0;
    const read = [readUpload(job.upload.handle, READ_CHUNK_BYTES), toUtf8(job.upload.sniffed.encoding, (n) => (job.bytesRead += n)), new CsvRecordReader(MAX_LINE_CHARS, job.delimiter), rows] as const;
    // The COPY is sent last, straight into the pipeline: from then on only the pipeline ends
    // it (CopyDone, or CopyFail when a stream fails). A COPY left open holds the connection:
    // the rollback queues behind it and the import never ends.
    const copy = client.query(copyFrom(side ? COPY_INTO_CONTACTS : COPY_INTO_STAGING(job.staging)));
    await pipeline(...read, copy).catch((err: unknown) => {
      throw readError(err, side !== undefined);
    });
    if (side && rows.staged > 0) {
      await new Promise<void>((resolve, reject) => side.end((err?: Error | null) => (err ? reject(err) : resolve())));
      await client.query(CREATE_STAGING(job.staging));
      await withinDeadline(job, client);
      const staged = fs.createReadStream(sidePath, { highWaterMark: READ_CHUNK_BYTES });
      await pipeline(staged, new LastRowsOnly(addresses), client.query(copyFrom(COPY_INTO_STAGING(job.staging))));
    }
    return side ? copy.rowCount : 0;
  } finally {
    addresses.release();
    if (side) {
      side.destroy();
      await fs.promises.rm(sidePath, { force: true });
    }
  }
}

/** Errors while reading and copying, worded for the client; a duplicate the routing missed restarts the import. */
function readError(err: unknown, direct: boolean): unknown {
  if (err instanceof CsvFormatError) {
    if (err.kind === 'too-long') return invalid({ file: [`The file has a line longer than ${MAX_LINE_CHARS / 1024} kilobytes (line ${err.line}).`] });
    return invalid({ file: [`The file is not a valid CSV file (line ${err.line}: ${err.message}).`] });
  }
  restoreConstraintName(err); // COPY runs on the driver's client, where knex's hook (src/db/knex.ts) does not see it
  const e = err as { code?: string; constraint?: string };
  if (direct && e.code === '23505' && e.constraint === 'contacts_type_email_unique') return new StageEverything();
  return err;
}

/**
 * MERGE_STAGED over the staging table, then drops it. `lastRowsOnly`: the staging table holds
 * one row per address as the import's address set sees them (LastRowsOnly).
 */
async function mergeStaged(job: ImportJob, client: PoolClient, lastRowsOnly: boolean, direct: number): Promise<Written> {
  const codePoint = await client.query<{ code_point: boolean }>(CODE_POINT_COLLATIONS);
  const collate = codePoint.rows[0]?.code_point ? 'COLLATE "C"' : '';
  await withinDeadline(job, client);
  if (await statisticsStale(client, direct)) {
    await client.query(ANALYZE_FOR_MERGE(job.staging));
    await withinDeadline(job, client);
  }
  await client.query(MERGE_JOINS);
  const merged = await client
    .query<{ addresses: number; written_here: number; inserted: number; changed: number; ambiguous: number }>(MERGE_STAGED(job.staging, collate, lastRowsOnly), [job.ctx.userId, job.typeId, job.importId])
    .catch((err: unknown) => {
      // Two staged rows of one address after all (spellings the address set told apart).
      throw (err as { code?: string }).code === '21000' ? new StageEverything() : err;
    });
  const m = merged.rows[0];
  if (m.ambiguous > 0) throw new StageEverything();
  await client.query(MERGE_JOINS_RESET);
  await client.query(DROP_STAGING(job.staging));
  // Every staged address is a contact this import wrote from an earlier row, a new contact, or an existing one (changed or not).
  return { inserted: m.inserted, updated: m.changed, unchanged: m.addresses - m.written_here - m.inserted - m.changed };
}

/**
 * Whether the merge would be planned on stale statistics of `contacts`. Planned on none (a
 * fresh database whose first import went straight in by COPY), the merge scanned every
 * contact of the account once per staged row and ran for many minutes (docs/decisions.md,
 * "The import analyses what its merge reads"); autovacuum's ANALYZE comes when it comes.
 * `direct`: rows this import COPY'd into contacts already, not yet known to the statistics.
 */
async function statisticsStale(client: PoolClient, direct: number): Promise<boolean> {
  const { rows } = await client.query<{ reltuples: number; modified: number }>(CONTACTS_STATISTICS);
  const { reltuples, modified } = rows[0];
  return reltuples < 0 || modified + direct > STALE_SHARE * reltuples;
}

/** The import's counts: rows that lost to a later row of the same address count as skipped. */
function outcomeOf(job: ImportJob, written: Written): ImportOutcome {
  const rows = job.rows!;
  const duplicates = rows.rowsRead - rows.invalid - written.inserted - written.updated - written.unchanged;
  return {
    id: job.importId,
    rowsRead: rows.rowsRead,
    inserted: written.inserted,
    updated: written.updated,
    unchanged: written.unchanged,
    skipped: rows.invalid + duplicates,
    reasons: rows.reasons.items,
    ignoredColumns: rows.columns?.ignored ?? [],
    durationMs: Date.now() - job.started,
  };
}

/** Closes the import record as failed and returns the error for the client. */
async function recordFailure(job: ImportJob, err: unknown, started: number): Promise<unknown> {
  const timedOut = (err as { code?: string }).code === '57014' && Date.now() >= job.deadline - 1000;
  // Stopped by shutdown (its statement cancelled, or stopped between two): the reason, not "canceling statement".
  const reported = job.stopReason !== undefined ? new AppError(503, job.stopReason) : timedOut ? importTimedOut(job.timeoutMs) : err;
  const errors = reported instanceof AppError ? reported.errors : undefined;
  const message = errors !== undefined ? (typeof errors === 'string' ? errors : JSON.stringify(errors)) : reported instanceof Error ? reported.message : String(reported);
  const rows = job.rows;
  await failImportRecord(job.ctx, job.importId, {
    rowsRead: rows?.rowsRead ?? 0,
    skipped: rows?.invalid ?? 0,
    reasons: rows?.reasons.items ?? [],
    error: message,
    durationMs: Date.now() - started,
  });
  return reported;
}
