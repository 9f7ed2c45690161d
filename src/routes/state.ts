import type { Knex } from 'knex';
import type { StoredRouteStatus } from './types';

/**
 * The statements on the route tables (migrations/202612310100_delivery-routes.ts) that the
 * router (src/routes/router.ts) runs: the shared state read every couple of seconds, and the
 * writes on transitions (a failure, down, a probe, throttled, a block), the per-second token
 * grants and the hourly and daily reservations. The tables are the installation's (global: on
 * Citus they stay on the coordinator), so no statement names an account.
 */

/** A route's shared health as every process reads it. */
export interface SharedState {
  status: StoredRouteStatus;
  failures: number;
  probeAt: Date | null;
  recoveredAt: Date | null;
  throttledAt: Date | null;
  throttledRate: number | null;
}

interface StateRow {
  name: string;
  status: StoredRouteStatus;
  consecutive_failures: number;
  probe_at: string | null;
  recovered_at: string | null;
  throttled_at: string | null;
  throttled_rate: number | null;
}

const date = (v: string | Date | null): Date | null => (v === null ? null : new Date(v));

function shared(row: StateRow): SharedState {
  return {
    status: row.status,
    failures: Number(row.consecutive_failures),
    probeAt: date(row.probe_at),
    recoveredAt: date(row.recovered_at),
    throttledAt: date(row.throttled_at),
    throttledRate: row.throttled_rate === null ? null : Number(row.throttled_rate),
  };
}

const STATE_COLUMNS = 'name, status, consecutive_failures, probe_at, recovered_at, throttled_at, throttled_rate';

/** A row per configured route (made on first use; a route removed from the configuration keeps its row, unread). */
export async function ensureRoutes(db: Knex, names: string[]): Promise<void> {
  await db.raw('INSERT INTO route_state (name) SELECT unnest(?::text[]) ON CONFLICT (name) DO NOTHING', [names]);
}

export interface SharedView {
  states: Map<string, SharedState>;
  /** Blocks still in force: route → provider → until. */
  blocks: Map<string, Map<string, Date>>;
  /** Messages counted this hour and today, per route (only when asked for). */
  usage: Map<string, { hour: number; day: number }>;
}

/**
 * Everything the router shares with the other processes, in one round trip: the routes' states,
 * the blocks in force and (with `usage`) this hour's and today's counters.
 */
export async function readShared(db: Knex, names: string[], usage: { hour: Date; day: Date } | null): Promise<SharedView> {
  const { rows } = await db.raw(
    `SELECT
       (SELECT coalesce(json_agg(s), '[]') FROM (SELECT ${STATE_COLUMNS} FROM route_state WHERE name = ANY(?::text[])) s) AS states,
       (SELECT coalesce(json_agg(b), '[]') FROM (SELECT route, provider, until FROM route_blocks WHERE until > now() AND route = ANY(?::text[])) b) AS blocks,
       ${
         usage
           ? `(SELECT coalesce(json_agg(u), '[]') FROM (SELECT route, period, used FROM route_usage
                WHERE route = ANY(?::text[]) AND ((period = 'hour' AND period_start = ?) OR (period = 'day' AND period_start = ?))) u)`
           : `'[]'::json`
       } AS usage`,
    usage ? [names, names, names, usage.hour.toISOString(), usage.day.toISOString()] : [names, names],
  );
  const row = rows[0] as { states: StateRow[]; blocks: Array<{ route: string; provider: string; until: string }>; usage: Array<{ route: string; period: 'hour' | 'day'; used: number }> };
  const view: SharedView = { states: new Map(), blocks: new Map(), usage: new Map() };
  for (const s of row.states) view.states.set(s.name, shared(s));
  for (const b of row.blocks) {
    if (!view.blocks.has(b.route)) view.blocks.set(b.route, new Map());
    view.blocks.get(b.route)!.set(b.provider, new Date(b.until));
  }
  for (const u of row.usage) {
    const counts = view.usage.get(u.route) ?? { hour: 0, day: 0 };
    counts[u.period] = Number(u.used);
    view.usage.set(u.route, counts);
  }
  return view;
}

/**
 * A failure of the relay itself: one more consecutive failure, the error kept (credentials
 * already removed); at `downAfter` the route is down, to be probed `probeSeconds` later.
 */
