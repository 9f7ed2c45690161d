import { Transform, type TransformCallback } from 'node:stream';

/**
 * The CSV reader of the import: decoded text in, records out (RFC 4180: `,` between fields,
 * `"` around a field that holds commas, quotes or line breaks, `""` for a quote inside one).
 * The delimiter may be `;` or a tab instead of `,` (what spreadsheets in many locales write;
 * csv-sniff.ts tells which from the header line).
 *
 * Why not csv-parse: on a million-row file it took 4.5 s of the import's one Node core (a
 * profile of the import: csv-parse's own parse loop 3.4 s, slicing and decoding 0.8 s), more
 * than PostgreSQL needs to store the rows, so it set the import's pace. This reader scans the
 * text with charCodeAt and slices fields out of it, a few times faster (bench/README.md).
 *
 * Where it is more lenient than csv-parse: a quote inside an unquoted field is kept as a
 * character (`5" screen`), and spaces after a closing quote are ignored. Line breaks may be
 * `\n`, `\r\n` or `\r`. Lines with nothing on them are skipped; rows may have any number of
 * fields; a UTF-8 byte order mark is dropped.
 *
 * It reads valid UTF-8 (csv-sniff.ts makes sure) and hands out fields as byte strings
 * (byte-strings.ts): every delimiter is ASCII, so no character is ever split.
 */

/** Records in the order of the file, each with the CSV line it ended on (a quoted field may span lines). */
export interface RecordBatch {
  records: string[][];
  lines: number[];
  /**
   * Per record: no field has a backslash, tab, NUL or line break, so the fields go into COPY's
   * text format as they are (the common case; checking the record once is cheaper than
   * checking each field).
   */
  plain: boolean[];
  /** Per record: every byte is ASCII, so each field's bytes are its characters (byte-strings.ts). */
  ascii: boolean[];
}

/** The field delimiters a file may use. */
export type CsvDelimiter = ',' | ';' | '\t';

export type CsvErrorKind = 'unclosed-quote' | 'after-quote' | 'too-long';

