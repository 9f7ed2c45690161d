import type { Response } from 'express';

/**
 * Writing a CSV download (GET /contacts/export): the cells, and the stream with its failure rule.
 *
 * Formula neutralisation (OWASP, "CSV Injection"): a spreadsheet runs a cell that starts with
 * `=`, `+`, `-` or `@` (and, in some, a tab or carriage return before one) as a formula. Such a
 * value is written with a leading `'`, which spreadsheets show as text. A plain number (`-5`,
 * `+3.2`) is left alone: a spreadsheet reads it as that number, never as a formula, and a
 * negative number field must come back through the import as a number.
 */
const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^[+-]?(?:\d+(?:\.\d+)?|\.\d+)$/;

/** Text collected before a write: one write per ≈64 kB, not per row. */
const FLUSH_BYTES = 64 * 1024;

/** One CSV cell: neutralised, then quoted as RFC 4180 says when it holds a comma, a quote or a line break. */
export function csvCell(value: string | null | undefined): string {
  let v = value ?? '';
  if (FORMULA_START.test(v) && !PLAIN_NUMBER.test(v)) v = `'${v}`;
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/** Until the response can take more, or the client has gone (then `res.destroyed`). */
function writable(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Streams `header` and the records of `batches` as a CSV attachment, honouring backpressure.
 *
 * The first batch is read before anything is written, so a failure up to there (the database,
 * a lookup) throws with no header sent and the caller answers the JSON envelope. A failure
 * after that cannot become an envelope: the connection is cut (`res.destroy`) and the error
 * thrown on, for the error handler to log. Each record is written after a line break and the
 * file's last line break only once every record is out, so a cut file never ends as a whole
 * one does, even for a client that ignores the broken transfer.
 */
export async function streamCsv(res: Response, fileName: string, header: string[], batches: AsyncIterable<string[][]>): Promise<void> {
  const iterator = batches[Symbol.asyncIterator]();
  let next = await iterator.next();
  res.status(200).type('text/csv; charset=utf-8').attachment(fileName);
  let pending = header.map(csvCell).join(',');
  try {
    while (!next.done) {
      for (const record of next.value) pending += `\r\n${record.map(csvCell).join(',')}`;
      if (pending.length >= FLUSH_BYTES) {
        const drained = res.write(pending);
        pending = '';
        if (!drained) await writable(res);
        if (res.destroyed) {
          // The client went away: stop reading (nothing failed, nothing to log).
          await iterator.return?.();
          return;
        }
      }
      next = await iterator.next();
    }
  } catch (err) {
    res.destroy(err as Error);
    throw err;
  }
  res.end(`${pending}\r\n`);
}
