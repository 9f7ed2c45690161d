import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { parseIds } from '../shared/crud';
import { bulkDeleteBody, confirmation, pagination } from '../shared/schemas';
import {
  groupListRecord,
  groupRecipientRecord,
  groupRecord,
  manuallyAddBody,
  saveGroupBody,
} from './unsubscribe-groups.schemas';
import * as service from './unsubscribe-groups.service';
import { bulk, count } from '../shared/audit';

const tag = 'Unsubscribe groups';

export const unsubscribeGroupRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/unsubscribes-groups',
    tag,
    summary: 'List the account’s unsubscribe groups with their recipient counts',
    list: true,
    response: z.object({ unsubscribesGroups: z.array(groupListRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) =>
      ok(listPayload('unsubscribesGroups', await service.listGroups(ctx, paging))),
  }),
  route({
    method: 'post',
    path: '/unsubscribes-groups/save',
    tag,
    summary: 'Create an unsubscribe group',
    body: saveGroupBody,
    response: confirmation(messages.saved),
    failures: ['AUTH', 'VAL'],
    permission: 'settings:manage',
    audit: {
      action: 'unsubscribe_group.created',
      entry: ({ body }) => ({ objectKind: 'unsubscribe_group', summary: `“${body.group_name}”` }),
    },
    handle: async ({ ctx, body }) => {
      await service.saveGroup(ctx, body);
      return ok(messages.saved);
    },
  }),
  route({
    method: 'get',
    path: '/unsubscribes-groups/details',
    tag,
    summary: 'One unsubscribe group',
    id: { name: 'id', notFound: notFound1 },
    response: z.object({ unsubscribesGroup: groupRecord }),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id }) => ok({ unsubscribesGroup: await service.findGroup(ctx, id) }),
  }),
  route({
    method: 'post',
    path: '/unsubscribes-groups/update',
    tag,
    summary: 'Change an unsubscribe group (every field of save is required again)',
    id: { name: 'id', notFound: notFound1 },
    body: saveGroupBody,
    response: confirmation(messages.updated),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'unsubscribe_group.updated',
      entry: ({ id, body }) => ({ objectKind: 'unsubscribe_group', objectId: id, summary: `“${body.group_name}”` }),
    },
    handle: async ({ ctx, id, body }) => {
      await service.updateGroup(ctx, id, body);
      return ok(messages.updated);
    },
  }),
  route({
    method: 'delete',
    path: '/unsubscribes-groups/delete',
    tag,
    summary: 'Herald extension: delete an unsubscribe group',
    description:
      'The group vanishes from the list, its details, its recipient list and manual adds; its row stays so the ' +
      'unsubscribe pages of emails already sent still resolve it.',
    id: { name: 'id', notFound: notFound1 },
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'unsubscribe_group.deleted',
      entry: ({ id }) => ({ objectKind: 'unsubscribe_group', objectId: id, summary: 'deleted' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteGroup(ctx, id);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/unsubscribes-groups/manually-add',
    tag,
    summary: 'Add comma-separated addresses to a group (present ones are kept as they are)',
    body: manuallyAddBody,
    response: confirmation(messages.added),
    failures: ['AUTH', 'VAL'],
    permission: 'settings:manage',
    audit: {
      action: 'unsubscribe_group.recipients_added',
      entry: ({ body }) => ({ objectKind: 'unsubscribe_group', objectId: body.unsubscribe_groups_id, summary: count(body.email_address.length, 'address', 'addresses') }),
    },
    handle: async ({ ctx, body }) => {
      await service.addRecipients(ctx, body);
      return ok(messages.added);
    },
  }),
  route({
    method: 'get',
    path: '/unsubscribes-groups/recipients-list',
    tag,
    summary: 'The addresses of one group, newest first',
    id: { name: 'groupId', notFound: notFound1 },
    list: true,
    response: z.object({ recipients: z.array(groupRecipientRecord), pagination: pagination.optional() }),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id, paging }) =>
      ok(listPayload('recipients', await service.listRecipients(ctx, id, paging))),
  }),
  route({
    method: 'delete',
    path: '/unsubscribes-groups/recipients-delete',
    tag,
    summary: 'Remove an address from its group',
    id: { name: 'id', notFound: notFound1 },
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'unsubscribe_group.recipients_removed',
      entry: ({ id }) => ({ objectKind: 'unsubscribe_group_recipient', objectId: id, summary: '1 address' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteRecipients(ctx, [id]);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/unsubscribes-groups/recipients-bulk-delete',
    tag,
    summary: 'Remove several group recipients (all or nothing)',
    body: bulkDeleteBody,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'unsubscribe_group.recipients_removed',
      entry: ({ body }) => ({ objectKind: 'unsubscribe_group_recipient', ...bulk(body.strIds, 'address', 'addresses') }),
    },
    handle: async ({ ctx, body }) => {
      await service.deleteRecipients(ctx, parseIds(body.strIds, notFound1));
      return ok(messages.deleted);
    },
  }),
];
