import { ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { route, type RouteDef } from '../../http/routes';
import { automationStats, eventsMessage, eventsQuery, singleSendStats } from './events.schemas';
import * as service from './events.service';

const tag = 'Events';
const utrId = { name: 'utr', notFound: notFound1, kind: 'utr' as const };

export const eventRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/events',
    tag,
    summary: 'Herald extension: the account’s events (message and account events), oldest first, by cursor',
    query: eventsQuery,
    response: eventsMessage,
    failures: ['AUTH', 'VAL', 'NF1'],
    handle: async ({ ctx, query }) => ok(await service.listEvents(ctx, query)),
  }),
  route({
    method: 'get',
    path: '/single/send/stats',
    tag,
    summary: 'Herald extension: a single send’s statistics, with deferrals, drops, bounce kinds, clicks, links and an hourly timeline',
    id: utrId,
    response: singleSendStats,
    failures: ['AUTH', 'NF1'],
    handle: async ({ ctx, utr }) => ok(await service.messageStats(ctx, 'single_sends', utr)),
  }),
  route({
    method: 'get',
    path: '/automations/stats',
    tag,
    summary: 'Herald extension: an automation’s statistics, with deferrals, drops, bounce kinds, clicks, links and an hourly timeline',
    id: utrId,
    response: automationStats,
    failures: ['AUTH', 'NF1'],
    handle: async ({ ctx, utr }) => ok(await service.messageStats(ctx, 'automations', utr)),
  }),
];
