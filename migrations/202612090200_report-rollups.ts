import type { Knex } from 'knex';

/**
 * What the dashboard's overview and automation pages read without scanning events or
 * recipient rows (docs/decisions.md, "Dashboard"):
 *
 * - `message_stats_hourly` gains `triggered` (automation emails queued; a single send's own
 *   row keeps its `triggered`), `unique_opens`, `unique_clicks` (first human click of a
 *   message), `bounces` and `complaints`, kept by the statistics consumer like its other columns.
 * - `automation_schedules` gains the counters of each email of a sequence, as single sends and
 *   automations have them.
 *
 * The past is filled from what the database still holds: recipient rows for queued, first-open
 * and first-click times, events (within EVENTS_RETENTION_DAYS) for the rest. Indexes: the
 * overview reads an account's hourly rows and its single sends by time.
 */
const HOURLY = ['triggered', 'unique_opens', 'unique_clicks', 'bounces', 'complaints'];
const EMAIL = ['triggered', 'delivered', 'unique_opens', 'total_opens', 'unique_clicks', 'total_clicks', 'bounces', 'complaints', 'unsubscribes'];

const OWNER = `CASE WHEN single_send_id IS NOT NULL THEN 'single_send' ELSE 'automation' END`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('message_stats_hourly', (t) => {
    for (const c of HOURLY) t.integer(c).notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('automation_schedules', (t) => {
    for (const c of EMAIL) t.integer(c).notNullable().defaultTo(0);
  });
  await knex.raw('CREATE INDEX message_stats_hourly_user_hour_index ON message_stats_hourly (user_id, owner_type, hour)');
  await knex.raw('CREATE INDEX single_sends_user_sent_index ON single_sends (user_id, sent_at) WHERE sent_at IS NOT NULL');

  const upsert = (columns: string[], select: string) =>
    knex.raw(`
      INSERT INTO message_stats_hourly AS h (user_id, owner_type, owner_id, hour, ${columns.join(', ')})
      ${select}
      ON CONFLICT (user_id, owner_type, owner_id, hour) DO UPDATE SET ${columns.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`);
  // Queued automation emails: their recipient rows, by the hour they were written.
  await upsert(
    ['triggered'],
    `SELECT user_id, 'automation', automation_id, date_trunc('hour', created_at), count(*)
     FROM deliveries WHERE automation_id IS NOT NULL AND single_send_id IS NULL GROUP BY 1, 2, 3, 4`,
  );
  // First opens and first human clicks: the recipient row keeps when each happened.
  await upsert(
    ['unique_opens'],
    `SELECT user_id, ${OWNER}, coalesce(single_send_id, automation_id), date_trunc('hour', opened_at), count(*)
     FROM deliveries WHERE opened_at IS NOT NULL AND coalesce(single_send_id, automation_id) IS NOT NULL GROUP BY 1, 2, 3, 4`,
  );
  await upsert(
    ['unique_clicks'],
    `SELECT user_id, ${OWNER}, coalesce(single_send_id, automation_id), date_trunc('hour', clicked_at), count(*)
     FROM deliveries WHERE clicked_at IS NOT NULL AND coalesce(single_send_id, automation_id) IS NOT NULL GROUP BY 1, 2, 3, 4`,
  );
  await upsert(
    ['bounces', 'complaints'],
    `SELECT user_id, ${OWNER}, coalesce(single_send_id, automation_id), date_trunc('hour', occurred_at),
            count(*) FILTER (WHERE type = 'bounced'), count(*) FILTER (WHERE type = 'complained')
     FROM events WHERE type IN ('bounced', 'complained') AND coalesce(single_send_id, automation_id) IS NOT NULL GROUP BY 1, 2, 3, 4`,
  );

  await knex.raw(`
    UPDATE automation_schedules s SET triggered = x.triggered, unique_opens = x.unique_opens, total_opens = x.total_opens, unique_clicks = x.unique_clicks
    FROM (SELECT user_id, automation_schedule_id AS id, count(*) AS triggered, count(opened_at) AS unique_opens,
                 sum(open_count) AS total_opens, count(clicked_at) AS unique_clicks
          FROM deliveries WHERE automation_schedule_id IS NOT NULL GROUP BY 1, 2) x
    WHERE s.id = x.id AND s.user_id = x.user_id`);
  await knex.raw(`
    UPDATE automation_schedules s SET delivered = x.delivered, bounces = x.bounces, complaints = x.complaints,
                                      unsubscribes = x.unsubscribes, total_clicks = x.total_clicks
    FROM (SELECT d.user_id, d.automation_schedule_id AS id,
                 count(*) FILTER (WHERE e.type = 'delivered') AS delivered, count(*) FILTER (WHERE e.type = 'bounced') AS bounces,
                 count(*) FILTER (WHERE e.type = 'complained') AS complaints, count(*) FILTER (WHERE e.type = 'unsubscribed') AS unsubscribes,
                 count(*) FILTER (WHERE e.type = 'clicked') AS total_clicks
          FROM events e JOIN deliveries d ON d.id = e.delivery_id AND d.user_id = e.user_id
          WHERE e.automation_id IS NOT NULL AND e.delivery_id IS NOT NULL AND d.automation_schedule_id IS NOT NULL
            AND e.type IN ('delivered', 'bounced', 'complained', 'unsubscribed', 'clicked')
          GROUP BY 1, 2) x
    WHERE s.id = x.id AND s.user_id = x.user_id`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX single_sends_user_sent_index');
  await knex.raw('DROP INDEX message_stats_hourly_user_hour_index');
  await knex.schema.alterTable('automation_schedules', (t) => {
    for (const c of EMAIL) t.dropColumn(c);
  });
  await knex.schema.alterTable('message_stats_hourly', (t) => {
    for (const c of HOURLY) t.dropColumn(c);
  });
}
