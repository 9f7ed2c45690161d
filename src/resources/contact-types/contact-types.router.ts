import { z } from 'zod';
import { messages, ok, okInErrors } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { confirmation, pagination } from '../shared/schemas';
import { contactTypeBody, contactTypeListRecord, contactTypeRecord } from './contact-types.schemas';
import * as service from './contact-types.service';

const tag = 'Contact types';

export const contactTypeRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/contacts-type',
    tag,
    summary: 'List the account’s contact types (contact lists) with their contact counts',
    list: true,
    response: z.object({ contactTypes: z.array(contactTypeListRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('contactTypes', await service.listContactTypes(ctx, paging))),
  }),
  route({
    method: 'post',
    path: '/contacts-type/add',
    tag,
    summary: 'Add a contact type',
    body: contactTypeBody,
    response: confirmation(messages.added),
    failures: ['AUTH', 'VAL'],
    permission: 'audience:manage',
    audit: {
      action: 'contact_type.created',
      entry: ({ body }) => ({ objectKind: 'contact_type', summary: `list “${body.name}”` }),
    },
    handle: async ({ ctx, body }) => {
      await service.addContactType(ctx, body);
      return ok(messages.added);
    },
  }),
  route({
    method: 'get',
    path: '/contacts-type/view',
    tag,
    summary: 'One contact type (a missing id answers VAL)',
    id: { name: 'contact_type_id', notFound: notFound1, requiredMessage: true },
    response: z.object({ contactType: contactTypeRecord }),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id }) => ok({ contactType: await service.getContactType(ctx, id) }),
  }),
  route({
    method: 'post',
    path: '/contacts-type/update',
    tag,
    summary: 'Rename a contact type',
    id: { name: 'id', notFound: notFound1, requiredMessage: true },
    body: contactTypeBody,
    response: confirmation(messages.updated),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'contact_type.renamed',
      entry: ({ id, body }) => ({ objectKind: 'contact_type', objectId: id, summary: `renamed “${body.name}”` }),
    },
    handle: async ({ ctx, id, body }) => {
      await service.updateContactType(ctx, id, body);
      return ok(messages.updated);
    },
  }),
  route({
    method: 'delete',
    path: '/contacts-type/delete',
    tag,
    summary: 'Delete a contact type and its contacts (confirmation in `errors`, spec rule 3)',
    id: { name: 'contact_type_id', notFound: notFound1 },
    response: confirmation(messages.deleted),
    inErrors: true,
    failures: ['AUTH', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'contact_type.deleted',
      entry: ({ id }) => ({ objectKind: 'contact_type', objectId: id, summary: 'deleted with its contacts' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteContactType(ctx, id);
      return okInErrors(messages.deleted);
    },
  }),
];
