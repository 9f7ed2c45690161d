import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { invalid, notFound1 } from '../../http/errors';
import { findAutomation } from '../automations/automations.service';
import { DNS_PROBLEMS, LATEST_SENDS, OVERVIEW_COUNTS, OVERVIEW_DAILY, type CountName } from './reports.sql';
import type { EmailReport, Overview, OverviewQuery } from './reports.schemas';

/**
 * Reports the API did not have and the dashboard shows (src/dashboard reads them through
 * these functions, as GET /reports/… does): the overview, each automation email's counters,
 * a bounce's or complaint's kept report. The statistics they read are kept by the events'
 * consumers (src/events/statistics.ts, email-counters.ts); see docs/decisions.md, "Dashboard".
 */

/** The complaint rate Gmail and Yahoo hold bulk senders to, and where Herald starts to warn. */
export const COMPLAINT_LIMIT = 0.003;
export const COMPLAINT_WARNING = 0.001;
const LATEST = 10;

let zones: Promise<Set<string>> | undefined;

/**
 * Whether PostgreSQL knows the time zone (its list is read once per process). Offsets such as
 * `+01:00` are not taken: PostgreSQL reads POSIX offsets with the sign reversed.
 */
export async function knownTimeZone(db: Knex, tz: string): Promise<boolean> {
  zones ??= db
    .raw('SELECT name FROM pg_timezone_names')
    .then((r: { rows: Array<{ name: string }> }) => new Set(r.rows.map((z) => z.name)))
    .catch((err: unknown) => {
      zones = undefined;
      throw err;
    });
  return /^[A-Za-z]/.test(tz) && (await zones).has(tz);
}

const ratio = (n: number, d: number) => (d > 0 ? Math.round((n / d) * 1e6) / 1e6 : null);

export async function overview(ctx: Ctx, q: OverviewQuery): Promise<Overview> {
  const tz = q.tz ?? 'UTC';
  const days = q.days ?? 30;
  if (!(await knownTimeZone(ctx.db, tz))) throw invalid({ tz: ['The selected tz is invalid.'] });
  const [daily, latest, warnings] = await Promise.all([
    ctx.db.raw(OVERVIEW_DAILY, { tz, days, userId: ctx.userId }),
    ctx.db.raw(LATEST_SENDS, { userId: ctx.userId, limit: LATEST }),
    overviewWarnings(ctx, days),
  ]);
  const rows = daily.rows as Array<{ date: string; since: string } & Record<CountName, number>>;
  const totals = Object.fromEntries(OVERVIEW_COUNTS.map((c) => [c, rows.reduce((sum, r) => sum + r[c], 0)])) as Record<CountName, number>;
  const complaint = ratio(totals.complaints, totals.delivered);
  return {
    days,
    time_zone: tz,
    since: rows[0].since,
    totals,
    rates: {
      unique_open: ratio(totals.unique_opens, totals.delivered),
      human_click: ratio(totals.unique_clicks, totals.delivered),
      bounce: ratio(totals.bounces, totals.delivered + totals.bounces),
      complaint,
    },
    complaint_level: complaint === null || complaint <= COMPLAINT_WARNING ? 'ok' : complaint <= COMPLAINT_LIMIT ? 'warning' : 'over',
    daily: rows.map(({ since: _since, ...day }) => day),
    latest_sends: latest.rows,
    warnings,
  };
}

/**
 * What needs a person: a sending domain's record the last check found missing or different, a
 * webhook endpoint failing or disabled by its failures (a paused one is the user's choice), an
 * import that failed within the window.
 */
