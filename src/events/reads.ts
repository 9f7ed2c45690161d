import type { Knex } from 'knex';
import { eventsOf, UTR_COLUMNS, utrJoins, type Owner } from '../sources';
import { ACCOUNT_EVENT_TYPES } from './types';

/**
 * src/events: the one owner of the `events` table (everything that happened, one row per fact).
 * Every statement that reads or writes it is in this folder, named for what it does, and the
 * rest of Herald calls these functions (eslint.config.js refuses SQL on the table elsewhere):
 *
 * - record.ts and account-events.ts: the writes (a send's message events, a batch at a time;
 *   an account event with its notification job);
 * - retention.ts: the purge; notification-mail.ts: an account event's facts for its mail;
 * - this file: the other reads — GET /events, the notifications' event list, the soft-bounce
 *   count, a bounce's kept report, and what a webhook endpoint follows.
 *
 * The statements moved here unchanged (their text, so their plans).
 */

/**
 * Each address's `bounced` events of kind soft within `days` (this transaction's own
 * included), of one account (on Citus a read of one node). The soft-bounce rule
 * (src/suppression) counts them.
 */
export async function softBouncesByEmail(db: Knex, userId: number, emails: string[], days: number): Promise<Array<{ email: string; n: number }>> {
  const { rows } = await db.raw(
    `SELECT email, count(*)::int AS n FROM events
       WHERE user_id = ? AND email = ANY (?::text[]) AND type = 'bounced' AND data->>'kind' = 'soft'
         AND occurred_at > now() - ? * interval '1 day'
       GROUP BY email`,
    [userId, emails, days],
  );
  return rows as Array<{ email: string; n: number }>;
}

/** What GET /events filters by, each optional; `of` the sends or automations named by utr. */
export interface EventsFilter {
  limit: number;
  type?: string[];
  email?: string;
  of?: Owner[];
  since?: string;
  until?: string;
  cursor?: string;
}

/** An event as GET /events (and a webhook's body) presents it: the send's and automation's utr, not their ids. */
export interface ListedEvent {
  id: number;
  type: string;
  email: string | null;
  single_send_utr: string | null;
  automation_utr: string | null;
  occurred_at: string;
  data: Record<string, unknown>;
}

/** Account `userId`'s events oldest first by id, from after `cursor`, up to `limit` of them. */
export async function eventsPage(db: Knex, userId: number, q: EventsFilter): Promise<ListedEvent[]> {
  const query = db('events as e')
    .joinRaw(utrJoins('e', 'e.user_id'))
    .where('e.user_id', userId)
    .orderBy('e.id')
    .limit(q.limit)
    .select('e.id', 'e.type', 'e.email', ...UTR_COLUMNS, 'e.occurred_at', 'e.data');
  if (q.type?.length) query.whereIn('e.type', q.type);
  if (q.email !== undefined) query.where('e.email', q.email.toLowerCase());
  for (const owner of q.of ?? []) query.where(eventsOf(owner));
  if (q.since !== undefined) query.where('e.occurred_at', '>=', new Date(q.since));
  if (q.until !== undefined) query.where('e.occurred_at', '<', new Date(q.until));
  if (q.cursor !== undefined) query.where('e.id', '>', q.cursor);
  return (await query) as ListedEvent[];
}

/**
 * The account's account events (GET /notifications' event list): `all` to count them, `rows`
 * newest first in the shape that endpoint always had — the mail's subject and facts from the
 * event, how its mailing went from its notification job (none: nobody to notify).
 */
export function accountEventsWithNotice(db: Knex, userId: number): { rows: Knex.QueryBuilder; all: Knex.QueryBuilder } {
  const all = db('events').where('events.user_id', userId).whereIn('events.type', ACCOUNT_EVENT_TYPES);
  const rows = all
    .clone()
    .leftJoin('outbox_jobs as j', (j) =>
      j.on('j.user_id', 'events.user_id').andOn('j.event_id', 'events.id').andOnVal('j.kind', 'notification'),
    )
    .select(
      'events.id',
      'events.type',
      db.raw("coalesce(events.data->>'subject', '') AS subject"),
      db.raw("events.data - 'subject' AS payload"),
      db.raw('coalesce(j.done_count, 0) AS notified'),
      'j.last_error as notify_error',
      'events.occurred_at as created_at',
    )
    .orderBy('events.id', 'desc');
  return { rows, all };
}

/** The id of the account's latest event (undefined: none yet): where a new webhook starts. */
export async function newestEventId(db: Knex, userId: number): Promise<number | string | undefined> {
  const [newest] = await db('events').where('events.user_id', userId).max('id as id');
  return newest?.id ?? undefined;
}

/** Account `userId`'s `bounced` and `complained` events (alias `e`) joined to the report each was recorded from (alias `r`). */
export function eventsWithReports(db: Knex, userId: number): Knex.QueryBuilder {
  return db('events as e')
    .join('bounce_reports as r', (j) =>
      j
        .on('r.user_id', 'e.user_id')
        .andOn('r.delivery_id', 'e.delivery_id')
        .andOn('r.kind', db.raw(`CASE WHEN e.type = 'complained' THEN 'complaint' ELSE e.data->>'kind' END`)),
    )
    .where('e.user_id', userId)
    .whereIn('e.type', ['bounced', 'complained']);
}

/**
 * What a webhook endpoint follows: an account's events after a cursor, of some types (all when
 * none are named), oldest first. As a subquery of the batching statement (src/webhooks/dispatch.ts),
 * with its named bindings `:userId`, `:cursor`, `:types` and `:scan` (how many, at most).
 */
export const EVENTS_AFTER_CURSOR = `SELECT e.id, e.type, e.email, e.single_send_id, e.automation_id, e.occurred_at, e.data
    FROM events e
    WHERE e.user_id = :userId AND e.id > :cursor
      AND (cardinality(:types::text[]) = 0 OR e.type = ANY(:types::text[]))
    ORDER BY e.id
    LIMIT :scan`;

/**
 * `EXISTS` an event of `account` after `cursor` of one of `types` (all when empty): the three are
 * SQL expressions of the caller's statement (an endpoint's account, cursor and event types).
 */
export const EVENTS_AFTER = (account: string, cursor: string, types: string) => `EXISTS (
      SELECT 1 FROM events e
      WHERE e.user_id = ${account} AND e.id > ${cursor}
        AND (cardinality(${types}) = 0 OR e.type = ANY(${types})))`;

/**
 * The routes and receiving providers named by the account's `route.blocked` events of the last
 * `days` (the overview's warnings check which blocks still hold), each pair once.
 */
export async function routeBlockedPairs(db: Knex, userId: number, days: number): Promise<Array<{ route: string; provider: string }>> {
  const rows = (await db('events')
    .where({ user_id: userId, type: 'route.blocked' })
    .where('occurred_at', '>', db.raw(`now() - make_interval(days => ?)`, [days]))
    .orderBy('id', 'desc')
    .limit(100)
    .select(db.raw(`data->>'route' AS route`), db.raw(`data->>'provider' AS provider`))) as Array<{ route: string | null; provider: string | null }>;
  const pairs = new Map<string, { route: string; provider: string }>();
  for (const e of rows) if (e.route && e.provider) pairs.set(JSON.stringify([e.route, e.provider]), { route: e.route, provider: e.provider });
  return [...pairs.values()];
}
