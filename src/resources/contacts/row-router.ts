import { once } from 'node:events';
import { Transform, type TransformCallback, type Writable } from 'node:stream';
import type { AddressSet } from './address-set';
import type { RecordBatch } from './csv-records';
import { mapHeader, NO_EMAIL_COLUMN, RowChecker, type ColumnMap } from './csv-rows';
import type { CustomField } from './custom-values';
import type { ImportReason } from './import-history.service';

export const MAX_REASONS = 20;
const DUPLICATE = 'The email appears again further down the file; the last row was used.';
/** Lines are handed on in chunks of about this many characters (per-chunk overhead off the hot path). */
const CHUNK_CHARS = 64 * 1024;

/**
 * `direct`: rows with an address new to the type and to the file so far are this stream's
 * output (COPY into contacts); the others go to `staged`. `stage-all`: every row is this
 * stream's output (COPY into the staging table).
 */
export type Routing = { mode: 'direct'; staged: Writable } | { mode: 'stage-all' };

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
  readonly reasons = new ReasonList();
  columns?: ColumnMap;
  private checker?: RowChecker;
  private out = '';
  private side = '';
  private readonly prefix: string;

  constructor(
    private readonly addresses: AddressSet,
    private readonly routing: Routing,
    private readonly lookups: { customFields: CustomField[]; countries: Map<string, number>; userId: number; typeId: number },
  ) {
    super({ writableObjectMode: true, readableObjectMode: false, writableHighWaterMark: 4 });
    this.prefix = `${lookups.userId}\t${lookups.typeId}\t`;
  }

  override _transform(batch: RecordBatch, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      const { records, lines, plain } = batch;
      for (let k = 0; k < records.length; k += 1) {
        if (this.checker) this.route(records[k], lines[k], plain[k]);
        else this.readHeader(records[k]);
      }
      if (this.out.length >= CHUNK_CHARS) this.flushOut();
      if (this.side.length >= CHUNK_CHARS) {
        this.writeSide(done);
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
    this.flushOut();
    if (this.side) this.writeSide(done);
    else done();
  }

  private readHeader(rec: string[]): void {
    this.columns = mapHeader(rec, this.lookups.customFields);
    this.checker = new RowChecker(this.columns, this.lookups.countries);
  }

  private route(rec: string[], row: number, plain: boolean): void {
    this.rowsRead += 1;
    const checker = this.checker!;
    const reason = checker.check(rec, plain);
    if (reason !== undefined) {
      this.invalid += 1;
      this.reasons.add(row, reason);
      return;
    }
    const seen = this.addresses.visit(checker.email, row);
    if (seen.previousRow > 0) this.reasons.add(seen.previousRow, DUPLICATE);
    if (this.routing.mode === 'stage-all') {
      this.out += checker.stagedLine(row, seen.contactId);
      this.staged += 1;
    } else if (seen.contactId === 0 && seen.previousRow === 0) {
      this.out += checker.contactLine(this.prefix);
      this.direct += 1;
    } else {
      this.side += checker.stagedLine(row, seen.contactId);
      this.staged += 1;
    }
  }

  private flushOut(): void {
    if (!this.out) return;
    this.push(this.out);
    this.out = '';
  }

  /** Hands the staged lines to the side file, calling `done` once it can take more (its backpressure). */
  private writeSide(done: TransformCallback): void {
    if (this.routing.mode !== 'direct') {
      done();
      return;
    }
    const target = this.routing.staged;
    const ok = target.write(this.side);
    this.side = '';
    if (ok) done();
    else once(target, 'drain').then(() => done(), done);
  }
}