export async function recordRouteFailure(db: Knex, name: string, error: string, downAfter: number, probeSeconds: number): Promise<SharedState | undefined> {
  const { rows } = await db.raw(
    `UPDATE route_state SET
       consecutive_failures = consecutive_failures + 1,
       last_error = ?, last_error_at = now(), updated_at = now(),
       status = CASE WHEN consecutive_failures + 1 >= ? THEN 'down' ELSE status END,
       status_since = CASE WHEN consecutive_failures + 1 >= ? AND status <> 'down' THEN now() ELSE status_since END,
       down_since = CASE WHEN consecutive_failures + 1 >= ? AND status <> 'down' THEN now() ELSE down_since END,
       probe_at = CASE WHEN consecutive_failures + 1 >= ? AND status <> 'down' THEN now() + make_interval(secs => ?) ELSE probe_at END
     WHERE name = ?
     RETURNING ${STATE_COLUMNS}`,
    [error, downAfter, downAfter, downAfter, downAfter, probeSeconds, name],
  );
  return rows[0] ? shared(rows[0] as StateRow) : undefined;
}

/** The relay answered (a message accepted or refused by it): its consecutive failures start again from 0. */
export async function resetFailures(db: Knex, name: string): Promise<void> {
  await db.raw('UPDATE route_state SET consecutive_failures = 0, updated_at = now() WHERE name = ? AND consecutive_failures > 0', [name]);
}

/**
 * A throttling answer: the route is `throttled` at `rate` messages a second from now on, unless it
 * is down or already within the hold of an earlier throttle (`holdMinutes`): a burst of throttling
 * answers to messages in flight halves the rate once, not once per message. Returns the state
 * when this call throttled it.
 */
export async function markThrottled(db: Knex, name: string, rate: number, error: string, holdMinutes: number): Promise<SharedState | undefined> {
  const { rows } = await db.raw(
    `UPDATE route_state SET
       status = 'throttled',
       status_since = CASE WHEN status <> 'throttled' THEN now() ELSE status_since END,
       throttled_at = now(), throttled_rate = ?,
       last_error = ?, last_error_at = now(), updated_at = now()
     WHERE name = ? AND status <> 'down' AND (throttled_at IS NULL OR throttled_at <= now() - make_interval(mins => ?))
     RETURNING ${STATE_COLUMNS}`,
    [rate, error, name, holdMinutes],
  );
  return rows[0] ? shared(rows[0] as StateRow) : undefined;
}

/** A throttled route whose rate climbed back to its quota is `up` again (unless it was throttled again after `before`). */
export async function endThrottle(db: Knex, name: string, before: Date): Promise<void> {
  await db.raw(
    `UPDATE route_state SET status = 'up', status_since = now(), throttled_at = NULL, throttled_rate = NULL, updated_at = now()
     WHERE name = ? AND status = 'throttled' AND throttled_at <= ?`,
    [name, before.toISOString()],
  );
}

/** Whether this process probes the down route now: the one whose update moves `probe_at` on does. */
export async function claimProbe(db: Knex, name: string, probeSeconds: number): Promise<boolean> {
  const { rows } = await db.raw(
    `UPDATE route_state SET probe_at = now() + make_interval(secs => ?)
     WHERE name = ? AND status = 'down' AND (probe_at IS NULL OR probe_at <= now())
     RETURNING name`,
    [probeSeconds, name],
  );
  return rows.length > 0;
}

/** A good probe: the route is up, and carries half its weight for a while (recovered_at). */
export async function markUp(db: Knex, name: string): Promise<void> {
  await db.raw(
    `UPDATE route_state SET status = 'up', status_since = now(), consecutive_failures = 0, down_since = NULL, probe_at = NULL,
       recovered_at = now(), throttled_at = NULL, throttled_rate = NULL, updated_at = now()
     WHERE name = ? AND status = 'down'`,
    [name],
  );
}

export async function recordProbeFailure(db: Knex, name: string, error: string): Promise<void> {
  await db.raw('UPDATE route_state SET last_error = ?, last_error_at = now(), updated_at = now() WHERE name = ?', [error, name]);
}

/**
 * Up to `want` of the route's per-second tokens (`rate` a second, a burst of `burst`), taken
 * from its bucket in route_state as GlobalThrottle takes SEND_RATE's (src/delivery/throttle.ts):
 * one row update for a chunk, so every process together holds the rate. Returns the tokens
 * granted and how many the bucket held.
 */
