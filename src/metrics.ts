import { Counter, Registry } from 'prom-client';

/**
 * Herald's Prometheus metrics (issue 36): one registry per process, served by GET /metrics when
 * METRICS_TOKEN is set. Counters live in memory, so each process (serve, a standalone worker)
 * counts what it did itself; Prometheus sums them across targets. Labels are bounded: routes come
 * from the configuration, outcomes and reasons from fixed lists.
 */
export const registry = new Registry();

/** What became of one message on a route. */
export type MessageOutcome = 'delivered' | 'deferred' | 'bounced' | 'failed';

const messages = new Counter({
  name: 'herald_messages_total',
  help: 'Messages handed to a delivery route, by route and outcome.',
  labelNames: ['route', 'outcome'] as const,
  registers: [registry],
});

const deferrals = new Counter({
  name: 'herald_deferrals_total',
  help: 'Messages put back in the queue without using an attempt, by reason (no_route, quota, warmup, throttled, blocked, down).',
  labelNames: ['reason'] as const,
  registers: [registry],
});

/** One message's outcome on `route` (the runtime router calls it once per message it handles). */
export function countMessage(route: string, outcome: MessageOutcome): void {
  messages.inc({ route, outcome });
}

/** One deferral (a DeferReason: no_route, quota, warmup, throttled, blocked, down). */
export function countDeferral(reason: string): void {
  deferrals.inc({ reason });
}
