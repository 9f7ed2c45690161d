import { once } from 'node:events';
import type { Response } from 'express';

/** Text collected before a write: one write (one system call) per ≈64 kB, not per batch. */
const FLUSH_BYTES = 64 * 1024;

/**
 * Writes `{"status":"success","message":{"<key>":[…]}}` batch by batch, so a list of a
 * million contacts goes out with flat memory (the spec's lists return everything). Honours
 * backpressure. A list that fits in one flush goes out in one piece with a Content-Length.
 * Once the first byte is out an error can no longer become an envelope: the connection is
 * cut instead, so a client never mistakes a truncated list for a whole one.
 */
export async function streamList(res: Response, key: string, batches: AsyncIterable<unknown[]>): Promise<void> {
  let pending = `{"status":"success","message":{${JSON.stringify(key)}:[`;
  let first = true;
  let started = false;
  try {
    for await (const rows of batches) {
      if (rows.length === 0) continue;
      pending += (first ? '' : ',') + rows.map((r) => JSON.stringify(r)).join(',');
      first = false;
      if (pending.length < FLUSH_BYTES) continue;
      if (!started) res.status(200).type('application/json');
      started = true;
      const drained = res.write(pending);
      pending = '';
      if (!drained) await once(res, 'drain');
      if (res.destroyed) return;
    }
  } catch (err) {
    if (started) res.destroy(err as Error);
    throw err;
  }
  if (!started) res.status(200).type('application/json');
  res.end(pending + ']}}');
}

/**
 * Keyset batches newest first: `fetch(afterId)` returns rows with `id` below it, ordered by id
 * desc. With `batchSize` (the fetch's LIMIT), a short batch is known to be the last one.
 */
export async function* keysetBatches<T extends { id: number }>(
  fetch: (beforeId: number | undefined) => Promise<T[]>,
  batchSize = Infinity,
): AsyncGenerator<T[]> {
  let before: number | undefined;
  for (;;) {
    const rows = await fetch(before);
    if (rows.length === 0) return;
    yield rows;
    if (rows.length < batchSize) return;
    before = rows[rows.length - 1].id;
  }
}
