import type { Knex } from 'knex';
import type { Config } from '../config';
import type { RouteConfig, RouteStatus, RouteView, StoredRouteStatus } from './types';
import { accountRoutes } from './pinning';
import { warmupCap } from './warmup';

/**
 * How routes are shown (issue 36): to an account (GET /routes, the dashboard's Deliverability page,
 * both through routeViews) and to the operator (herald_route_status at /metrics, routeStatuses).
 * Everything is read from the installation's tables (route_state, route_usage, route_blocks: global,
 * on the coordinator on Citus) and the configuration; a route no process has used yet has no
 * route_state row and is `up`.
 */

/** Every status a route can be shown with, in the order /metrics lists them. */
export const ROUTE_STATUSES: readonly RouteStatus[] = ['up', 'down', 'throttled', 'warming'];

interface StateRow {
  name: string;
  status: StoredRouteStatus;
  down_since: string | null;
  last_error: string | null;
}

async function readStates(db: Knex, names: string[]): Promise<Map<string, StateRow>> {
  if (!names.length) return new Map();
  const rows: StateRow[] = await db('route_state').select('name', 'status', 'down_since', 'last_error').whereIn('name', names);
  return new Map(rows.map((r) => [r.name, r]));
}

/** `warming` is never stored: an up route still inside its warm-up schedule is shown so. */
function shownStatus(route: RouteConfig, state: StateRow | undefined, now: Date): RouteStatus {
  const stored = state?.status ?? 'up';
  if (stored === 'up' && warmupCap(route.warmup, now)) return 'warming';
  return stored;
}

/** Each configured route's status, for herald_route_status. */
export async function routeStatuses(db: Knex, config: Config, now = new Date()): Promise<Array<{ name: string; status: RouteStatus }>> {
  const routes = config.routes;
  const states = await readStates(db, routes.map((r) => r.name));
  return routes.map((r) => ({ name: r.name, status: shownStatus(r, states.get(r.name), now) }));
}

/**
 * The user names, passwords and their base64 forms (what AUTH sends) of every configured route,
 * longest first: a stored or relayed error is shown only after each is cut out. The runtime already
 * strips them before storing; this is the second lock, for text written by an older version or
 * echoed back by a relay in a form the runtime did not expect.
 */
function secretsOf(routes: RouteConfig[]): string[] {
  const secrets = new Set<string>();
  for (const route of routes) {
    let url: URL;
    try {
      url = new URL(route.url);
    } catch {
      continue;
    }
    const parts = [url.username, url.password].filter(Boolean);
    const decoded = parts.map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
    for (const p of [...parts, ...decoded]) {
      secrets.add(p);
      secrets.add(Buffer.from(p).toString('base64'));
    }
    if (decoded.length === 2) secrets.add(Buffer.from(`\0${decoded[0]}\0${decoded[1]}`).toString('base64'));
  }
  return [...secrets].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
}

/**
 * `text` without credentials: any `scheme://user:pass@` authority, then every configured secret, as
 * `***` like the runtime's credentialStripper (src/routes/router.ts, which this cannot import: the
 * router imports src/metrics.ts, which imports this).
 */
export function withoutCredentials(text: string, routes: RouteConfig[]): string {
  let out = text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1');
  for (const secret of secretsOf(routes)) out = out.split(secret).join('***');
  return out;
}

/** Timestamps come from the driver as the API's ISO text with six fractional digits (src/db/types.ts). */
const iso = (d: Date | string | null): string | null => (d === null ? null : typeof d === 'string' ? d : d.toISOString());

/**
 * The routes the account may use (all of them, or those it is pinned to), in configuration order,
 * with their status, quotas, what they sent this hour and today, their warm-up step, when they went
 * down, their last error (credentials removed) and the providers that block them now. Never a URL.
 * Four small reads of the global route tables, each by route name.
 */
export async function routeViews(db: Knex, config: Config, userId: number, now = new Date()): Promise<RouteView[]> {
  const all = config.routes;
  const pinned = await accountRoutes(db, userId);
  const routes = pinned ? all.filter((r) => pinned.includes(r.name)) : all;
  if (!routes.length) return [];
  const names = routes.map((r) => r.name);
  const hourAgo = new Date(now.getTime() - 3_600_000);
  const dayAgo = new Date(now.getTime() - 86_400_000);
  const [states, usage, blocks] = await Promise.all([
    readStates(db, names),
    // route_usage holds one row per route and started hour / started day: the current ones are
    // those that started less than an hour (a day) ago, whatever time zone wrote them.
    db('route_usage')
      .select('route')
      .select(db.raw(`coalesce(sum(used) FILTER (WHERE period = 'hour' AND period_start > ? AND period_start <= ?), 0)::int AS hour`, [hourAgo, now]))
      .select(db.raw(`coalesce(sum(used) FILTER (WHERE period = 'day' AND period_start > ? AND period_start <= ?), 0)::int AS day`, [dayAgo, now]))
      .whereIn('route', names)
      .andWhere('period_start', '>', dayAgo)
      .groupBy('route') as Promise<Array<{ route: string; hour: number; day: number }>>,
    db('route_blocks').select('route', 'provider', 'since', 'until').whereIn('route', names).andWhere('until', '>', now).orderBy(['route', 'provider']) as Promise<
      Array<{ route: string; provider: string; since: string; until: string }>
    >,
  ]);
  const used = new Map(usage.map((u) => [u.route, u]));
  return routes.map((route): RouteView => {
    const state = states.get(route.name);
    const cap = warmupCap(route.warmup, now);
    return {
      name: route.name,
      status: shownStatus(route, state, now),
      weight: route.weight,
      max_per_second: route.maxPerSecond ?? null,
      max_per_hour: route.maxPerHour ?? null,
      max_per_day: route.maxPerDay ?? null,
      streams: [...route.streams],
      sent_last_hour: used.get(route.name)?.hour ?? 0,
      sent_today: used.get(route.name)?.day ?? 0,
      warmup: cap ? { day: cap.day, cap_per_hour: cap.capPerHour } : null,
      down_since: state?.status === 'down' ? iso(state.down_since) : null,
      last_error: state?.last_error ? withoutCredentials(state.last_error, all) : null,
      blocked_providers: blocks
        .filter((b) => b.route === route.name)
        .map((b) => ({ provider: b.provider, since: iso(b.since)!, until: iso(b.until)! })),
    };
  });
}
