import { once } from 'node:events';
import { Transform, type TransformCallback, type Writable } from 'node:stream';
import type { AddressSet } from './address-set';
import { fingerprint, fingerprintColumns } from './contact-fingerprint';
import type { RecordBatch } from './csv-records';
import { mapHeader, NO_EMAIL_COLUMN, RowChecker, type ColumnMap } from './csv-rows';
import type { CustomField } from './custom-values';
import type { ImportReason } from './import-history.service';

export const MAX_REASONS = 20;
const DUPLICATE = 'The email appears again further down the file; the last row was used.';
/** Lines are handed on in chunks of this many bytes (per-chunk overhead off the hot path). */
const CHUNK_BYTES = 32 * 1024;

/**
 * COPY lines (byte strings) written straight into chunk-sized Buffers: no string is built
 * per chunk, so nothing has to be flattened and copied again when it is handed on.
 */
class LineChunks {
  /** Filled chunks waiting to be handed on. */
  readonly full: Buffer[] = [];
  private buf = Buffer.allocUnsafe(CHUNK_BYTES);
  private used = 0;

  add(line: string): void {
    if (this.used + line.length > this.buf.length) {
      if (this.used > 0) this.full.push(this.take()!);
      if (line.length > this.buf.length) this.buf = Buffer.allocUnsafe(line.length);
    }
    this.used += this.buf.write(line, this.used, 'latin1');
  }

  /** The lines added since the last take, or undefined when there are none. */
  take(): Buffer | undefined {
    if (this.used === 0) return undefined;
    const chunk = this.buf.subarray(0, this.used);
    this.buf = Buffer.allocUnsafe(CHUNK_BYTES);
    this.used = 0;
    return chunk;
  }
}

/**
 * `direct`: rows with an address new to the type and to the file so far are this stream's
 * output (COPY into contacts); the others go to `staged`, except a row that would change
 * nothing on its contact when `printed` names the columns (fingerprintColumns) whose
 * fingerprints the address set holds. `stage-all`: every row is this stream's output (COPY
 * into the staging table).
 */
export type Routing = { mode: 'direct'; staged: Writable; printed?: string[] } | { mode: 'stage-all' };

/** The skip reasons with the lowest line numbers, at most MAX_REASONS, in line order. */
export class ReasonList {
  readonly items: ImportReason[] = [];

  add(row: number, reason: string): void {
    const items = this.items;
    if (items.length >= MAX_REASONS && row >= items[items.length - 1].row) return;
    if (items.some((r) => r.row === row)) return;
    let at = items.length;
    while (at > 0 && items[at - 1].row > row) at -= 1;
    items.splice(at, 0, { row, reason });
    if (items.length > MAX_REASONS) items.pop();
  }
}

/**
 * Parsed records in, COPY lines out: checks each row (skipped rows are counted, their first
 * reasons kept) and sends it where `routing` says, asking `addresses` whether its address is
 * new, known to the type, or named before by the file (then the earlier row is a duplicate:
 * the last row wins).
 */
export class RowRouter extends Transform {
  rowsRead = 0;
  invalid = 0;
  direct = 0;
  staged = 0;
  /** Rows taken as changing nothing on their contact (neither written nor staged), less those a later row of their address replaced. */
  unchanged = 0;
  readonly reasons = new ReasonList();
  columns?: ColumnMap;
  private checker?: RowChecker;
  private readonly out = new LineChunks();
  private readonly side = new LineChunks();
  private readonly prefix: string;
  /** Whether rows are compared with their contacts' fingerprints (the header has the columns they were made of). */
  private printing = false;
  private readonly print = new Int32Array(2);

  constructor(
    private readonly addresses: AddressSet,
    private readonly routing: Routing,
    /** `header`: names read instead of the file's header row (ImportInput.header). */
    private readonly lookups: { customFields: CustomField[]; countries: Map<string, number>; userId: number; typeId: number; importId: number; header?: string[] },
  ) {
    super({ writableObjectMode: true, readableObjectMode: false, writableHighWaterMark: 2 });
    this.prefix = `${lookups.userId}\t${lookups.typeId}\t${lookups.importId}\t`;
  }

