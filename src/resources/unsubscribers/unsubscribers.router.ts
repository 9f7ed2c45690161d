import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { parseIds } from '../shared/crud';
import { bulkDeleteBody, confirmation, pagination } from '../shared/schemas';
import { saveUnsubscribersBody, unsubscriberRecord } from './unsubscribers.schemas';
import * as service from './unsubscribers.service';
import { bulk, count } from '../shared/audit';

const tag = 'Global unsubscribers';

export const unsubscriberRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/global-unsubscribes',
    tag,
    summary: 'List the addresses that must never be mailed',
    list: true,
    response: z.object({ unSubscribers: z.array(unsubscriberRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) =>
      ok(listPayload('unSubscribers', await service.listGlobalUnsubscribers(ctx, paging))),
  }),
  route({
    method: 'post',
    path: '/global-unsubscribes/save',
    tag,
    summary: 'Add comma-separated addresses to the global unsubscribers (present ones are kept as they are)',
    body: saveUnsubscribersBody,
    response: confirmation(messages.added),
    failures: ['AUTH', 'VAL'],
    permission: 'settings:manage',
    audit: {
      action: 'global_unsubscriber.created',
      entry: ({ body }) => ({ objectKind: 'global_unsubscriber', summary: count(body.email_address.length, 'address', 'addresses') }),
    },
    handle: async ({ ctx, body }) => {
      await service.addGlobalUnsubscribers(ctx, body.email_address);
      return ok(messages.added);
    },
  }),
  route({
    method: 'delete',
    path: '/global-unsubscribes/delete',
    tag,
    summary: 'Remove a global unsubscriber',
    id: { name: 'id', notFound: notFound1 },
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'global_unsubscriber.deleted',
      entry: ({ id }) => ({ objectKind: 'global_unsubscriber', objectId: id, summary: '1 address' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteGlobalUnsubscribers(ctx, [id]);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/global-unsubscribes/bulk-delete',
    tag,
    summary: 'Remove several global unsubscribers (all or nothing)',
    body: bulkDeleteBody,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'global_unsubscriber.deleted',
      entry: ({ body }) => ({ objectKind: 'global_unsubscriber', ...bulk(body.strIds, 'address', 'addresses') }),
    },
    handle: async ({ ctx, body }) => {
      await service.deleteGlobalUnsubscribers(ctx, parseIds(body.strIds, notFound1));
      return ok(messages.deleted);
    },
  }),
];
