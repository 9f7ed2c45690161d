import { createHash, timingSafeEqual } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Knex } from 'knex';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Config } from './config';
import type { Logger } from './logger';
import { queueBacklog } from './deliveries/backlog';
import { errorHandler } from './http/error-handler';
import { AppError, routeNotFound, unavailable } from './http/errors';
import { ROUTE_STATUSES, routeStatuses } from './routes/views';

/**
 * Herald's Prometheus metrics (issue 36): one registry per process, served by GET /metrics when
 * METRICS_TOKEN is set. Counters live in memory, so each process (serve, a standalone worker)
 * counts what it did itself; Prometheus sums them across targets. The queue and route gauges are
 * read from the database at scrape, so every process answers the installation's values. Labels are
 * bounded: routes come from the configuration, outcomes and reasons from fixed lists, HTTP routes
 * from the route patterns (never the raw URL).
 */
export const registry = new Registry();

/** What became of one message on a route. */
export type MessageOutcome = 'delivered' | 'deferred' | 'bounced' | 'failed';

const messages = new Counter({
  name: 'herald_messages_total',
  help: 'Messages handed to a delivery route, by route and outcome (delivered, deferred, bounced, failed).',
  labelNames: ['route', 'outcome'] as const,
  registers: [registry],
});

const deferrals = new Counter({
  name: 'herald_deferrals_total',
  help: 'Messages put back in the queue without using an attempt, by reason (no_route, quota, warmup, throttled, blocked, down).',
  labelNames: ['reason'] as const,
  registers: [registry],
});

const queueDepth = new Gauge({
  name: 'herald_queue_depth',
  help: 'Messages due to be sent now (queued, or a lease that ran out), read at scrape.',
  registers: [registry],
});

const queueOldest = new Gauge({
  name: 'herald_queue_oldest_seconds',
  help: 'How long the longest-waiting due message has been due, in seconds (0 when none is), read at scrape.',
  registers: [registry],
});

const routeStatus = new Gauge({
  name: 'herald_route_status',
  help: 'Each configured route’s status: 1 for the current one (up, down, throttled, warming), 0 for the others.',
  labelNames: ['route', 'status'] as const,
  registers: [registry],
});

const httpDuration = new Histogram({
  name: 'herald_http_request_duration_seconds',
  help: 'HTTP request durations by method, route pattern and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
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

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The route a request matched, as its pattern (`/single-send/details`, `/app/sends/:id`), so the
 * histogram's series stay bounded whatever URLs clients send: a mounted static folder is
 * `<mount>/*`, anything no route matched (404s, scanners) is one `unmatched`.
 */
function routeLabel(req: Request): string {
  const pattern = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof pattern === 'string') return `${req.baseUrl}${pattern === '/' && req.baseUrl ? '' : pattern}`;
  if (req.baseUrl) return `${req.baseUrl}/*`;
  return 'unmatched';
}

/** Times every request into herald_http_request_duration_seconds (only mounted when metrics are on). */
export function httpMetrics() {
  return (req: Request, res: Response, next: NextFunction): void => {
    const end = httpDuration.startTimer();
    res.once('close', () => {
      end({ method: METHODS.has(req.method) ? req.method : 'other', route: routeLabel(req), status: String(res.statusCode) });
    });
    next();
  };
}

/** METRICS_TOKEN; unset: metrics are off. */
function metricsToken(config: Config): string | undefined {
  return config.metricsToken || undefined;
}

/** Whether /metrics is served (METRICS_TOKEN set). */
export function metricsEnabled(config: Config): boolean {
  return metricsToken(config) !== undefined;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** A bearer token compared in constant time (both sides hashed first, so lengths never differ). */
function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '')?.[1] ?? '';
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}

const wrongToken = () =>
  new AppError(401, 'A valid bearer token is required (Authorization: Bearer <METRICS_TOKEN>)', { 'WWW-Authenticate': 'Bearer realm="metrics"' });

/** The Prometheus text: the gauges read now, the counters as this process holds them. */
async function scrape(db: Knex, config: Config): Promise<string> {
  let queue: Awaited<ReturnType<typeof queueBacklog>>;
  let statuses: Awaited<ReturnType<typeof routeStatuses>>;
  try {
    [queue, statuses] = await Promise.all([queueBacklog(db), routeStatuses(db, config)]);
  } catch {
    // The database is away: the target answers 503, which Prometheus records as down.
    throw unavailable();
  }
  queueDepth.set(queue.depth);
  queueOldest.set(queue.oldestSeconds);
  routeStatus.reset();
  for (const { name, status } of statuses) {
    for (const s of ROUTE_STATUSES) routeStatus.set({ route: name, status: s }, s === status ? 1 : 0);
  }
  return registry.metrics();
}

/**
 * GET /metrics: off (the API's 404, as for an unknown path) unless METRICS_TOKEN is set; then the
 * bearer token, else 401.
 */
export function mountMetrics(app: Express, deps: { config: Config; db: Knex }): void {
  app.get('/metrics', async (req, res) => {
    const token = metricsToken(deps.config);
    if (!token) throw routeNotFound();
    if (!bearerMatches(req.get('authorization'), token)) throw wrongToken();
    const text = await scrape(deps.db, deps.config);
    res.set('Cache-Control', 'no-store').type(registry.contentType).send(text);
  });
}

/**
 * A standalone `herald worker` serves its own /metrics on METRICS_PORT (its counters are its
 * own), on HOST like the API server. Resolves once it listens.
 */
export async function startMetricsServer(deps: { config: Config; db: Knex; logger: Logger }, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const app = express();
  app.disable('x-powered-by');
  mountMetrics(app, deps);
  app.use((_req: Request, _res: Response, next: NextFunction) => next(routeNotFound()));
  app.use(errorHandler(deps.logger));
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(port, deps.config.host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const bound = (server.address() as AddressInfo).port;
  deps.logger.info({ port: bound, host: deps.config.host }, 'worker metrics listening');
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
