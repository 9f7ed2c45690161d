import type { Knex } from 'knex';

/**
 * EVENTS_RETENTION_DAYS: events older than that go, a slice at a time (a million-recipient send
 * leaves millions of rows; one DELETE of them all would hold its locks and WAL for long), and
 * finished outbox jobs with them. The worker runs this hourly. Returns how many events went.
 */
export async function purgeEvents(db: Knex, days: number, slice = 10_000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await db.raw(
      `DELETE FROM events WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM events WHERE occurred_at < now() - ? * interval '1 day' LIMIT ?))`,
      [days, slice],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < slice) break;
  }
  await db.raw(
    `DELETE FROM outbox_jobs WHERE status <> 'queued' AND created_at < now() - ? * interval '1 day'`,
    [days],
  );
  return total;
}
