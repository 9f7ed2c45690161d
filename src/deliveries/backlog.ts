import type { Knex } from 'knex';
import { DeliveryStatus } from '../states';

/**
 * The queue's backlog for herald_queue_depth and herald_queue_oldest_seconds (src/metrics.ts): the
 * rows CLAIM_SQL (queue.ts) would take now — queued and due, or `sending` whose lease ran out — and
 * how long the longest-waiting of them has been due (0 when none is). One range of
 * deliveries_queue_index. On Citus an aggregate over every shard that names no account: a read,
 * which each node answers for its shards in parallel; the operator's scrape asks it, no API key can.
 */
export async function queueBacklog(db: Knex): Promise<{ depth: number; oldestSeconds: number }> {
  const { rows } = await db
    .raw(
      `SELECT count(*)::bigint AS depth, coalesce(extract(epoch FROM now() - min(next_attempt_at)), 0)::float8 AS oldest
         FROM deliveries WHERE status IN (?, ?) AND next_attempt_at <= now()`,
      [DeliveryStatus.Queued, DeliveryStatus.Sending],
    )
    .timeout(5000, { cancel: true });
  return { depth: Number(rows[0].depth), oldestSeconds: Math.max(0, Number(rows[0].oldest)) };
}
