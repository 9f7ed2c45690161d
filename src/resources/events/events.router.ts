import { ok } from '../../http/envelope';
import { route, type RouteDef } from '../../http/routes';
import { eventsMessage, eventsQuery } from './events.schemas';
import * as service from './events.service';

/** The account's recorded facts (src/events), by cursor. Their statistics are the reports family's. */
const tag = 'Events';

export const eventRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/events',
    tag,
    summary: 'Herald extension: the account’s events (message and account events), oldest first, by cursor',
    query: eventsQuery,
    response: eventsMessage,
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, query }) => ok(await service.listEvents(ctx, query)),
  }),
];
