import { DnsRecordStatus, dnsRecordStatus, keyState } from '../../states';

/**
 * The overview's days (GET /reports/overview): today in the reader's time zone and the days
 * before it, each with the moment it starts (its midnight there). Its statistics are read
 * through src/statistics; this only says which days they fall on. Bindings: `tz`, `days`.
 */
export const OVERVIEW_DAYS = `
SELECT to_char(g.day, 'YYYY-MM-DD') AS date, CAST(g.day AS timestamp) AT TIME ZONE :tz AS since
FROM generate_series(CAST(now() AT TIME ZONE :tz AS date) - (CAST(:days AS integer) - 1), CAST(now() AT TIME ZONE :tz AS date), interval '1 day') AS g(day)
ORDER BY g.day`;

/** The statuses of a DNS record that the overview lists as a problem. */
export const DNS_PROBLEM_STATUSES = [DnsRecordStatus.Missing, DnsRecordStatus.Mismatch] as const;
const PROBLEMS_SQL = `${dnsRecordStatus.sql.Missing}, ${dnsRecordStatus.sql.Mismatch}`;

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
FROM domains d JOIN dkim_keys k ON k.user_id = :userId AND k.domain = d.domain AND k.state = ${keyState.sql.Active}
WHERE k.dns_status IN (${PROBLEMS_SQL})
UNION ALL
SELECT d.sender_id, d.domain, c.key AS record, c.value AS status, k.checked_at
FROM domains d JOIN dkim_keys k ON k.user_id = :userId AND k.domain = d.domain AND k.state = ${keyState.sql.Active}
CROSS JOIN LATERAL jsonb_each_text(k.checks) c
WHERE c.value IN (${PROBLEMS_SQL})
ORDER BY 2, 3`;
