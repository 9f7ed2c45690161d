/**
 * How the dashboard writes numbers, rates and times. Times are shown in the browser's time
 * zone (the `herald_tz` cookie its script sets), so a page and the overview's days agree.
 */
const integer = new Intl.NumberFormat('en-US');

export const count = (n: number | null | undefined) => integer.format(n ?? 0);

/** A fraction as a percentage: `0.5625` → `56.3 %`; no denominator → `–`. */
export function percent(rate: number | null, digits = 1): string {
  return rate === null ? '–' : `${(rate * 100).toFixed(digits)} %`;
}

/** `part` of `whole` as a fraction, or null. */
export const share = (part: number, whole: number) => (whole > 0 ? part / whole : null);

/** `2026-12-01T10:00:00.123456Z` → `1 Dec 2026, 11:00` in the zone. */
export function when(timestamp: string | null | undefined, tz: string): string {
  if (!timestamp) return '–';
  const d = new Date(timestamp);
  if (Number.isNaN(d.getTime())) return timestamp;
  return new Intl.DateTimeFormat('en-GB', { timeZone: tz, dateStyle: 'medium', timeStyle: 'short' }).format(d);
}

/** An hour label for a timeline: `1 Dec, 11:00`. */
export function hourLabel(timestamp: string, tz: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone: tz, day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' }).format(new Date(timestamp));
}

/** A day label for a daily chart: `2026-12-01` → `1 Dec`. */
export function dayLabel(date: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', day: 'numeric', month: 'short' }).format(new Date(`${date}T00:00:00Z`));
}
