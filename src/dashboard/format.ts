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

/** Formatters are costly to make (~50 µs each): one per zone and style, kept. */
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(tz: string, style: 'when' | 'hour' | 'day' | 'date'): Intl.DateTimeFormat {
  const key = `${style} ${tz}`;
  let f = formatters.get(key);
  if (!f) {
    const options: Record<typeof style, Intl.DateTimeFormatOptions> = {
      when: { dateStyle: 'medium', timeStyle: 'short' },
      hour: { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' },
      day: { day: 'numeric', month: 'short' },
      date: { year: 'numeric', month: '2-digit', day: '2-digit' },
    };
    f = new Intl.DateTimeFormat(style === 'date' ? 'en-CA' : 'en-GB', { timeZone: tz, ...options[style] });
    if (formatters.size > 1000) formatters.clear();
    formatters.set(key, f);
  }
  return f;
}

/** `2026-12-01T10:00:00.123456Z` → `1 Dec 2026, 11:00` in the zone. */
export function when(timestamp: string | null | undefined, tz: string): string {
  if (!timestamp) return '–';
  const d = new Date(timestamp);
  if (Number.isNaN(d.getTime())) return timestamp;
  return formatter(tz, 'when').format(d);
}

/** An hour label for a timeline: `1 Dec, 11:00`. */
export function hourLabel(timestamp: string, tz: string): string {
  return formatter(tz, 'hour').format(new Date(timestamp));
}

/** A day label for a daily chart: `2026-12-01` → `1 Dec`. */
export function dayLabel(date: string): string {
  return formatter('UTC', 'day').format(new Date(`${date}T00:00:00Z`));
}

/** The day (`YYYY-MM-DD`) a timestamp falls on in the zone. */
export function dayOf(timestamp: string, tz: string): string {
  return formatter(tz, 'date').format(new Date(timestamp));
}

/**
 * A failed import's recorded error as a person reads it. The record keeps a refusal's field
 * errors as the API answers them, JSON (`{"file":["The file must …"]}`); the page shows their
 * messages. Any other error is shown as it is.
 */
export function importError(error: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(error);
  } catch {
    return error;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return error;
  return Object.values(parsed as Record<string, unknown>)
    .flatMap((v) => (Array.isArray(v) ? v.map(String) : [String(v)]))
    .join(' ');
}
