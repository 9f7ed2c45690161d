import { z } from 'zod';
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

export const singleSendStats = z.strictObject({
  utr: z.string(),
  triggered: intId(),
  delivered: intId(),
  unique_opens: intId(),
  total_opens: intId(),
  bounces: intId(),
  unsubscribes: intId(),
  ...counters,
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
