import { z } from 'zod';
import { messages, ok, okInErrors } from '../../http/envelope';
import { notFound1, notFound2 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { streamList } from '../../http/stream';
import { confirmation, pagination } from '../shared/schemas';
import { segmentBody, segmentRecipientRecord, segmentRecord, storeRecipientBody } from './segments.schemas';
import * as service from './segments.service';
import { count } from '../shared/audit';

const tag = 'Segments';

export const segmentRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/segment/list',
    tag,
    summary: 'List the account’s segments with their current member counts',
    list: true,
    response: z.object({ segments: z.array(segmentRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('segments', await service.listSegments(ctx, paging))),
  }),
  route({
    method: 'get',
    path: '/segment/email/list',
    tag,
    summary: 'The segment’s members: hand-added recipients, then matching contacts (streamed unless ?page=)',
    id: { name: 'segment_id', notFound: notFound2 },
    list: true,
    response: z.object({ contactEmails: z.array(segmentRecipientRecord), pagination: pagination.optional() }),
    failures: ['AUTH', 'NF2'],
    permission: 'read',
    handle: async ({ ctx, id, paging, res }) => {
      if (paging) return ok(listPayload('contactEmails', await service.listMembersPage(ctx, id, paging)));
      await streamList(res, 'contactEmails', await service.memberBatches(ctx, id));
      return ok(null);
    },
  }),
  route({
    method: 'post',
    path: '/segment/email/store',
    tag,
    summary: 'Add a recipient to a segment by hand',
    body: storeRecipientBody,
    response: confirmation(messages.added),
    failures: ['AUTH', 'VAL'],
    permission: 'audience:manage',
    audit: {
      action: 'segment_recipient.created',
      entry: ({ body }) => ({ objectKind: 'segment', objectId: body.segment_id, summary: 'a recipient added by hand' }),
    },
    handle: async ({ ctx, body }) => {
      await service.storeRecipient(ctx, body);
      return ok(messages.added);
    },
  }),
  route({
    method: 'delete',
    path: '/segment/email/delete',
    tag,
    summary: 'Remove a hand-added recipient (matching contacts leave by changing the rules or the contact)',
    id: { name: 'segment_recipient_id', notFound: notFound1 },
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'segment_recipient.deleted',
      entry: ({ id }) => ({ objectKind: 'segment_recipient', objectId: id, summary: 'removed' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteRecipient(ctx, id);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'delete',
    path: '/segment/delete',
    tag,
    summary: 'Delete a segment (confirmation in `errors`, spec rule 3)',
    id: { name: 'segment_id', notFound: notFound1 },
    response: confirmation(messages.deleted),
    inErrors: true,
    failures: ['AUTH', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'segment.deleted',
      entry: ({ id }) => ({ objectKind: 'segment', objectId: id, summary: 'deleted' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteSegment(ctx, id);
      return okInErrors(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/segment/save',
    tag,
    summary: 'Herald extension: create a segment from rules over a contact type',
    body: segmentBody,
    response: confirmation(messages.saved),
    failures: ['AUTH', 'VAL'],
    permission: 'audience:manage',
    audit: {
      action: 'segment.created',
      entry: ({ body }) => ({ objectKind: 'segment', summary: `“${body.segment_name}” over list ${body.contact_type_id}, ${count(body.select_field.length, 'rule')}` }),
    },
    handle: async ({ ctx, body }) => {
      await service.saveSegment(ctx, body);
      return ok(messages.saved);
    },
  }),
  route({
    method: 'post',
    path: '/segment/update',
    tag,
    summary: 'Herald extension: replace a segment’s name, contact type and rules',
    id: { name: 'segment_id', notFound: notFound1 },
    body: segmentBody,
    response: confirmation(messages.updated),
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'segment.updated',
      entry: ({ id, body }) => ({ objectKind: 'segment', objectId: id, summary: `“${body.segment_name}” over list ${body.contact_type_id}, ${count(body.select_field.length, 'rule')}` }),
    },
    handle: async ({ ctx, id, body }) => {
      await service.updateSegment(ctx, id, body);
      return ok(messages.updated);
    },
  }),
  route({
    method: 'get',
    path: '/segment/details',
    tag,
    summary: 'Herald extension: one segment with its member count',
    id: { name: 'segment_id', notFound: notFound1 },
    response: z.object({ segment: segmentRecord }),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, id }) => ok({ segment: await service.getSegment(ctx, id) }),
  }),
];
