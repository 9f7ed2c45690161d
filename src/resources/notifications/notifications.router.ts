import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route } from '../../http/routes';
import { parseIds } from '../shared/crud';
import { bulkDeleteBody, confirmation, pagination } from '../shared/schemas';
import { eventRecord, notificationMessages, notificationRecord, saveNotificationBody } from './notifications.schemas';
import * as service from './notifications.service';
import { bulk } from '../shared/audit';

const tag = 'Notification recipients';

export const notificationRoutes = [
  route({
    method: 'get',
    path: '/notification-recipients',
    tag,
    summary: 'List the addresses notified of account events',
    list: true,
    response: z.object({ notifications: z.array(notificationRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) =>
      ok(listPayload('notifications', await service.listNotificationRecipients(ctx, paging))),
  }),
  route({
    method: 'post',
    path: '/notification-recipient/save',
    tag,
    summary: 'Add a notification recipient',
    body: saveNotificationBody,
    messages: notificationMessages,
    response: confirmation(messages.added),
    failures: ['AUTH', 'VAL'],
    permission: 'settings:manage',
    audit: {
      action: 'notification_recipient.created',
      entry: ({ body }) => ({ objectKind: 'notification_recipient', summary: `“${body.email_owner}”` }),
    },
    handle: async ({ ctx, body }) => {
      await service.saveNotificationRecipient(ctx, body);
      return ok(messages.added);
    },
  }),
  route({
    method: 'delete',
    path: '/notification-recipient/delete',
    tag,
    summary: 'Delete a notification recipient',
    id: { name: 'id', notFound: notFound1 },
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'notification_recipient.deleted',
      entry: ({ id }) => ({ objectKind: 'notification_recipient', objectId: id, summary: 'deleted' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteNotificationRecipients(ctx, [id]);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'get',
    path: '/notification-events',
    tag,
    summary: 'Herald extension: the account’s events (send started/completed, automation live/paused, sender verified…), newest first',
    list: true,
    response: z.object({ events: z.array(eventRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('events', await service.listEvents(ctx, paging))),
  }),
  route({
    method: 'post',
    path: '/notification-recipient/bulk-delete',
    tag,
    summary: 'Delete several notification recipients (all or nothing)',
    body: bulkDeleteBody,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'notification_recipient.deleted',
      entry: ({ body }) => ({ objectKind: 'notification_recipient', ...bulk(body.strIds, 'recipient') }),
    },
    handle: async ({ ctx, body }) => {
      await service.deleteNotificationRecipients(ctx, parseIds(body.strIds, notFound1));
      return ok(messages.deleted);
    },
  }),
];