/** A file that is not CSV as this reader understands it; `line` is where the problem is. */
export class CsvFormatError extends Error {
  constructor(
    readonly kind: CsvErrorKind,
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

const QUOTE = 34;
const LF = 10;
const CR = 13;
const SPACE = 32;
const TAB = 9;
const NOT_PLAIN = /[\\\t\0]/;
const NOT_ASCII = /[\u0080-\u00ff]/;
const BATCH_RECORDS = 128;

/** Outcome of reading one record at a position of the text. */
const INCOMPLETE = -1;

/** The UTF-8 byte order mark as a byte string. */
const BOM = '\u00ef\u00bb\u00bf';

/**
 * UTF-8 bytes in, batches of records out. The records read before an error still come out
 * first: the import counts them.
 */
export class CsvRecordReader extends Transform {
  /** Text of a record that the chunks so far did not complete. */
  private rest = '';
  /** Line the next record starts on. */
  private line = 1;
  private started = false;
  private batch: RecordBatch = { records: [], lines: [], plain: [], ascii: [] };
  /** What readRecord found: the fields, the line the record ended on, whether a field spans lines. */
  private fields: string[] = [];
  private recordLine = 0;
  private multiline = false;
  /** What readQuoted found: the field's text and the line breaks in it. */
  private quoted = '';
  private quotedLines = 0;

  /** The delimiter's character code. */
  private readonly delim: number;

  constructor(
    private readonly maxRecordChars: number,
    private readonly delimiter: CsvDelimiter = ',',
  ) {
    super({ writableObjectMode: false, readableObjectMode: true, readableHighWaterMark: 2 });
    this.delim = delimiter.charCodeAt(0);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.guarded(done, () => this.readText(chunk.toString('latin1'), false));
  }

  override _flush(done: TransformCallback): void {
    this.guarded(done, () => {
      this.readText('', true);
      this.pushBatch();
    });
  }

  private guarded(done: TransformCallback, read: () => void): void {
    try {
      read();
      done();
    } catch (err) {
      this.pushBatch();
      done(err as Error);
    }
  }

  private readText(chunk: string, final: boolean): void {
    let text = this.rest + chunk;
    if (!this.started) {
      // Read nothing before the BOM question is settled: a short first record read early would
      // leave a U+FEFF starting the next chunk to be taken for a BOM.
      if (text.length < BOM.length && !final) {
        this.rest = text;
        return;
      }
      this.started = true;
      if (text.startsWith(BOM)) text = text.slice(BOM.length);
    }
    let pos = 0;
    while (pos < text.length) {
      const startLine = this.line;
      const end = this.readRecord(text, pos, final);
      if (end === INCOMPLETE) break;
      // readRecord has moved `line` past the record: report the line the record starts on.
      if (end - pos > this.maxRecordChars) throw this.tooLong(startLine);
      const emptyLine = this.fields.length === 1 && this.fields[0] === '' && end - pos <= 2 && !this.multiline && text.charCodeAt(pos) !== QUOTE;
      if (!emptyLine) this.emit_(text, pos, end);
      pos = end;
    }
    this.rest = text.slice(pos);
    // Never buffer more than one record's worth of an unfinished line.
    if (this.rest.length > this.maxRecordChars) throw this.tooLong();
  }

  private tooLong(line = this.line): CsvFormatError {
    return new CsvFormatError('too-long', line, `a line longer than ${this.maxRecordChars} characters`);
  }

  private emit_(text: string, start: number, end: number): void {
    const b = this.batch;
    b.records.push(this.fields);
    b.lines.push(this.recordLine);
    const raw = text.slice(start, end);
    b.plain.push(!this.multiline && !NOT_PLAIN.test(raw));
    b.ascii.push(!NOT_ASCII.test(raw));
    this.fields = [];
    if (b.records.length >= BATCH_RECORDS) this.pushBatch();
  }

  private pushBatch(): void {
    if (this.batch.records.length === 0) return;
    this.push(this.batch);
    this.batch = { records: [], lines: [], plain: [], ascii: [] };
  }

  /**
   * Reads the record starting at `pos` into `fields`; returns where the next one starts,
   * or INCOMPLETE when the text ends inside it (and more may follow). Advances `line` past
   * the record and sets `recordLine` to the line it ended on.
   */
  private readRecord(text: string, pos: number, final: boolean): number {
    // Most lines hold no quote: split them with the string built-ins.
    const lf = text.indexOf('\n', pos);
    if (lf >= 0) {
      const line = text.slice(pos, lf > pos && text.charCodeAt(lf - 1) === CR ? lf - 1 : lf);
      if (!line.includes('"') && !line.includes('\r')) {
        this.fields = line.split(this.delimiter);
        this.multiline = false;
        this.recordLine = this.line;
        this.line += 1;
        return lf + 1;
      }
    }
    const fields: string[] = [];
    let line = this.line;
    this.multiline = false;
    const n = text.length;
    for (;;) {
      let value: string;
      if (pos < n && text.charCodeAt(pos) === QUOTE) {
        const q = this.readQuoted(text, pos + 1, final, line);
        if (q === INCOMPLETE) return INCOMPLETE;
        value = this.quoted;
        line += this.quotedLines;
        pos = q;
      } else {
        let j = pos;
        for (; j < n; j += 1) {
          const c = text.charCodeAt(j);
          if (c === this.delim || c === LF || c === CR) break;
        }
        if (j === n && !final) return INCOMPLETE;
        value = text.slice(pos, j);
        pos = j;
      }
      fields.push(value);
      if (pos >= n) break;
      const c = text.charCodeAt(pos);
      if (c === this.delim) {
        pos += 1;
        continue;
      }
      // A record ends at LF, CRLF or a lone CR; a CR at the end of the text may be half of a CRLF.
      if (c === CR) {
        if (pos + 1 >= n && !final) return INCOMPLETE;
        pos += pos + 1 < n && text.charCodeAt(pos + 1) === LF ? 2 : 1;
      } else {
        pos += 1;
      }
      break;
    }
    this.fields = fields;
    this.recordLine = line;
    this.line = line + 1;
    return pos;
  }

  /** The quoted field whose text starts at `pos` (after the opening quote); returns the position after it. */
  private readQuoted(text: string, pos: number, final: boolean, line: number): number {
    let value = '';
    const n = text.length;
    for (;;) {
      const q = text.indexOf('"', pos);
      if (q < 0 || q + 1 >= n) {
        if (!final) return INCOMPLETE;
        if (q < 0) throw new CsvFormatError('unclosed-quote', line, 'a quoted field is never closed');
      }
      value += text.slice(pos, q);
      if (q + 1 < n && text.charCodeAt(q + 1) === QUOTE) {
        value += '"';
        pos = q + 2;
        continue;
      }
      pos = q + 1;
      break;
    }
    // Blanks after the closing quote are skipped, unless the blank is the delimiter (a tab).
    while (pos < n && (text.charCodeAt(pos) === SPACE || (text.charCodeAt(pos) === TAB && this.delim !== TAB))) pos += 1;
    if (pos >= n && !final) return INCOMPLETE;
    const next = pos < n ? text.charCodeAt(pos) : this.delim;
    this.quotedLines = countLineBreaks(value);
    if (next !== this.delim && next !== LF && next !== CR) {
      throw new CsvFormatError('after-quote', line + this.quotedLines, `a closing quote is followed by ${JSON.stringify(text.slice(pos, pos + 10))}`);
    }
    if (this.quotedLines > 0 || value.includes('\r')) this.multiline = true;
    this.quoted = value;
    return pos;
  }
}

/** Line breaks in a field's text (LF, CRLF and lone CR count once each). */
function countLineBreaks(value: string): number {
  let count = 0;
  for (let i = value.indexOf('\n'); i >= 0; i = value.indexOf('\n', i + 1)) count += 1;
  for (let i = value.indexOf('\r'); i >= 0; i = value.indexOf('\r', i + 1)) {
    if (value.charCodeAt(i + 1) !== LF) count += 1;
  }
  return count;
}
