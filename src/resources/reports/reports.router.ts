import { ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { route, type RouteDef } from '../../http/routes';
import type { NamedOwnerKind } from '../../sources';
import { automationStats, singleSendStats } from './reports.schemas';
import * as service from './reports.service';

/** The statistics of sends and automations (src/statistics), read by utr. */
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
    handle: async ({ ctx, utr }) => ok(await service.ownerStats(ctx, kind, utr)),
  });
}

export const reportRoutes: RouteDef[] = [
  statsRoute('/single/send/stats', 'single_send', singleSendStats, 'a single send’s'),
  statsRoute('/automations/stats', 'automation', automationStats, 'an automation’s'),
];
