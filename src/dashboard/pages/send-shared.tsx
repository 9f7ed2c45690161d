import type { z } from 'zod';
import type { RouteDef } from '../../http/routes';
import { apiRoutes } from '../../resources';
import type { singleSendResponse } from '../../resources/single-sends/single-sends.schemas';
import { getSingleSend } from '../../resources/single-sends/single-sends.service';
import { ScheduleType, SendStatus } from '../../states';
import type { PageContext } from '../respond';

/**
 * What the Sends pages share (send-list, send-form, send-view): the API routes their forms run,
 * a send's status in words, and times in the browser's zone to and from the API's UTC.
 */

/** An API route's definition by method and path (the dashboard's forms run them through submitRoute). */
export function apiRoute(method: RouteDef['method'], path: string): RouteDef {
  const def = apiRoutes.find((r) => r.method === method && r.path === path);
  if (!def) throw new Error(`no API route ${method.toUpperCase()} ${path}`);
  return def;
}

export const STATUS_WORDS: Record<number, string> = {
  [SendStatus.Draft]: 'Draft',
  [SendStatus.Ready]: 'Scheduled',
  [SendStatus.Running]: 'Sending',
  [SendStatus.Completed]: 'Completed',
};

/** A ready send due now has not started yet: it is about to, rather than scheduled. */
export function statusWord(status: number, scheduleType: number): string {
  if (status === SendStatus.Ready && scheduleType === ScheduleType.Now) return 'Starting';
  return STATUS_WORDS[status] ?? String(status);
}

/** Not started: it may be edited, scheduled, unscheduled and deleted. */
export const notStarted = (status: number) => status === SendStatus.Draft || status === SendStatus.Ready;

/** A send as GET /single-send/details gives it (the A/B settings on an A/B send). */
export type SendRecord = z.output<typeof singleSendResponse>;

/** The account's send by utr (another account's or none: NF2, which the pages answer as 404). */
export async function loadSend(p: PageContext, utr: string): Promise<SendRecord> {
  return (await getSingleSend(p.ctx, utr)) as SendRecord;
}

const wallClocks = new Map<string, Intl.DateTimeFormat>();
function wallClock(tz: string): Intl.DateTimeFormat {
  let f = wallClocks.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    if (wallClocks.size > 1000) wallClocks.clear();
    wallClocks.set(tz, f);
  }
  return f;
}

/** The wall clock in `tz` at an instant: [year, month, day, hour, minute, second]. */
function wallParts(instant: number, tz: string): number[] {
  const parts = Object.fromEntries(wallClock(tz).formatToParts(new Date(instant)).map((x) => [x.type, x.value]));
  return [parts.year, parts.month, parts.day, parts.hour, parts.minute, parts.second].map(Number);
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

/**
 * A `datetime-local` value read in the browser's zone as the API's UTC date and time; undefined
 * when it is no such value (the caller passes it on as typed, and the API's check words the refusal).
 */
export function localToUtc(value: string, tz: string): { date: string; time: string } | undefined {
  const m = LOCAL.exec(value);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map((v) => Number(v ?? 0));
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  const check = new Date(wall);
  if (check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) return undefined;
  const offset = (at: number) => {
    const [py, pmo, pd, ph, pmi, ps] = wallParts(at, tz);
    return Date.UTC(py, pmo - 1, pd, ph, pmi, ps) - Math.floor(at / 1000) * 1000;
  };
  let at = wall - offset(wall);
  at = wall - offset(at);
  const iso = new Date(at).toISOString();
  return { date: iso.slice(0, 10), time: iso.slice(11, 19) };
}

/** An instant (ISO) as a `datetime-local` value in the zone (seconds only when there are some). */
export function utcToLocal(iso: string, tz: string): string {
  const [y, mo, d, h, mi, s] = wallParts(new Date(iso).getTime(), tz);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(y, 4)}-${p(mo)}-${p(d)}T${p(h)}:${p(mi)}${s ? `:${p(s)}` : ''}`;
}

/** The first instant of a day (`YYYY-MM-DD`) in the zone. */
export function dayStart(day: string, tz: string): Date {
  const utc = localToUtc(`${day}T00:00`, tz);
  return new Date(`${utc!.date}T${utc!.time}Z`);
}
