import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { invalid, notFound1 } from '../../http/errors';
import { abReport } from '../../ab/report';
import { eventsWithReports, routeBlockedPairs } from '../../events/reads';
import { latestSentSends, statusOfSend } from '../../single-sends/rows';
import { findOwner, OWNERS, type NamedOwnerKind } from '../../sources';
import { SendStatus } from '../../states';
import { COUNTERS, readCounters, readEmailCounters, readLinks, readSentByDay, readSeries, type Counts } from '../../statistics';
import { findAutomation } from '../automations/automations.service';
import { DNS_PROBLEM_STATUSES, DNS_PROBLEMS, OVERVIEW_DAYS } from './reports.sql';
import type { EmailReport, Overview, OverviewQuery, OwnerStats } from './reports.schemas';

/**
 * The Reports family: the statistics of sends and automations (src/statistics) as the API and
 * the dashboard show them (src/dashboard reads through these functions, as GET /reports/… and the
 * stats endpoints do), and what they show beside them: the overview's warnings, a bounce's or
 * complaint's kept report. See docs/decisions.md, "Message sources and statistics" and "Dashboard".
 */

/**
 * GET /single/send/stats and /automations/stats: an owner's counters (src/statistics) under the
 * column names its resource has in the spec (`delivered` / `total_delivered`, …) followed by
 * Herald's own, every tracked link, and the hourly timeline of the hours in which something it
 * shows (deliveries, opens, clicks, unsubscribes) happened. A deleted send or automation is not
 * found.
 */
export async function ownerStats<K extends NamedOwnerKind>(ctx: Ctx, kind: K, utr: string): Promise<OwnerStats[K]> {
  const found = await findOwner(ctx.db, ctx.userId, kind, utr);
  if (!found) throw notFound1();
  const owner = { kind, id: found.id };
  const counts = (await readCounters(ctx.db, ctx.userId, kind, [found.id])).get(found.id);
  if (!counts) throw notFound1();
  const named = Object.fromEntries(COUNTERS.map((c) => [OWNERS[kind].counters[c], counts[c]]));
  const timeline = (await readSeries(ctx.db, ctx.userId, { owner, bucket: 'hour' }))
    .map((h) => ({ hour: h.at, delivered: h.delivered, opens: h.opens, clicks: h.total_clicks, unsubscribes: h.unsubscribes }))
    .filter((h) => h.delivered + h.opens + h.clicks + h.unsubscribes > 0);
  const links = await readLinks(ctx.db, ctx.userId, owner);
  if (kind !== 'single_send') return { utr: found.utr, ...named, links, timeline } as OwnerStats[K];
  // An A/B send adds its test (src/ab/report.ts); a design test's links are its variations'.
  const status = await statusOfSend(ctx.db, ctx.userId, found.id);
  const ab = await abReport(ctx.db, ctx.userId, found.id, { counts, completed: status === SendStatus.Completed });
  return (ab ? { utr: found.utr, ...named, links: ab.links ?? links, timeline, ab: ab.ab } : { utr: found.utr, ...named, links, timeline }) as OwnerStats[K];
}

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

type DayCounts = Overview['totals'];
const OVERVIEW_COUNTS = ['sends', 'delivered', 'unique_opens', 'unique_clicks', 'bounces', 'complaints'] as const satisfies ReadonlyArray<keyof DayCounts>;

/** The overview's counts of a statistics row (`sends` are the messages queued). */
function dayCounts(c: Counts): DayCounts {
  return { sends: c.triggered, delivered: c.delivered, unique_opens: c.unique_opens, unique_clicks: c.unique_clicks, bounces: c.bounces, complaints: c.complaints };
}

/**
 * The overview's numbers, by day of the reader's time zone (docs/decisions.md, "Dashboard"). A
 * single send counts on the day it was sent, with everything its messages did since (its own
 * counters, read.ts `readSentByDay`); automation emails count by the hour each thing happened
 * (the hourly rollup, `readSeries`). Both are rollups: an account's number of messages does not
 * matter, only its sends and automation hours in the window. An hour goes to the day it starts in.
 */
export async function overview(ctx: Ctx, q: OverviewQuery): Promise<Overview> {
  const tz = q.tz ?? 'UTC';
  const days = q.days ?? 30;
  if (!(await knownTimeZone(ctx.db, tz))) throw invalid({ tz: ['The selected tz is invalid.'] });
  const window = (await ctx.db.raw(OVERVIEW_DAYS, { tz, days })).rows as Array<{ date: string; since: string }>;
  const since = window[0].since;
  const [sent, automations, latest, warnings] = await Promise.all([
    readSentByDay(ctx.db, ctx.userId, { since, timeZone: tz }),
    readSeries(ctx.db, ctx.userId, { kind: 'automation', since, bucket: 'day', timeZone: tz }),
    latestSends(ctx),
    overviewWarnings(ctx, days),
  ]);
  const daily = window.map((d) => ({ date: d.date, ...(Object.fromEntries(OVERVIEW_COUNTS.map((c) => [c, 0])) as DayCounts) }));
  // Each bucket to the day it starts in: the last day whose midnight is not after it (earlier ones are outside).
  for (const bucket of [...sent, ...automations]) {
    const i = window.findLastIndex((d) => d.since <= bucket.at);
    if (i < 0) continue;
    const counts = dayCounts(bucket);
    for (const c of OVERVIEW_COUNTS) daily[i][c] += counts[c];
  }
  const totals = Object.fromEntries(OVERVIEW_COUNTS.map((c) => [c, daily.reduce((sum, d) => sum + d[c], 0)])) as DayCounts;
  const complaint = ratio(totals.complaints, totals.delivered);
  return {
    days,
    time_zone: tz,
    since,
    totals,
    rates: {
      unique_open: ratio(totals.unique_opens, totals.delivered),
      human_click: ratio(totals.unique_clicks, totals.delivered),
      bounce: ratio(totals.bounces, totals.delivered + totals.bounces),
      complaint,
    },
    complaint_level: complaint === null || complaint <= COMPLAINT_WARNING ? 'ok' : complaint <= COMPLAINT_LIMIT ? 'warning' : 'over',
    daily,
    latest_sends: latest,
    warnings,
  };
}

