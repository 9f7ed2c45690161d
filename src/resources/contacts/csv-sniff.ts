import { isUtf8 } from 'node:buffer';
import type { FileHandle } from 'node:fs/promises';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { invalid } from '../../http/errors';
import type { CsvDelimiter } from './csv-records';

export type CsvEncoding = 'utf-8' | 'windows-1252';

const NOT_CSV = () => invalid({ file: ['The file must be a file of type: csv.'] });

/** Magic numbers of files people upload by mistake under a .csv name. */
const BINARY_SIGNATURES = [
  [0x50, 0x4b, 0x03, 0x04], // zip, xlsx, docx
  [0x1f, 0x8b], // gzip
  [0x25, 0x50, 0x44, 0x46], // %PDF
  [0xd0, 0xcf, 0x11, 0xe0], // xls, doc
  [0x89, 0x50, 0x4e, 0x47], // png
  [0xff, 0xd8, 0xff], // jpeg
];

export interface SniffedCsv {
  encoding: CsvEncoding;
  /** Rows the whole file holds, judged from the lines of its first 64 KB (a size hint). */
  estimatedRows: number;
  /** The field delimiter its header line uses (sniffDelimiter). */
  delimiter: CsvDelimiter;
}

const DELIMITERS: CsvDelimiter[] = [',', ';', '\t'];

/**
 * The delimiter of a CSV file from the start of its text: whichever of `,`, `;` and tab its
 * first line holds most often outside quotes, `,` when none is more frequent than it (so a
 * file read as comma-separated before is read the same way).
 */
export function sniffDelimiter(text: string): CsvDelimiter {
  const counts = new Map<string, number>(DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === '\n' || c === '\r')) break;
    else if (!quoted && counts.has(c)) counts.set(c, counts.get(c)! + 1);
  }
  let best: CsvDelimiter = ',';
  for (const d of DELIMITERS) if (counts.get(d)! > counts.get(best)!) best = d;
  return best;
}

/**
 * Looks at the start of an upload: binary content (NUL bytes, known binary signatures) is not
 * a CSV whatever its name. Text that is not valid UTF-8 is read as Windows-1252, what Excel
 * writes by default on Western systems.
 */
export async function sniffCsv(handle: FileHandle, fileBytes: number): Promise<SniffedCsv> {
  const buf = Buffer.alloc(64 * 1024);
  const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
  const head = buf.subarray(0, bytesRead);
  if (BINARY_SIGNATURES.some((sig) => sig.every((b, i) => head[i] === b))) throw NOT_CSV();
  if (head.includes(0)) throw NOT_CSV();
  let lines = 0;
  for (let i = head.indexOf(0x0a); i >= 0; i = head.indexOf(0x0a, i + 1)) lines += 1;
  const estimatedRows = Math.ceil((fileBytes / Math.max(1, bytesRead)) * Math.max(1, lines));
  // Every delimiter is ASCII: the bytes as latin1 find it whatever the encoding.
  const delimiter = sniffDelimiter(head.toString('latin1'));
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: bytesRead === buf.length });
    return { encoding: 'utf-8', estimatedRows, delimiter };
  } catch {
    return { encoding: 'windows-1252', estimatedRows, delimiter };
  }
}

/**
 * The upload from its first byte, `chunkBytes` at a time, read at explicit positions through
 * `handle`: every pass over the file gets its own stream, and destroying one (a pass cut
 * short) leaves the handle open for the next. Not `handle.createReadStream()`: destroying that
 * stream closes the FileHandle, `autoClose: false` notwithstanding (it only keeps the stream
 * from destroying itself), so the import's second pass found the upload closed.
 */
export function readUpload(handle: FileHandle, chunkBytes: number): Readable {
  let position = 0;
  return new Readable({
    highWaterMark: chunkBytes,
    read() {
      handle.read(Buffer.allocUnsafeSlow(chunkBytes), 0, chunkBytes, position).then(
        ({ bytesRead, buffer }) => {
          if (this.destroyed) return;
          if (bytesRead === 0) {
            this.push(null);
            return;
          }
          position += bytesRead;
          // A short read (the file's end) is copied: the chunk would keep the whole buffer alive.
          this.push(bytesRead === buffer.length ? buffer : Buffer.from(buffer.subarray(0, bytesRead)));
        },
        (err: Error) => this.destroy(err),
      );
    },
  });
}

/** Bytes at the end of `buf` that begin a UTF-8 sequence the buffer does not complete (0–3). */
function unfinishedTail(buf: Buffer): number {
  for (let back = 1; back <= Math.min(3, buf.length); back += 1) {
    const b = buf[buf.length - back];
    if ((b & 0xc0) === 0x80) continue;
    const needed = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return needed > back ? back : 0;
  }
  return 0;
}

/**
 * The upload as valid UTF-8, chunk by chunk (what CsvRecordReader reads): a Windows-1252 file
 * re-encoded, a UTF-8 file as it is, except that a stray invalid byte past the sniffed start
 * becomes U+FFFD as any decoder would (PostgreSQL would refuse the whole file). `onBytes`
 * hears how many bytes of the upload each chunk was.
 */
export function toUtf8(encoding: CsvEncoding, onBytes: (n: number) => void): Transform {
  const decoder = new TextDecoder(encoding === 'utf-8' ? 'utf-8' : 'windows-1252');
  let carry: Buffer | undefined;
  return new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
      onBytes(chunk.length);
      if (encoding !== 'utf-8') {
        done(null, Buffer.from(decoder.decode(chunk, { stream: true }), 'utf8'));
        return;
      }
      const buf = carry ? Buffer.concat([carry, chunk]) : chunk;
      const cut = buf.length - unfinishedTail(buf);
      carry = cut < buf.length ? Buffer.from(buf.subarray(cut)) : undefined;
      const body = buf.subarray(0, cut);
      done(null, isUtf8(body) ? body : Buffer.from(decoder.decode(body), 'utf8'));
    },
    flush(done: TransformCallback) {
      const rest = encoding === 'utf-8' ? decoder.decode(carry ?? new Uint8Array(0)) : decoder.decode();
      done(null, rest ? Buffer.from(rest, 'utf8') : undefined);
    },
  });
}
