import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { confirmation, pagination } from '../shared/schemas';
import { customFieldRecord, reservedFieldRecord, saveCustomFieldBody } from './fields.schemas';
import * as service from './fields.service';

const tag = 'Reserved and custom fields';

export const fieldRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/reserve-fields',
    tag,
    summary: 'The reserved contact fields (global, is_reserved 1)',
    list: true,
    response: z.object({ reservedFields: z.array(reservedFieldRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('reservedFields', await service.listReservedFields(ctx, paging))),
  }),
  route({
    method: 'get',
    path: '/custom-fields',
    tag,
    summary: 'The account’s custom contact fields',
    list: true,
    response: z.object({ customFields: z.array(customFieldRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('customFields', await service.listCustomFields(ctx, paging))),
  }),
  route({
    method: 'post',
    path: '/custom-fields/save',
    tag,
    summary: 'Add a custom field (letters, digits and underscore; reserved names refused)',
    body: saveCustomFieldBody,
    response: confirmation(messages.added),
    failures: ['AUTH', 'VAL'],
    permission: 'audience:manage',
    audit: {
      action: 'custom_field.created',
      entry: ({ body }) => ({ objectKind: 'custom_field', summary: `${body.field_name} (${body.field_type})` }),
    },
    handle: async ({ ctx, body }) => {
      await service.saveCustomField(ctx, body);
      return ok(messages.added);
    },
  }),
  route({
    method: 'delete',
    path: '/custom-fields/delete',
    tag,
    summary: 'Delete a custom field and its values',
    id: { name: 'id', notFound: notFound1 },
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'custom_field.deleted',
      entry: ({ id }) => ({ objectKind: 'custom_field', objectId: id, summary: 'deleted with its values' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteCustomField(ctx, id);
      return ok(messages.deleted);
    },
  }),
];
