import type { FileHandle } from 'node:fs/promises';
import { invalid } from '../../http/errors';

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
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: bytesRead === buf.length });
    return { encoding: 'utf-8', estimatedRows };
  } catch {
    return { encoding: 'windows-1252', estimatedRows };
  }
}
