import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { validate } from '../../http/validate';
import { confirmation, pagination } from '../shared/schemas';
import { emailsBody, listSuppressionsQuery, suppressionMessage, suppressionRecord } from './suppressions.schemas';
import * as service from './suppressions.service';
import { count } from '../shared/audit';

const tag = 'Suppressions';


/** How many addresses a lift named (the handler validated them already). */
function liftedCount(body: unknown, query: unknown): number {
  const input = body as Record<string, unknown>;
  return validate(emailsBody, { emails: input.emails ?? (query as Record<string, unknown>).emails }).emails.length;
}

export const suppressionRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/suppressions/list',
    tag,
    summary: 'Herald extension: addresses not mailed because they bounced, complained or were suppressed by hand, newest first',
    query: listSuppressionsQuery,
    list: true,
    response: z.object({ suppressions: z.array(suppressionRecord), pagination: pagination.optional() }),
    failures: ['AUTH', 'VAL'],
    permission: 'read',
    handle: async ({ ctx, query, paging }) => ok(listPayload('suppressions', await service.listSuppressions(ctx, query, paging))),
  }),
  route({
    method: 'get',
    path: '/suppressions/message',
    tag,
    summary: 'Herald extension: the bounce or complaint report kept for a suppression',
    id: { name: 'id', notFound: notFound1 },
    response: suppressionMessage,
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id }) => ok(await service.suppressionMessage(ctx, id)),
  }),
  route({
    method: 'post',
    path: '/suppressions/add',
    tag,
    summary: 'Herald extension: suppress comma-separated addresses by hand (type manual, source api); suppressed ones keep their entry',
    body: emailsBody,
    response: confirmation(messages.added),
    failures: ['AUTH', 'VAL'],
    permission: 'settings:manage',
    audit: {
      action: 'suppression.created',
      entry: ({ body }) => ({ objectKind: 'suppression', summary: `${count(body.emails.length, 'address', 'addresses')} suppressed by hand` }),
    },
    handle: async ({ ctx, body }) => {
      await service.addSuppressions(ctx, body.emails);
      return ok(messages.added);
    },
  }),
  route({
    method: 'delete',
    path: '/suppressions/delete',
    tag,
    summary: 'Herald extension: lift the suppression of comma-separated addresses (`emails` in the query or the body); others are ignored',
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'VAL'],
    permission: 'settings:manage',
    audit: {
      action: 'suppression.lifted',
      entry: ({ body, query }) => ({ objectKind: 'suppression', summary: `lifted for ${count(liftedCount(body, query), 'address', 'addresses')}` }),
    },
    handle: async ({ ctx, body, query }) => {
      const input = body as Record<string, unknown>;
      const { emails } = validate(emailsBody, { emails: input.emails ?? (query as Record<string, unknown>).emails });
      await service.deleteSuppressions(ctx, emails);
      return ok(messages.deleted);
    },
  }),
];
