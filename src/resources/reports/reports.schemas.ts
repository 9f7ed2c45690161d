import { z } from 'zod';
import { DECIDED_BY } from '../../ab/bayes';
import { AB_CRITERIA, AB_IF_INCONCLUSIVE, AB_TYPES } from '../../ab/settings';
import { integer } from '../../http/fields';
import { abStatus, SendStatus } from '../../states';
import { COUNTERS } from '../../statistics';
import { intId, oneOf, timestamp } from '../shared/schemas';
import { DNS_PROBLEM_STATUSES } from './reports.sql';

/** Herald's counters beside the spec's, the tracked links and the hourly timeline (both endpoints). */
const counters = {
  deferred: intId(),
  dropped: intId(),
  bounced_hard: intId(),
  bounced_soft: intId(),
  unique_clicks: intId(),
  total_clicks: intId(),
  complaints: intId(),
  links: z.array(z.strictObject({ url: z.string(), unique_clicks: intId(), total_clicks: intId() })),
  timeline: z.array(
    z.strictObject({ hour: timestamp(), delivered: intId(), opens: intId(), clicks: intId(), unsubscribes: intId() }),
  ),
};

const counterSet = z.strictObject(Object.fromEntries(COUNTERS.map((c) => [c, intId()])) as Record<(typeof COUNTERS)[number], ReturnType<typeof intId>>);
const linkCounts = z.strictObject({ url: z.string(), unique_clicks: intId(), total_clicks: intId() });

/** An A/B send's test (src/ab/report.ts): settings, state, decision, the variations side by side, the counters by phase. */
const abReport = z.strictObject({
  type: z.enum(AB_TYPES),
  test_percentage: intId(),
  duration_minutes: intId(),
  winner_criteria: z.enum(AB_CRITERIA),
  confidence: z.number(),
  if_inconclusive: z.enum(AB_IF_INCONCLUSIVE),
  status: z.enum([...abStatus.values, 'completed']),
  test_size: intId().nullable(),
  winner: intId().nullable(),
  decided_at: timestamp().nullable(),
  decided_by: z.enum(DECIDED_BY).nullable(),
  variations: z.array(
    z.strictObject({
      index: intId(),
      subject: z.string().optional(),
      template_id: intId().optional(),
      sender_id: intId().optional(),
      recipients: intId(),
      delivered: intId(),
      unique_opens: intId(),
      unique_clicks: intId(),
      open_rate: z.number().min(0).max(1),
      click_rate: z.number().min(0).max(1),
      interval: z.tuple([z.number().min(0).max(1), z.number().min(0).max(1)]),
      probability_best: z.number().min(0).max(1),
      links: z.array(linkCounts).optional(),
    }),
  ),
  phases: z.strictObject({ test: counterSet, winner: counterSet }),
});

export const singleSendStats = z.strictObject({
  utr: z.string(),
  triggered: intId(),
  delivered: intId(),
  unique_opens: intId(),
  total_opens: intId(),
  bounces: intId(),
  unsubscribes: intId(),
  ...counters,
  ab: abReport.optional().meta({ description: 'an A/B send’s test (absent on an ordinary send)' }),
});

export const automationStats = z.strictObject({
  utr: z.string(),
  total_triggered: intId(),
  total_delivered: intId(),
  total_unique_opens: intId(),
  total_opens: intId(),
  total_bounces: intId(),
  total_unsubscribe: intId(),
  ...counters,
});

/** What ownerStats answers for each kind of owner. */
export interface OwnerStats {
  single_send: z.output<typeof singleSendStats>;
  automation: z.output<typeof automationStats>;
}

/** GET /reports/overview: how many days back (today counts as one) and in which time zone. */
export const overviewQuery = z.object({
  days: integer(1, 366).optional().meta({ description: '1–366, default 30: today and the days before it' }),
  tz: z
    .string()
    .max(64)
    .optional()
    .meta({ description: 'IANA time zone the days are counted in (a browser’s `Intl.DateTimeFormat().resolvedOptions().timeZone`), default UTC', example: 'Europe/Paris' }),
});
export type OverviewQuery = z.output<typeof overviewQuery>;

