/**
 * Delivery routes (issue 36): the shapes every part of src/routes/ shares. A route is one relay
 * (an SMTP URL) with a weight, quotas, the streams it carries and an optional warm-up schedule;
 * SMTP_ROUTES (or SMTP_ROUTES_FILE) lists them, SMTP_URL alone is one route named `default`.
 */

/** What a message is: a send's or an automation's (`marketing`), or Herald's own mail (`system`). */
export type Stream = 'marketing' | 'system';
export const STREAMS: readonly Stream[] = ['marketing', 'system'];

/** A route's warm-up: hourly caps by day from `start` (day 0); past the last day the route is warm. */
export interface Warmup {
  /** YYYY-MM-DD, UTC: day 0 of the schedule. */
  start: string;
  /** `standard` (src/routes/warmup.ts) or the operator's own hourly caps by day. */
  schedule: 'standard' | number[];
}

/** One configured route, as parsed and checked at start (src/routes/config.ts). */
export interface RouteConfig {
  name: string;
  /** smtp: or smtps:, credentials allowed: never logged, echoed or stored. */
  url: string;
  /** The share of messages among the healthy routes with room (default 1). */
  weight: number;
  maxPerSecond?: number;
  maxPerHour?: number;
  maxPerDay?: number;
  /** Connections open at most to this relay, per process (default SMTP_POOL_SIZE). */
  poolSize: number;
  /** The streams it carries (default both). */
  streams: Stream[];
  warmup?: Warmup;
}

/** A route's health as stored (route_state.status); `warming` is derived from the schedule and shown, never stored. */
export type StoredRouteStatus = 'up' | 'down' | 'throttled';
export type RouteStatus = StoredRouteStatus | 'warming';

/** How a route is shown to an account (GET /routes, the dashboard's Deliverability page). */
export interface RouteView {
  name: string;
  status: RouteStatus;
  weight: number;
  max_per_second: number | null;
  max_per_hour: number | null;
  max_per_day: number | null;
  streams: Stream[];
  sent_last_hour: number;
  sent_today: number;
  warmup: { day: number; cap_per_hour: number } | null;
  down_since: string | null;
  /** The last error the relay answered, with credentials removed. */
  last_error: string | null;
  blocked_providers: Array<{ provider: string; since: string; until: string }>;
}
