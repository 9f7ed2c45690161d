import http from 'node:http';
import { randomBytes } from 'node:crypto';

/**
 * A CSV import uploaded the way a slow or large client does it: a multipart body written in
 * chunks as it is generated (chunked transfer encoding, never held whole in memory), so the
 * test can act — SIGTERM the server — while the upload is in progress.
 */
export interface UploadOptions {
  /** `http://127.0.0.1:<port>` of a `herald serve`. */
  baseUrl: string;
  headers: Record<string, string>;
  contactTypeId: number;
  rows: number;
  /** Address of row i (1-based). */
  email: (i: number) => string;
  rowsPerChunk?: number;
  /** Pause between chunks (a slow client). */
  paceMs?: number;
  /** Called after each chunk with the rows written so far. */
  onProgress?: (rowsWritten: number) => void;
}

export type UploadResult =
  | { kind: 'response'; status: number; body: unknown; rowsWritten: number }
  | { kind: 'error'; error: string; rowsWritten: number };

export function uploadCsv(opts: UploadOptions): Promise<UploadResult> {
  const boundary = `----herald-fault-${randomBytes(8).toString('hex')}`;
  const perChunk = opts.rowsPerChunk ?? 2000;
  const head =
    `--${boundary}\r\nContent-Disposition: form-data; name="contact_type_id"\r\n\r\n${opts.contactTypeId}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="contacts.csv"\r\nContent-Type: text/csv\r\n\r\n` +
    'email,first_name,last_name,city\n';
  const tail = `\r\n--${boundary}--\r\n`;
  let written = 0;
  return new Promise<UploadResult>((resolve) => {
    let settled = false;
    const settle = (r: UploadResult) => {
      if (!settled) {
        settled = true;
        resolve(r);
      }
    };
    const req = http.request(`${opts.baseUrl}/contacts/upload-csv`, {
      method: 'POST',
      headers: { ...opts.headers, 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: kept as text for the failure message
        }
        settle({ kind: 'response', status: res.statusCode ?? 0, body, rowsWritten: written });
      });
      res.on('error', (err) => settle({ kind: 'error', error: err.message, rowsWritten: written }));
    });
    req.on('error', (err) => settle({ kind: 'error', error: `${(err as NodeJS.ErrnoException).code ?? ''} ${err.message}`.trim(), rowsWritten: written }));

    const write = (data: string) =>
      new Promise<void>((ok) => {
        if (req.destroyed) return ok();
        if (req.write(data)) ok();
        else req.once('drain', ok);
      });
    void (async () => {
      await write(head);
      while (written < opts.rows && !req.destroyed && !settled) {
        const upto = Math.min(opts.rows, written + perChunk);
        let text = '';
        for (let i = written + 1; i <= upto; i += 1) text += `${opts.email(i)},First${i},Last${i},Town ${i % 97}\n`;
        await write(text);
        written = upto;
        opts.onProgress?.(written);
        if (opts.paceMs) await new Promise((r) => setTimeout(r, opts.paceMs));
      }
      if (!req.destroyed && !settled) req.end(tail);
    })();
  });
}
