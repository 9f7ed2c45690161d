import { ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { route, type RouteDef } from '../../http/routes';
import { automationEmailsMessage, keptReportMessage, overviewMessage, overviewQuery } from './reports.schemas';
import * as service from './reports.service';

const tag = 'Reports';

/** What the dashboard shows, for scripts: the same services serve both (src/dashboard). */
export const reportRoutes: RouteDef[] = [
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
    handle: async ({ ctx, query }) => ok(await service.overview(ctx, query)),
  }),
  route({
    method: 'get',
    path: '/reports/automation',
    tag,
    summary: 'Herald extension: each email of an automation with its counters, in the order they go out',
    id: { name: 'utr', notFound: notFound1, kind: 'utr' },
    response: automationEmailsMessage,
    failures: ['AUTH', 'NF1'],
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
    handle: async ({ ctx, id }) => ok(await service.keptReport(ctx, id)),
  }),
];
