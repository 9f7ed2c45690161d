/**
 * The counters every owner of statistics keeps (a single send, an automation: src/sources
 * `OWNERS` names their columns on each table). In the order GET /single/send/stats and
 * /automations/stats give them.
 */
export const COUNTERS = [
  'triggered',
  'delivered',
  'unique_opens',
  'opens',
  'bounces',
  'unsubscribes',
  'deferred',
  'dropped',
  'bounced_hard',
  'bounced_soft',
  'unique_clicks',
  'total_clicks',
  'complaints',
] as const;
export type Counter = (typeof COUNTERS)[number];

/**
 * The counters recorded events move (src/statistics/write.ts): all but `triggered`, which is the
 * recipient rows queued, counted where they are written (fan-out, the automation engine: `countQueued`).
 */
export type EventCounter = Exclude<Counter, 'triggered'>;
export const EVENT_COUNTERS = COUNTERS.filter((c): c is EventCounter => c !== 'triggered');

/**
 * `message_stats_hourly`: every counter per owner and hour. The first four columns were the
 * timeline's before the others joined (migration 202612040100), two under shorter names; `queued`
 * (migration 202612090200) is `triggered`: the recipient rows written in that hour, by fan-out for
 * a single send and by the automation engine for an automation's emails.
 */
export const HOURLY_COLUMNS: Record<Counter, string> = {
  triggered: 'queued',
  delivered: 'delivered',
  unique_opens: 'unique_opens',
  opens: 'opens',
  bounces: 'bounces',
  unsubscribes: 'unsubscribes',
  deferred: 'deferred',
  dropped: 'dropped',
  bounced_hard: 'bounced_hard',
  bounced_soft: 'bounced_soft',
  unique_clicks: 'unique_clicks',
  total_clicks: 'clicks',
  complaints: 'complaints',
};

export type Counts = Record<Counter, number>;
export type EventCounts = Record<EventCounter, number>;
