import type { Knex } from 'knex';
import { OWNERS, type Owner, type OwnerKind } from '../sources';
import { COUNTERS, HOURLY_COLUMNS, type Counts } from './counters';
import { EMAIL_COLUMNS, EMAIL_COUNTERS, EMAILS, type EmailCounts } from './emails';

/**
 * The statistics' reader, beside their writer (src/statistics/write.ts), which knows the same
 * tables and columns: an owner's counters as its record keeps them, its tracked links, and any
 * account's counters over a window of hours from the hourly rollup. The API's stats endpoints
 * (src/resources/reports) read through here, and so does anything else that shows them.
 */

/** Every counter of each owner of `kind` among `ids` of the account (ids not found are absent). */
export async function readCounters(db: Knex, userId: number, kind: OwnerKind, ids: number[]): Promise<Map<number, Counts>> {
  if (ids.length === 0) return new Map();
  const cols = OWNERS[kind].counters;
  const rows = (await db(OWNERS[kind].table)
    .where('user_id', userId)
    .whereIn('id', ids)
    .select('id', ...COUNTERS.map((c) => `${cols[c]} as ${c}`))) as Array<{ id: number } & Counts>;
  return new Map(rows.map(({ id, ...counts }) => [id, counts as Counts]));
}

export interface LinkCounts {
  url: string;
  unique_clicks: number;
  total_clicks: number;
}

/** An owner's tracked links, in the order its design first had them; unclicked ones with zeros. */
export async function readLinks(db: Knex, userId: number, owner: Owner): Promise<LinkCounts[]> {
  return (await db('tracked_links')
    .where({ user_id: userId, [OWNERS[owner.kind].column]: owner.id })
    .orderBy('id')
    .select('url', 'unique_clicks', 'total_clicks')) as LinkCounts[];
}

/**
 * Which hours of an account to add up: all its owners' (or those of one kind, or one owner), from
 * `since` (inclusive) to `until` (exclusive). The rollup keeps whole hours: a bound inside an hour
 * takes that whole hour in.
 */
export interface HourRange {
  owner?: Owner;
  kind?: OwnerKind;
  since?: Date | string;
  until?: Date | string;
}

function hours(db: Knex, userId: number, range: HourRange): Knex.QueryBuilder {
  const q = db('message_stats_hourly').where('user_id', userId);
  if (range.owner) q.where({ owner_type: range.owner.kind, owner_id: range.owner.id });
  else if (range.kind) q.where('owner_type', range.kind);
  if (range.since !== undefined) q.where('hour', '>=', db.raw("date_trunc('hour', ?::timestamptz)", [range.since]));
  if (range.until !== undefined) q.where('hour', '<', range.until);
  return q;
}

const SUMS = COUNTERS.map((k) => `coalesce(sum(${HOURLY_COLUMNS[k]}), 0) AS ${k}`).join(', ');

/**
 * Every counter of an account's hours, added up. `triggered` is the recipient rows written in
 * those hours (a send's audience as fan-out wrote it, an automation's emails as they were queued).
 */
export async function readTotals(db: Knex, userId: number, range: HourRange = {}): Promise<Counts> {
  return (await hours(db, userId, range).first(db.raw(SUMS))) as Counts;
}

/**
 * The same per hour or per day, oldest first, each bucket with its start (`at`, a `<timestamp>`);
 * buckets without a row are left out. Days are those of `timeZone` (an IANA name PostgreSQL knows,
 * which the caller checks; default UTC): their start is that zone's midnight. Zones whose offset
 * is not whole hours get the hours that begin in each day.
 */
export async function readSeries(
  db: Knex,
  userId: number,
  range: HourRange & { bucket: 'hour' | 'day'; timeZone?: string },
): Promise<Array<{ at: string } & Counts>> {
  const at = db.raw('date_trunc(?, hour, ?)', [range.bucket, range.timeZone ?? 'UTC']);
  return (await hours(db, userId, range)
    .select({ at }, db.raw(SUMS))
    .groupByRaw('1')
    .orderByRaw('1')) as Array<{ at: string } & Counts>;
}

/**
 * The counters of an account's single sends that went out from `since`, added up per day of
 * `timeZone` (checked by the caller, as for readSeries) on which each went out: a send's whole
 * statistics count on its day, whenever its messages were opened or clicked. Deleted sends count
 * too (their messages went out). Oldest first; days without a send are left out. One row per send
 * (index single_sends_user_sent_index), so the account's number of messages does not matter.
 */
export async function readSentByDay(db: Knex, userId: number, range: { since: Date | string; timeZone?: string }): Promise<Array<{ at: string } & Counts>> {
  const cols = OWNERS.single_send.counters;
  const sums = COUNTERS.map((k) => `coalesce(sum(${cols[k]}), 0) AS ${k}`).join(', ');
  return (await db(OWNERS.single_send.table)
    .where('user_id', userId)
    .where('sent_at', '>=', range.since)
    .select({ at: db.raw("date_trunc('day', sent_at, ?)", [range.timeZone ?? 'UTC']) }, db.raw(sums))
    .groupByRaw('1')
    .orderByRaw('1')) as Array<{ at: string } & Counts>;
}

/** Each email's own counters (emails of an automation of the account, by ids; ids not found are absent). */
export async function readEmailCounters(db: Knex, userId: number, ids: number[]): Promise<Map<number, EmailCounts>> {
  if (ids.length === 0) return new Map();
  const rows = (await db(EMAILS)
    .where('user_id', userId)
    .whereIn('id', ids)
    .select('id', ...EMAIL_COUNTERS.map((c) => `${EMAIL_COLUMNS[c]} as ${c}`))) as Array<{ id: number } & EmailCounts>;
  return new Map(rows.map(({ id, ...counts }) => [id, counts as EmailCounts]));
}
