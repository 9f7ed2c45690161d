import type { Knex } from 'knex';

/** A message's events that went through (or tried) a delivery route: each carries `data.route`. */
const ROUTED_TYPES = ['delivered', 'deferred', 'bounced'] as const;
type RoutedType = (typeof ROUTED_TYPES)[number];

export interface RouteHours {
  /** The first hour shown (the start of the hour 23 hours before this one), ISO. */
  start: string;
  /** Per route: its events per hour (24 values, oldest first) and its totals by type. */
  routes: Array<{ route: string; perHour: number[]; totals: Record<RoutedType, number> }>;
}

const HOUR = 3_600_000;

/**
 * The account's delivered, deferred and bounced events of the last 24 hours (this hour and the 23
 * before it) by route and hour, for the dashboard's Deliverability chart. One statement on the
 * account's events (named by user_id: one node on Citus), grouped in the database; routes in the
 * order of their totals, largest first. Events without a route (mail before routes, the outbox) are
 * not shown.
 */
export async function routeHours(db: Knex, userId: number, now = new Date()): Promise<RouteHours> {
  const start = new Date(Math.floor(now.getTime() / HOUR) * HOUR - 23 * HOUR);
  const rows: Array<{ route: string; type: RoutedType; slot: number; n: number }> = (
    await db.raw(
      `SELECT data->>'route' AS route, type, floor(extract(epoch FROM occurred_at - ?::timestamptz) / 3600)::int AS slot, count(*)::int AS n
         FROM events
        WHERE user_id = ? AND type IN (?, ?, ?) AND occurred_at >= ?::timestamptz AND data->>'route' IS NOT NULL
        GROUP BY 1, 2, 3`,
      [start.toISOString(), userId, ...ROUTED_TYPES, start.toISOString()],
    )
  ).rows;
  const byRoute = new Map<string, RouteHours['routes'][number]>();
  for (const r of rows) {
    if (r.slot < 0 || r.slot > 23) continue;
    let entry = byRoute.get(r.route);
    if (!entry) byRoute.set(r.route, (entry = { route: r.route, perHour: new Array<number>(24).fill(0), totals: { delivered: 0, deferred: 0, bounced: 0 } }));
    entry.perHour[r.slot] += r.n;
    entry.totals[r.type] += r.n;
  }
  const total = (e: RouteHours['routes'][number]) => e.totals.delivered + e.totals.deferred + e.totals.bounced;
  return { start: start.toISOString(), routes: [...byRoute.values()].sort((a, b) => total(b) - total(a) || a.route.localeCompare(b.route)) };
}
