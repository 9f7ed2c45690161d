import { z } from 'zod';
import { AB_CRITERIA, AB_IF_INCONCLUSIVE, AB_TYPES } from '../../ab/settings';
import { abStatus } from '../../states';
import { COUNTERS } from '../../statistics';
import { intId, timestamp } from '../shared/schemas';

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
  decided_by: z.enum(['significant', 'leader', 'original', 'manual']).nullable(),
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