const counts = {
  sends: intId().meta({ description: 'messages queued: single sends’ recipients, automation emails' }),
  delivered: intId(),
  unique_opens: intId(),
  unique_clicks: intId().meta({ description: 'first human click of a message (clicks flagged as suspected bots are not counted)' }),
  bounces: intId(),
  complaints: intId(),
};
const rate = () => z.number().nullable().meta({ description: 'a fraction (0.25 = 25 %); null when nothing to divide by' });

export const overviewMessage = z.strictObject({
  days: intId(),
  time_zone: z.string(),
  since: timestamp().meta({ description: 'start of the first day, in the time zone' }),
  totals: z.strictObject(counts),
  rates: z.strictObject({
    unique_open: rate().meta({ description: 'unique opens / delivered' }),
    human_click: rate().meta({ description: 'unique human clicks / delivered' }),
    bounce: rate().meta({ description: 'bounces / (delivered + bounces)' }),
    complaint: rate().meta({ description: 'complaints / delivered' }),
  }),
  complaint_level: z.enum(['ok', 'warning', 'over']).meta({ description: 'warning above 0.1 %, over above 0.3 % (the bulk-sender limit of Gmail and Yahoo)' }),
  daily: z.array(z.strictObject({ date: z.string().meta({ example: '2026-12-01' }), ...counts })),
  latest_sends: z.array(
    z.strictObject({
      utr: z.string(),
      single_send_name: z.string(),
      subject: z.string(),
      status: oneOf(SendStatus),
      sent_at: timestamp(),
      triggered: intId(),
      delivered: intId(),
      unique_opens: intId(),
      unique_clicks: intId(),
      bounces: intId(),
      complaints: intId(),
    }),
  ),
  warnings: z.array(
    z.discriminatedUnion('type', [
      z.strictObject({
        type: z.literal('dns'),
        sender_id: intId(),
        domain: z.string(),
        record: z.enum(['dkim', 'spf', 'dmarc', 'bounce']),
        status: z.enum(DNS_PROBLEM_STATUSES),
        checked_at: timestamp().nullable(),
      }),
      z.strictObject({ type: z.literal('webhook'), webhook_id: intId(), url: z.string(), state: z.enum(['failing', 'disabled']), failing_since: timestamp() }),
      z.strictObject({ type: z.literal('import'), import_id: intId(), file_name: z.string(), error: z.string().nullable(), finished_at: timestamp().nullable() }),
      z.strictObject({
        type: z.literal('route'),
        route: z.string().meta({ description: 'the delivery route a receiving provider blocks' }),
        provider: z.string().meta({ description: 'the receiving provider (google, microsoft, yahoo…, or the recipient domain)' }),
        since: timestamp(),
        until: timestamp().meta({ description: 'when the route is tried again for that provider (ROUTE_BLOCK_HOURS)' }),
        diagnostic: z.string().nullable(),
      }),
    ]),
  ),
});
export type Overview = z.output<typeof overviewMessage>;

export const emailReport = z.strictObject({
  utr: z.string(),
  subject: z.string(),
  waiting_period: intId(),
  waiting_type: z.string(),
  triggered: intId(),
  delivered: intId(),
  unique_opens: intId(),
  total_opens: intId(),
  unique_clicks: intId(),
  total_clicks: intId(),
  bounces: intId(),
  complaints: intId(),
  unsubscribes: intId(),
});
export type EmailReport = z.output<typeof emailReport>;

export const automationEmailsMessage = z.strictObject({ utr: z.string(), emails: z.array(emailReport) });

export const keptReportMessage = z.strictObject({ raw: z.string().meta({ description: 'the bounce or complaint report as received (at most 256 KB)' }) });
