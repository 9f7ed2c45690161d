import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { confirmation, pagination } from '../shared/schemas';
import { createdWebhook, webhookBatchRecord, saveWebhookBody, testResult, webhookRecord } from './webhooks.schemas';
import * as service from './webhooks.service';
import { answer, count, hostOf } from '../shared/audit';

const tag = 'Webhooks';
const byId = { name: 'id', notFound: notFound1 };


/** A test delivery's outcome: the endpoint's status, or that it did not answer. */
function testSummary(result: Record<string, unknown>): string {
  return result.status === null || result.status === undefined ? 'webhook.test sent: no answer' : `webhook.test sent: HTTP ${String(result.status)}`;
}

export const webhookRoutes: RouteDef[] = [
  route({
    method: 'post',
    path: '/webhooks/save',
    tag,
    summary: 'Create a webhook (answers its id and secret, shown only now) or, with id, change one',
    description:
      'Events are POSTed in batches of one type (≤ 500), signed per Standard Webhooks with the secret. The URL must be ' +
      'http(s) and its host must resolve to public addresses (WEBHOOK_ALLOW_HOSTS names exceptions).',
    body: saveWebhookBody,
    response: z.union([createdWebhook, confirmation(messages.updated)]),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'webhook.saved',
      entry: ({ body }, envelope) => ({ objectKind: 'webhook', objectId: body.id ?? Number(answer(envelope).id), summary: `${body.id ? 'changed' : 'created'}: ${hostOf(body.url)}, ${body.event_types.length ? count(body.event_types.length, 'event type') : 'every event type'}${body.is_active === 0 ? ', paused' : ''}` }),
    },
    handle: async ({ ctx, body, deps }) => {
      const created = await service.saveWebhook(ctx, deps.config, body);
      return ok(created ?? messages.updated);
    },
  }),
  route({
    method: 'get',
    path: '/webhooks/list',
    tag,
    summary: 'The account’s webhooks, newest first (never their secrets)',
    response: z.object({ webhooks: z.array(webhookRecord) }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx }) => ok({ webhooks: await service.listWebhooks(ctx) }),
  }),
  route({
    method: 'get',
    path: '/webhooks/details',
    tag,
    summary: 'One webhook (never its secret)',
    id: byId,
    response: z.object({ webhook: webhookRecord }),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id }) => ok({ webhook: await service.findWebhook(ctx, id) }),
  }),
  route({
    method: 'delete',
    path: '/webhooks/delete',
    tag,
    summary: 'Delete a webhook (its pending batches are given up)',
    id: byId,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'webhook.deleted',
      entry: ({ id }) => ({ objectKind: 'webhook', objectId: id, summary: 'deleted' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteWebhook(ctx, id);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/webhooks/test',
    tag,
    summary: 'Send a signed webhook.test event now and answer the endpoint’s HTTP status',
    id: byId,
    response: testResult,
    failures: ['AUTH', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'webhook.tested',
      entry: ({ id }, envelope) => ({ objectKind: 'webhook', objectId: id, summary: testSummary(answer(envelope)) }),
    },
    handle: async ({ ctx, id, deps }) => ok(await service.testWebhook(ctx, deps.config, id)),
  }),
  route({
    method: 'get',
    path: '/webhooks/deliveries',
    tag,
    summary: 'A webhook’s batches and how their delivery went, newest first (the newest 100 unless ?page= or ?per_page=)',
    id: byId,
    list: true,
    response: z.object({ deliveries: z.array(webhookBatchRecord), pagination: pagination.optional() }),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id, paging }) => ok(listPayload('deliveries', await service.listBatches(ctx, id, paging))),
  }),
];
