import type { Knex } from 'knex';

/**
 * `message_stats_hourly` carries every counter the events move, not only the timeline's four
 * (delivered, opens, clicks, unsubscribes): so the statistics of an account over any window of
 * hours (the dashboard's overview, its daily chart) add up a few rows per send and hour instead
 * of scanning events (docs/decisions.md, "Message sources and statistics"). The index on
 * (user_id, hour) serves such a window across every send of an account; the unique index serves
 * one send's timeline.
 *
 * The hours already recorded get the new counters from the events still kept (retention may have
 * purged older ones): a unique open is a message's first `opened` event, a unique click its first
 * `clicked` event not suspected of being a scanner's, as src/statistics/write.ts decides them. The
 * lists are written out here on purpose: a migration is history and must not change with src/.
 */
const ADDED = ['unique_opens', 'bounces', 'deferred', 'dropped', 'bounced_hard', 'bounced_soft', 'unique_clicks', 'complaints'];

const BACKFILL = `
  WITH e AS (
    SELECT id, user_id, type, data, delivery_id, date_trunc('hour', occurred_at) AS hour,
           CASE WHEN single_send_id IS NOT NULL THEN 'single_send' ELSE 'automation' END AS owner_type,
           coalesce(single_send_id, automation_id) AS owner_id
    FROM events
    WHERE type IN ('bounced', 'deferred', 'dropped', 'complained', 'opened', 'clicked')
      AND (single_send_id IS NOT NULL OR automation_id IS NOT NULL)
  ), first_open AS (
    SELECT DISTINCT ON (user_id, delivery_id) id FROM e
    WHERE type = 'opened' AND delivery_id IS NOT NULL
    ORDER BY user_id, delivery_id, id
  ), first_click AS (
    SELECT DISTINCT ON (user_id, delivery_id) id FROM e
    WHERE type = 'clicked' AND delivery_id IS NOT NULL AND NOT coalesce((data->>'suspected_bot')::boolean, false)
    ORDER BY user_id, delivery_id, id
  )
  INSERT INTO message_stats_hourly (user_id, owner_type, owner_id, hour, ${ADDED.join(', ')})
  SELECT e.user_id, e.owner_type, e.owner_id, e.hour,
         count(fo.id),
         count(*) FILTER (WHERE e.type = 'bounced'),
         count(*) FILTER (WHERE e.type = 'deferred'),
         count(*) FILTER (WHERE e.type = 'dropped'),
         count(*) FILTER (WHERE e.type = 'bounced' AND e.data->>'kind' = 'hard'),
         count(*) FILTER (WHERE e.type = 'bounced' AND e.data->>'kind' IS DISTINCT FROM 'hard'),
         count(fc.id),
         count(*) FILTER (WHERE e.type = 'complained')
  FROM e
  LEFT JOIN first_open fo ON fo.id = e.id
  LEFT JOIN first_click fc ON fc.id = e.id
  GROUP BY e.user_id, e.owner_type, e.owner_id, e.hour
  ON CONFLICT (user_id, owner_type, owner_id, hour)
  DO UPDATE SET ${ADDED.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('message_stats_hourly', (t) => {
    for (const c of ADDED) t.integer(c).notNullable().defaultTo(0);
  });
  await knex.raw(BACKFILL);
  await knex.raw('CREATE INDEX message_stats_hourly_user_hour ON message_stats_hourly (user_id, hour)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX message_stats_hourly_user_hour');
  await knex.schema.alterTable('message_stats_hourly', (t) => {
    for (const c of ADDED) t.dropColumn(c);
  });
}