export async function grantTokens(db: Knex, name: string, rate: number, burst: number, want: number): Promise<{ granted: number; available: number }> {
  const { rows } = await db.raw(
    `WITH cur AS (
       SELECT least(?::float8, tokens + ?::float8 * extract(epoch FROM clock_timestamp() - refilled_at)) AS avail
       FROM route_state WHERE name = ? FOR UPDATE
     )
     UPDATE route_state r SET tokens = cur.avail - least(?, floor(cur.avail)), refilled_at = clock_timestamp()
     FROM cur WHERE r.name = ?
     RETURNING least(?, floor(cur.avail))::int AS granted, cur.avail AS available`,
    [burst, rate, name, want, name, want],
  );
  if (!rows[0]) return { granted: 0, available: 0 };
  return { granted: Math.max(0, Number(rows[0].granted)), available: Number(rows[0].available) };
}

export type Period = 'hour' | 'day';

/**
 * Reserves up to `want` messages of the route's `period` starting at `start`, never past `cap`:
 * the counters that hold max_per_hour, max_per_day and the warm-up cap across processes and
 * restarts. Returns how many were granted (0: the period is full).
 */
export async function reserveUsage(db: Knex, route: string, period: Period, start: Date, cap: number, want: number): Promise<number> {
  const at = start.toISOString();
  await db.raw('INSERT INTO route_usage (route, period, period_start, used) VALUES (?, ?, ?, 0) ON CONFLICT DO NOTHING', [route, period, at]);
  const { rows } = await db.raw(
    `UPDATE route_usage u SET used = u.used + g.n
     FROM (SELECT greatest(0, least(?::int, ?::int - used)) AS n FROM route_usage WHERE route = ? AND period = ? AND period_start = ? FOR UPDATE) g
     WHERE u.route = ? AND u.period = ? AND u.period_start = ?
     RETURNING g.n`,
    [want, cap, route, period, at, route, period, at],
  );
  return rows[0] ? Number(rows[0].n) : 0;
}

/** Reservations not used (the process is closing, or the period passed): given back. */
export async function returnUsage(db: Knex, route: string, period: Period, start: Date, n: number): Promise<void> {
  if (n <= 0) return;
  await db.raw('UPDATE route_usage SET used = greatest(0, used - ?) WHERE route = ? AND period = ? AND period_start = ?', [n, route, period, start.toISOString()]);
}

/**
 * Messages a process sent through routes without a cap for the period (nothing reserved them),
 * added to the period's counters in one statement: GET /routes shows every route's hour and day.
 */
export async function addUsage(db: Knex, counts: Array<{ route: string; period: Period; start: Date; n: number }>): Promise<void> {
  const rows = counts.filter((c) => c.n > 0).map((c) => ({ route: c.route, period: c.period, period_start: c.start.toISOString(), n: c.n }));
  if (rows.length === 0) return;
  await db.raw(
    `INSERT INTO route_usage (route, period, period_start, used)
     SELECT route, period, period_start, n FROM json_to_recordset(?::json) AS v(route text, period text, period_start timestamptz, n integer)
     ON CONFLICT (route, period, period_start) DO UPDATE SET used = route_usage.used + EXCLUDED.used`,
    [JSON.stringify(rows)],
  );
}

/**
 * The route is blocked by `provider` until `until`. Returns whether the block is new (no block
 * of that provider on that route was in force): only a new one is announced.
 */
export async function upsertBlock(db: Knex, route: string, provider: string, until: Date, error: string): Promise<boolean> {
  const { rows } = await db.raw(
    `INSERT INTO route_blocks AS b (route, provider, since, until, last_error) VALUES (?, ?, now(), ?, ?)
     ON CONFLICT (route, provider) DO UPDATE SET
       since = CASE WHEN b.until <= now() THEN now() ELSE b.since END,
       until = EXCLUDED.until, last_error = EXCLUDED.last_error
     RETURNING b.since = now() AS fresh`,
    [route, provider, until.toISOString(), error],
  );
  return Boolean(rows[0]?.fresh);
}

/** Counters of periods long past (the worker's hourly retention round): only this hour and today are ever read. */
export async function purgeOldUsage(db: Knex): Promise<number> {
  const { rowCount } = await db.raw(`DELETE FROM route_usage WHERE period_start < now() - interval '2 days'`);
  return Number(rowCount ?? 0);
}
