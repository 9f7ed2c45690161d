import { once } from 'node:events';
import type { Response } from 'express';

/**
 * Writes `{"status":"success","message":{"<key>":[…]}}` batch by batch, so a list of a
 * million contacts goes out with flat memory (the spec's lists return everything). Honours
 * backpressure. Once the first byte is out an error can no longer become an envelope: the
 * connection is cut instead, so a client never mistakes a truncated list for a whole one.
 */
export async function streamList(res: Response, key: string, batches: AsyncIterable<unknown[]>): Promise<void> {
  res.status(200).type('application/json');
  res.write(`{"status":"success","message":{${JSON.stringify(key)}:[`);
  let first = true;
  try {
    for await (const rows of batches) {
      if (rows.length === 0) continue;
      const chunk = (first ? '' : ',') + rows.map((r) => JSON.stringify(r)).join(',');
      first = false;
      if (!res.write(chunk)) await once(res, 'drain');
      if (res.destroyed) return;
    }
  } catch (err) {
    res.destroy(err as Error);
    throw err;
  }
  res.end(']}}');
}

/** Keyset batches newest first: `fetch(afterId)` returns rows with `id` below it, ordered by id desc. */
export async function* keysetBatches<T extends { id: number }>(
  fetch: (beforeId: number | undefined) => Promise<T[]>,
): AsyncGenerator<T[]> {
  let before: number | undefined;
  for (;;) {
    const rows = await fetch(before);
    if (rows.length === 0) return;
    yield rows;
    before = rows[rows.length - 1].id;
  }
}
