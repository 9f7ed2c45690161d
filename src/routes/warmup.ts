import type { Warmup } from './types';

/**
 * The `standard` warm-up: messages per hour a new IP or relay account may send on day d, d = 0
 * being the schedule's `start`. It follows SendGrid's published IP warm-up (20 an hour on day 0,
 * 1,000 an hour by day 12): 20 × 1.4^d, rounded. Gmail's guidance is never to double volume from
 * one day to the next; ×1.4 stays under ×1.5 every day. The schedule ends on the first day at or
 * above 1,000 an hour (day 12: 1,134); from day 13 the route is warm and only its quotas hold.
 *
 *   day:    0   1   2   3   4    5    6    7    8    9   10   11    12
 *   cap:   20  28  39  55  77  108  151  211  295  413  579  810  1134
 */
export const STANDARD_WARMUP: readonly number[] = standardSchedule();

function standardSchedule(): number[] {
  const caps: number[] = [];
  for (let day = 0; ; day += 1) {
    const cap = Math.round(20 * 1.4 ** day);
    caps.push(cap);
    if (cap >= 1000) return caps;
  }
}

const DAY_MS = 86_400_000;

/**
 * The warm-up's day and hourly cap at `now`, or null when the route has no warm-up or is past the
 * schedule's last day (warm). Days are UTC calendar days from `start` (YYYY-MM-DD). Before `start`
 * the route is held to day 0's cap: a schedule set up ahead of time is not a licence to send at
 * full rate until it begins.
 */
export function warmupCap(w: Warmup | undefined, now: Date): { day: number; capPerHour: number } | null {
  if (!w) return null;
  const schedule = w.schedule === 'standard' ? STANDARD_WARMUP : w.schedule;
  const start = Date.parse(`${w.start}T00:00:00Z`);
  if (Number.isNaN(start) || schedule.length === 0) return null;
  const day = Math.max(0, Math.floor((now.getTime() - start) / DAY_MS));
  if (day >= schedule.length) return null;
  return { day, capPerHour: schedule[day] };
}
