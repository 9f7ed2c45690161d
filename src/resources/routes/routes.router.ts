import { z } from 'zod';
import { ok } from '../../http/envelope';
import { route, type RouteDef } from '../../http/routes';
import { routeRecord } from './routes.schemas';
import * as service from './routes.service';

const tag = 'Delivery routes';

export const routeRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/routes',
    tag,
    summary: 'Herald extension: the delivery routes (relays) the account’s mail may go through, with their health, quotas and usage',
    description:
      'Every configured route (SMTP_ROUTES), or those the account is pinned to, in configuration order. Empty when ' +
      'Herald has no relay (mail goes to the outbox). URLs and credentials are never shown.',
    response: z.object({ routes: z.array(routeRecord) }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, deps }) => ok({ routes: await service.listRoutes(ctx, deps) }),
  }),
];
