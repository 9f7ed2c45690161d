import type { Knex } from 'knex';

/**
 * EVENTS_RETENTION_DAYS: events older than that go, a slice at a time (a million-recipient send
 * leaves millions of rows; one DELETE of them all would hold its locks and WAL for long), and
 * finished outbox jobs with them. The worker runs this hourly. Returns how many events went.
 */
export async function purgeEvents(db: Knex, days: number, slice = 10_000): Promise<number> {
  const total = await deleteOlder(db, 'events', 'occurred_at', days, slice);
  await db.raw(
    `DELETE FROM outbox_jobs WHERE status <> 'queued' AND created_at < now() - ? * interval '1 day'`,
    [days],
  );
  return total;
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

/**
 * Deletes the rows older than `days` by `column`, `slice` rows per statement, named by their
 * primary key (id, user_id): Citus cannot plan a DELETE by ctid (a row's ctid is its shard's).
 */
async function deleteOlder(db: Knex, table: 'events' | 'bounce_reports', column: string, days: number, slice: number): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await db.raw(
      `DELETE FROM ?? WHERE (id, user_id) IN (SELECT id, user_id FROM ?? WHERE ?? < now() - ? * interval '1 day' LIMIT ?)`,
      [table, table, column, days, slice],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < slice) break;
  }
  return total;
}
