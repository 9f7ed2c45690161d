/**
 * The overview's numbers (GET /reports/overview and the dashboard's first page), by day in
 * the reader's time zone. A single send counts on the day it was sent, with everything its
 * messages did since (its own counters: one row per send). Automation emails count by the hour
 * each thing happened (message_stats_hourly, kept by the statistics consumer). Both are
 * rollups: nothing here reads events or recipient rows, so an account's size does not matter,
 * only its number of sends and of automation hours in the window.
 *
 * An hour row goes to the day its hour starts in; in a zone 30 or 45 minutes off the hour, the
 * day's edge is off by that much for automation emails.
 *
 * Bindings, in order: time zone, days, account (each where its `?` stands).
 */
const COUNTS = ['sends', 'delivered', 'unique_opens', 'unique_clicks', 'bounces', 'complaints'] as const;
export type CountName = (typeof COUNTS)[number];

export const OVERVIEW_DAILY = `
WITH bounds AS (
  SELECT CAST(now() AT TIME ZONE :tz AS date) - (CAST(:days AS integer) - 1) AS first_day, CAST(now() AT TIME ZONE :tz AS date) AS last_day
), since AS (
  SELECT first_day, last_day, CAST(first_day AS timestamp) AT TIME ZONE :tz AS at FROM bounds
), sends AS (
  SELECT CAST(s.sent_at AT TIME ZONE :tz AS date) AS day,
         sum(s.triggered) AS sends, sum(s.delivered) AS delivered, sum(s.unique_opens) AS unique_opens,
         sum(s.unique_clicks) AS unique_clicks, sum(s.bounces) AS bounces, sum(s.complaints) AS complaints
  FROM single_sends s, since
  WHERE s.user_id = :userId AND s.sent_at >= since.at
  GROUP BY 1
), emails AS (
  SELECT CAST(h.hour AT TIME ZONE :tz AS date) AS day,
         sum(h.triggered) AS sends, sum(h.delivered) AS delivered, sum(h.unique_opens) AS unique_opens,
         sum(h.unique_clicks) AS unique_clicks, sum(h.bounces) AS bounces, sum(h.complaints) AS complaints
  FROM message_stats_hourly h, since
  WHERE h.user_id = :userId AND h.owner_type = 'automation' AND h.hour > since.at - interval '1 hour'
  GROUP BY 1
)
SELECT to_char(d.day, 'YYYY-MM-DD') AS date,
       ${COUNTS.map((c) => `CAST(coalesce(s.${c}, 0) + coalesce(e.${c}, 0) AS integer) AS ${c}`).join(',\n       ')},
       (SELECT at FROM since) AS since
FROM since, generate_series(since.first_day, since.last_day, interval '1 day') AS g(day_start)
CROSS JOIN LATERAL (SELECT CAST(g.day_start AS date) AS day) d
LEFT JOIN sends s ON s.day = d.day
LEFT JOIN emails e ON e.day = d.day
ORDER BY d.day`;

export const OVERVIEW_COUNTS = COUNTS;

/** The newest sends that went out (index single_sends_user_sent_index). */
export const LATEST_SENDS = `
SELECT utr, single_send_name, subject, status, sent_at, triggered, delivered, unique_opens, unique_clicks, bounces, complaints
FROM single_sends
WHERE user_id = :userId AND sent_at IS NOT NULL AND deleted_at IS NULL
ORDER BY sent_at DESC, id DESC
LIMIT :limit`;

/**
 * Records of the account's sending domains that the last check found missing or different,
 * one row per live sender (two senders of a domain share its keys, so each names it).
 */
export const DNS_PROBLEMS = `
WITH domains AS (
  SELECT DISTINCT ON (lower(split_part(from_email, '@', 2))) id AS sender_id, lower(split_part(from_email, '@', 2)) AS domain
  FROM senders WHERE user_id = :userId AND deleted_at IS NULL
  ORDER BY lower(split_part(from_email, '@', 2)), id
)
SELECT d.sender_id, d.domain, 'dkim' AS record, k.dns_status AS status, k.checked_at
FROM domains d JOIN dkim_keys k ON k.user_id = :userId AND k.domain = d.domain AND k.state = 'active'
WHERE k.dns_status IN ('missing', 'mismatch')
UNION ALL
SELECT d.sender_id, d.domain, c.key AS record, c.value AS status, k.checked_at
FROM domains d JOIN dkim_keys k ON k.user_id = :userId AND k.domain = d.domain AND k.state = 'active'
CROSS JOIN LATERAL jsonb_each_text(k.checks) c
WHERE c.value IN ('missing', 'mismatch')
ORDER BY 2, 3`;