  override _transform(batch: RecordBatch, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      const { records, lines, plain, ascii } = batch;
      for (let k = 0; k < records.length; k += 1) {
        if (this.checker) this.route(records[k], lines[k], plain[k], ascii[k]);
        else this.readHeader(records[k]);
      }
      for (const chunk of this.out.full.splice(0)) this.push(chunk);
      if (this.side.full.length > 0) {
        this.writeSide(this.side.full.splice(0), done);
        return;
      }
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    if (!this.checker) {
      done(NO_EMAIL_COLUMN());
      return;
    }
    for (const chunk of [...this.out.full.splice(0), this.out.take()]) if (chunk) this.push(chunk);
    const side = [...this.side.full.splice(0), this.side.take()].filter((c): c is Buffer => c !== undefined);
    if (side.length > 0) this.writeSide(side, done);
    else done();
  }

  private readHeader(rec: string[]): void {
    this.columns = mapHeader(this.lookups.header ?? rec, this.lookups.customFields);
    this.checker = new RowChecker(this.columns, this.lookups.countries);
    const printed = this.routing.mode === 'direct' ? this.routing.printed : undefined;
    this.printing = printed !== undefined && fingerprintColumns(this.columns).join('\n') === printed.join('\n');
  }

  private route(rec: string[], row: number, plain: boolean, ascii: boolean): void {
    this.rowsRead += 1;
    const checker = this.checker!;
    const reason = checker.check(rec, plain, ascii);
    if (reason !== undefined) {
      this.invalid += 1;
      this.reasons.add(row, reason);
      return;
    }
    const seen = this.addresses.visit(checker.email, row);
    if (seen.previousRow > 0) {
      this.reasons.add(seen.previousRow, DUPLICATE);
      // That row lost to this one: it no longer counts as unchanged (this one is staged and merged).
      if (seen.previousUnchanged) this.unchanged -= 1;
    }
    if (this.routing.mode === 'stage-all') {
      this.out.add(checker.stagedLine(row, seen.contactId));
      this.staged += 1;
    } else if (seen.contactId === 0 && seen.previousRow === 0) {
      this.out.add(checker.contactLine(this.prefix));
      this.direct += 1;
    } else if (this.printing && seen.printed && this.changesNothing(seen.print)) {
      this.addresses.markUnchanged();
      this.unchanged += 1;
    } else {
      this.side.add(checker.stagedLine(row, seen.contactId));
      this.staged += 1;
    }
  }

  /** Whether the checked row's values hash as its contact's did when the import started. */
  private changesNothing(contact: Int32Array): boolean {
    const text = this.checker!.fingerprintText();
    fingerprint(text, 0, text.length, this.print);
    return this.print[0] === contact[0] && this.print[1] === contact[1];
  }

  /** Hands staged lines to the side file, calling `done` once it can take more (its backpressure). */
  private writeSide(chunks: Buffer[], done: TransformCallback): void {
    if (this.routing.mode !== 'direct') {
      done();
      return;
    }
    const target = this.routing.staged;
    let ok = true;
    for (const chunk of chunks) ok = target.write(chunk);
    if (ok) done();
    else once(target, 'drain').then(() => done(), done);
  }
}

/**
 * The staged lines again (STAGING_COLUMNS: line number, contact id, address, …), keeping
 * only the last line of each address: the file's whole story is known once it is read, so
 * the merge no longer has to sort every staged row to find the last one (MERGE_STAGED).
 */
export class LastRowsOnly extends Transform {
  private rest = '';
  kept = 0;

  constructor(private readonly addresses: AddressSet) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const text = this.rest + chunk.toString('latin1');
    const out = new LineChunks();
    let start = 0;
    for (let end = text.indexOf('\n', start); end >= 0; end = text.indexOf('\n', start)) {
      const t1 = text.indexOf('\t', start);
      const t2 = text.indexOf('\t', t1 + 1);
      const t3 = text.indexOf('\t', t2 + 1);
      if (this.addresses.lastRowOf(text.slice(t2 + 1, t3)) === Number(text.slice(start, t1))) {
        out.add(text.slice(start, end + 1));
        this.kept += 1;
      }
      start = end + 1;
    }
    this.rest = text.slice(start);
    for (const c of [...out.full, out.take()]) if (c) this.push(c);
    done();
  }
}
