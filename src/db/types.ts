import pg from 'pg';

/**
 * The spec's `<timestamp>` is ISO 8601 UTC with six fractional digits and a Z, which a JS
 * Date (milliseconds) cannot carry. Sessions run with TimeZone=UTC, so PostgreSQL writes
 * `2026-11-22 07:27:00.123456+00`; we keep that text and reshape it without a Date.
 */
export function formatTimestamp(raw: string): string {
  const m = /^(\d{4,}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?/.exec(raw);
  if (!m) return raw;
  return `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(6, '0')}Z`;
}

/** `<datetime>`: `YYYY-MM-DD HH:MM:SS` in UTC, from a formatted timestamp. */
export function toDatetime(ts: string | null | undefined): string | null {
  if (!ts) return null;
  return `${ts.slice(0, 10)} ${ts.slice(11, 19)}`;
}

let installed = false;

/** Installs the result parsers once per process (pg's type registry is global). */
export function installTypeParsers(): void {
  if (installed) return;
  installed = true;
  pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, formatTimestamp);
  pg.types.setTypeParser(pg.types.builtins.TIMESTAMP, formatTimestamp);
  // COUNT(*) and BIGSERIAL come back as int8; every count we return fits a double.
  pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));
  // `date` stays text: single sends print it as-is (YYYY-MM-DD).
  pg.types.setTypeParser(pg.types.builtins.DATE, (v: string) => v);
}
