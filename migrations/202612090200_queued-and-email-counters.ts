import type { Knex } from 'knex';

/**
 * The statistics the dashboard's overview and automation pages read that the rollups did not
 * keep yet (docs/decisions.md, "Dashboard"); migration 202612040100 gave `message_stats_hourly`
 * every event counter, this adds the rest:
 *
 * - `message_stats_hourly.queued`: the recipient rows written in the hour (a counter's
 *   `triggered`: a single send's audience by fan-out, an automation's emails by the engine), so
 *   the messages an account queued over a window are a sum of hours, as its other counters are.
 * - `automation_schedules`: the counters of each email of a sequence, as its automation has them.
 * - an index on a single send's `sent_at` per account: the overview's sends of the last days,
 *   the latest sends.
 *
 * The past is filled from what the database still holds: recipient rows for the rows queued,
 * first opens and first human clicks (`opened_at`, `clicked_at` are the writer's decisions), and
 * the events still kept (EVENTS_RETENTION_DAYS) for the rest. The lists are written out here on
 * purpose: a migration is history and must not change with src/.
 */
const EMAIL = ['triggered', 'delivered', 'unique_opens', 'total_opens', 'unique_clicks', 'total_clicks', 'bounces', 'complaints', 'unsubscribes'];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('message_stats_hourly', (t) => {
    t.integer('queued').notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('automation_schedules', (t) => {
    for (const c of EMAIL) t.integer(c).notNullable().defaultTo(0);
  });
  await knex.raw('CREATE INDEX single_sends_user_sent_index ON single_sends (user_id, sent_at) WHERE sent_at IS NOT NULL');

  await knex.raw(`
    INSERT INTO message_stats_hourly AS h (user_id, owner_type, owner_id, hour, queued)
    SELECT user_id, CASE WHEN single_send_id IS NOT NULL THEN 'single_send' ELSE 'automation' END,
           coalesce(single_send_id, automation_id), date_trunc('hour', created_at), count(*)
    FROM deliveries
    WHERE single_send_id IS NOT NULL OR automation_id IS NOT NULL
    GROUP BY 1, 2, 3, 4
    ON CONFLICT (user_id, owner_type, owner_id, hour) DO UPDATE SET queued = EXCLUDED.queued`);

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
  await knex.schema.alterTable('automation_schedules', (t) => {
    for (const c of EMAIL) t.dropColumn(c);
  });
  await knex.schema.alterTable('message_stats_hourly', (t) => {
    t.dropColumn('queued');
  });
}
