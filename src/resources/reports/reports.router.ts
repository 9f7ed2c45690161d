import { ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { route, type RouteDef } from '../../http/routes';
import type { NamedOwnerKind } from '../../sources';
import { automationEmailsMessage, automationStats, keptReportMessage, overviewMessage, overviewQuery, singleSendStats } from './reports.schemas';
import * as service from './reports.service';

/**
 * The statistics of sends and automations (src/statistics), read by utr, and what the dashboard
 * shows beside them (src/dashboard reads through the same services), for scripts.
 */
const tag = 'Reports';
const utrId = { name: 'utr', notFound: notFound1, kind: 'utr' as const };

function statsRoute(path: string, kind: NamedOwnerKind, response: RouteDef['response'], what: string): RouteDef {
  return route({
    method: 'get',
    path,
    tag,
    summary: `Herald extension: ${what} statistics, with deferrals, drops, bounce kinds, clicks, links and an hourly timeline`,
    id: utrId,
    response,
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, utr }) => ok(await service.ownerStats(ctx, kind, utr)),
  });
}

export const reportRoutes: RouteDef[] = [
  statsRoute('/single/send/stats', 'single_send', singleSendStats, 'a single send’s'),
  statsRoute('/automations/stats', 'automation', automationStats, 'an automation’s'),
  route({
    method: 'get',
    path: '/reports/overview',
    tag,
    summary: 'Herald extension: the last days’ sends, delivered, unique open, human click, bounce and complaint rates, by day; the latest sends; warnings',
    description:
      'Days are counted in `tz`. A single send counts on the day it was sent (with everything its messages did since); automation ' +
      'emails by the hour each thing happened. Rates are over delivered messages, the bounce rate over delivered + bounced.',
    query: overviewQuery,
    response: overviewMessage,
    failures: ['AUTH', 'VAL'],
    permission: 'read',
    handle: async ({ ctx, query }) => ok(await service.overview(ctx, query)),
  }),
  route({
    method: 'get',
    path: '/reports/automation',
    tag,
    summary: 'Herald extension: each email of an automation with its counters, in the order they go out',
    id: utrId,
    response: automationEmailsMessage,
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, utr }) => ok(await service.automationEmails(ctx, utr)),
  }),
  route({
    method: 'get',
    path: '/reports/kept-report',
    tag,
    summary: 'Herald extension: the bounce or complaint report behind a `bounced` or `complained` event, as received',
    id: { name: 'event_id', notFound: notFound1, kind: 'bigint', requiredMessage: true },
    response: keptReportMessage,
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id }) => ok(await service.keptReport(ctx, id)),
  }),
];
