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
 * recipient rows queued, counted by fan-out as it writes them.
 */
export type EventCounter = Exclude<Counter, 'triggered'>;
export const EVENT_COUNTERS = COUNTERS.filter((c): c is EventCounter => c !== 'triggered');

/**
 * `message_stats_hourly`: each event counter per owner and hour. The first four columns were the
 * timeline's before the others joined (migration 202612040100), two under shorter names.
 */
export const HOURLY_COLUMNS: Record<EventCounter, string> = {
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