async function overviewWarnings(ctx: Ctx, days: number): Promise<Overview['warnings']> {
  const [dns, hooks, imports] = await Promise.all([
    ctx.db.raw(DNS_PROBLEMS, { userId: ctx.userId }),
    ctx
      .db('webhooks')
      .where({ user_id: ctx.userId })
      .whereNull('deleted_at')
      .whereNotNull('failing_since')
      .orderBy('id')
      .select('id', 'url', 'is_active', 'failing_since'),
    ctx
      .db('contact_imports')
      .where({ user_id: ctx.userId, status: 'failed' })
      .where('created_at', '>', ctx.db.raw(`now() - make_interval(days => ?)`, [days]))
      .orderBy('id', 'desc')
      .limit(20)
      .select('id', 'file_name', 'error', 'finished_at'),
  ]);
  return [
    ...(dns.rows as Array<{ sender_id: number; domain: string; record: 'dkim' | 'spf' | 'dmarc' | 'bounce'; status: 'missing' | 'mismatch'; checked_at: string | null }>).map(
      (r) => ({ type: 'dns' as const, ...r }),
    ),
    ...(hooks as Array<{ id: number; url: string; is_active: number; failing_since: string }>).map((h) => ({
      type: 'webhook' as const,
      webhook_id: h.id,
      url: h.url,
      state: h.is_active ? ('failing' as const) : ('disabled' as const),
      failing_since: h.failing_since,
    })),
    ...(imports as Array<{ id: number; file_name: string; error: string | null; finished_at: string | null }>).map((i) => ({
      type: 'import' as const,
      import_id: i.id,
      file_name: i.file_name,
      error: i.error,
      finished_at: i.finished_at,
    })),
  ];
}

/** Each email of an automation with its counters, in the order they go out (NF1 for another account's). */
export async function automationEmails(ctx: Ctx, utr: string): Promise<{ utr: string; emails: EmailReport[] }> {
  const a = await findAutomation(ctx, utr, notFound1);
  const emails = (await ctx
    .db('automation_schedules')
    .where({ user_id: ctx.userId, automation_id: a.id })
    .whereNull('deleted_at')
    .orderBy('id')
    .select(
      'utr',
      'subject',
      'waiting_period',
      'waiting_type',
      'triggered',
      'delivered',
      'unique_opens',
      'total_opens',
      'unique_clicks',
      'total_clicks',
      'bounces',
      'complaints',
      'unsubscribes',
    )) as EmailReport[];
  return { utr: a.utr, emails };
}

/** Which of these `bounced`/`complained` events have their report kept (GET /reports/kept-report answers for them). */
export async function eventsWithKeptReport(ctx: Ctx, eventIds: Array<number | string>): Promise<Set<string>> {
  const ids = eventIds.map(String).filter((id) => /^\d{1,18}$/.test(id));
  if (ids.length === 0) return new Set();
  const rows = (await keptReports(ctx).whereIn('e.id', ids).whereNotNull('r.raw').select('e.id')) as Array<{ id: string | number }>;
  return new Set(rows.map((r) => String(r.id)));
}

/** Events of the account joined to the report each was recorded from. */
function keptReports(ctx: Ctx) {
  return ctx
    .db('events as e')
    .join('bounce_reports as r', (j) =>
      j
        .on('r.user_id', 'e.user_id')
        .andOn('r.delivery_id', 'e.delivery_id')
        .andOn('r.kind', ctx.db.raw(`CASE WHEN e.type = 'complained' THEN 'complaint' ELSE e.data->>'kind' END`)),
    )
    .where('e.user_id', ctx.userId)
    .whereIn('e.type', ['bounced', 'complained']);
}

/**
 * The report a bounce or complaint came in (as received, ≤ 256 KB), by its event: NF1 for
 * another account's event, one of another type, or one whose report was not kept (refused
 * while sending, or purged after BOUNCE_RETENTION_DAYS).
 */
export async function keptReport(ctx: Ctx, eventId: number | string): Promise<{ raw: string }> {
  if (!/^\d{1,18}$/.test(String(eventId))) throw notFound1();
  const row = (await keptReports(ctx).where('e.id', eventId).whereNotNull('r.raw').first('r.raw')) as { raw: Buffer } | undefined;
  if (!row) throw notFound1();
  return { raw: row.raw.toString('utf8') };
}

/** When each of the account's sending domains was last checked (its active key's check), by domain. */
export async function lastChecks(ctx: Ctx, domains: string[]): Promise<Map<string, string | null>> {
  if (domains.length === 0) return new Map();
  const rows = (await ctx
    .db('dkim_keys')
    .where({ user_id: ctx.userId, state: 'active' })
    .whereIn('domain', [...new Set(domains)])
    .select('domain', 'checked_at')) as Array<{ domain: string; checked_at: string | null }>;
  return new Map(rows.map((r) => [r.domain, r.checked_at]));
}
