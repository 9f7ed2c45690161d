import type { Knex } from 'knex';
import type { Config } from '../config';
import { jobStatus, webhookBatchStatus } from '../states';

/**
 * What the worker's retention loop deletes, hourly: events, finished jobs and webhook batches
 * older than EVENTS_RETENTION_DAYS, and bounce reports older than BOUNCE_RETENTION_DAYS.
 * Returns how many rows of each went.
 */
export async function purgeExpired(db: Knex, config: Pick<Config, 'eventsRetentionDays' | 'bounceRetentionDays'>) {
  return {
    events: await purgeEvents(db, config.eventsRetentionDays),
    webhookBatches: await purgeWebhookBatches(db, config.eventsRetentionDays),
    bounceReports: await purgeBounceReports(db, config.bounceRetentionDays),
  };
}

/**
 * EVENTS_RETENTION_DAYS: events older than that go, a slice at a time (a million-recipient send
 * leaves millions of rows; one DELETE of them all would hold its locks and WAL for long), and
 * finished jobs (notification mail, the `jobs` table's) with them. Returns how many events went.
 */
export async function purgeEvents(db: Knex, days: number, slice = 10_000): Promise<number> {
  const total = await deleteOlder(db, 'events', 'occurred_at', days, slice);
  const queued = jobStatus.sql.Queued;
  await db.raw(`DELETE FROM outbox_jobs WHERE status <> ${queued} AND created_at < now() - ? * interval '1 day'`, [days]);
  await db.raw(`DELETE FROM jobs WHERE status <> ${queued} AND updated_at < now() - ? * interval '1 day'`, [days]);
  return total;
}

/**
 * Finished webhook batches older than EVENTS_RETENTION_DAYS go with the events they carried;
 * pending ones stay whatever their age. Returns how many went.
 */
export async function purgeWebhookBatches(db: Knex, days: number): Promise<number> {
  const { rowCount } = await db.raw(
    `DELETE FROM webhook_deliveries WHERE status <> ${webhookBatchStatus.sql.Queued} AND updated_at < now() - ? * interval '1 day'`,
    [days],
  );
  return rowCount ?? 0;
}

/**
 * BOUNCE_RETENTION_DAYS: kept bounce and complaint reports (bounce_reports) older than that go,
 * a slice at a time, as events do. Their suppressions stay (without a message to show); a
 * report received again after its row went would be applied again (a new event), which is
 * why the retention is long. Returns how many went.
 */
export function purgeBounceReports(db: Knex, days: number, slice = 10_000): Promise<number> {
  return deleteOlder(db, 'bounce_reports', 'created_at', days, slice);
}

/** Deletes the rows older than `days` by `column`, `slice` rows per statement. */
async function deleteOlder(db: Knex, table: 'events' | 'bounce_reports', column: string, days: number, slice: number): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await db.raw(
      `DELETE FROM ?? WHERE ctid = ANY (ARRAY(SELECT ctid FROM ?? WHERE ?? < now() - ? * interval '1 day' LIMIT ?))`,
      [table, table, column, days, slice],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < slice) break;
  }
  return total;
}