/** The newest sends that went out (index single_sends_user_sent_index), with their counters. */
async function latestSends(ctx: Ctx): Promise<Overview['latest_sends']> {
  const sends = await latestSentSends<{ id: number } & Omit<Overview['latest_sends'][number], keyof DayCounts>>(ctx.db, ctx.userId, LATEST);
  const counts = await readCounters(ctx.db, ctx.userId, 'single_send', sends.map((s) => s.id));
  return sends.map(({ id, ...send }) => {
    const { sends: triggered, ...c } = dayCounts(counts.get(id)!);
    return { ...send, triggered, ...c };
  });
}

/**
 * What needs a person: a sending domain's record the last check found missing or different, a
 * webhook endpoint failing or disabled by its failures (a paused one is the user's choice), an
 * import that failed within the window, a delivery route blocked by a receiving provider for this
 * account's mail (its `route.blocked` event in the window, while the block holds).
 */
async function overviewWarnings(ctx: Ctx, days: number): Promise<Overview['warnings']> {
  const [dns, hooks, imports, blocks] = await Promise.all([
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
    routeBlocks(ctx, days),
  ]);
  return [
    ...(dns.rows as Array<{ sender_id: number; domain: string; record: 'dkim' | 'spf' | 'dmarc' | 'bounce'; status: (typeof DNS_PROBLEM_STATUSES)[number]; checked_at: string | null }>).map(
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
    ...blocks,
  ];
}

type RouteWarning = Extract<Overview['warnings'][number], { type: 'route' }>;

/**
 * The blocks behind this account's `route.blocked` events of the window that still hold. Two reads
 * joined here: `events` is the account's (distributed on Citus), `route_blocks` the installation's
 * (on the coordinator), and the block's row, not the event, says whether it still holds.
 */
async function routeBlocks(ctx: Ctx, days: number): Promise<RouteWarning[]> {
  const pairs = await routeBlockedPairs(ctx.db, ctx.userId, days);
  if (pairs.length === 0) return [];
  const rows = (
    await ctx.db.raw(
      `SELECT b.route, b.provider, b.since, b.until, b.last_error AS diagnostic
       FROM route_blocks b JOIN json_to_recordset(?::json) AS p(route text, provider text) ON p.route = b.route AND p.provider = b.provider
       WHERE b.until > now()
       ORDER BY b.since DESC`,
      [JSON.stringify(pairs)],
    )
  ).rows as Array<Omit<RouteWarning, 'type'>>;
  return rows.map((r) => ({ type: 'route' as const, ...r }));
}

/** Each email of an automation with its own counters, in the order they go out (NF1 for another account's). */
export async function automationEmails(ctx: Ctx, utr: string): Promise<{ utr: string; emails: EmailReport[] }> {
  const a = await findAutomation(ctx, utr, notFound1);
  const emails = (await ctx
    .db('automation_schedules')
    .where({ user_id: ctx.userId, automation_id: a.id })
    .whereNull('deleted_at')
    .orderBy('id')
    .select('id', 'utr', 'subject', 'waiting_period', 'waiting_type')) as Array<{ id: number; utr: string; subject: string; waiting_period: number; waiting_type: string }>;
  const counts = await readEmailCounters(ctx.db, ctx.userId, emails.map((e) => e.id));
  return {
    utr: a.utr,
    emails: emails.map(({ id, ...email }) => {
      const { opens, ...c } = counts.get(id)!;
      return { ...email, ...c, total_opens: opens };
    }),
  };
}

/** Which of these `bounced`/`complained` events have their report kept (GET /reports/kept-report answers for them). */
export async function eventsWithKeptReport(ctx: Ctx, eventIds: Array<number | string>): Promise<Set<string>> {
  const ids = eventIds.map(String).filter((id) => /^\d{1,18}$/.test(id));
  if (ids.length === 0) return new Set();
  const rows = (await eventsWithReports(ctx.db, ctx.userId).whereIn('e.id', ids).whereNotNull('r.raw').select('e.id')) as Array<{ id: string | number }>;
  return new Set(rows.map((r) => String(r.id)));
}

/**
 * The report a bounce or complaint came in (as received, ≤ 256 KB), by its event: NF1 for
 * another account's event, one of another type, or one whose report was not kept (refused
 * while sending, or purged after BOUNCE_RETENTION_DAYS).
 */
export async function keptReport(ctx: Ctx, eventId: number | string): Promise<{ raw: string }> {
  if (!/^\d{1,18}$/.test(String(eventId))) throw notFound1();
  const row = (await eventsWithReports(ctx.db, ctx.userId).where('e.id', eventId).whereNotNull('r.raw').first('r.raw')) as { raw: Buffer } | undefined;
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
