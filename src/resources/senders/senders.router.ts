import { z } from 'zod';
import { messages, ok, okInErrors } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { confirmation, pagination } from '../shared/schemas';
import { senderBody, senderRecord } from './senders.schemas';
import * as service from './senders.service';

const tag = 'Senders';
const senderId = { name: 'sender_id', notFound: notFound1 };

export const senderRoutes: RouteDef[] = [
  route({
    method: 'get',
    // Spec rule 9: the list is stated as POST but requested with GET; both are served.
    alsoMethods: ['post'],
    path: '/senders',
    tag,
    summary: 'List the account’s senders, newest first',
    list: true,
    response: z.object({ senders: z.array(senderRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    handle: async ({ ctx, paging }) => ok(listPayload('senders', await service.listSenders(ctx, paging))),
  }),
  route({
    method: 'post',
    path: '/sender/save',
    tag,
    summary: 'Add a sender and mail a verification link to its from_email',
    description:
      'The sender is saved unverified (`is_verified` 0). The link in the mail verifies it; `send_at` is when the ' +
      'mail went out, and stays null when it could not be sent (resend-mail tries again).',
    body: senderBody,
    response: confirmation(messages.added),
    failures: ['AUTH', 'VAL'],
    handle: async ({ ctx, deps, body }) => {
      await service.saveSender(ctx, deps, body);
      return ok(messages.added);
    },
  }),
  route({
    method: 'get',
    path: '/sender/details',
    tag,
    summary: 'One sender',
    id: senderId,
    response: z.object({ sender: senderRecord }),
    failures: ['AUTH', 'NF1'],
    handle: async ({ ctx, id }) => ok({ sender: await service.findSender(ctx, id) }),
  }),
  route({
    method: 'post',
    path: '/sender/update',
    tag,
    summary: 'Change a sender (every field of save is required again)',
    description: 'A new from_email (compared case-insensitively) makes the sender unverified and mails a new link.',
    id: { ...senderId, requiredMessage: true },
    body: senderBody,
    response: confirmation(messages.updated),
    failures: ['AUTH', 'VAL', 'NF1'],
    handle: async ({ ctx, deps, id, body }) => {
      await service.updateSender(ctx, deps, id, body);
      return ok(messages.updated);
    },
  }),
  route({
    method: 'delete',
    path: '/sender/delete',
    tag,
    summary: 'Delete a sender (confirmation in `errors`, spec rule 3)',
    description: 'Refused while a single send that is ready or running uses the sender.',
    id: senderId,
    response: confirmation(messages.deleted),
    inErrors: true,
    failures: ['AUTH', 'NF1', 'REFUSED'],
    handle: async ({ ctx, id }) => {
      await service.deleteSender(ctx, id);
      return okInErrors(messages.deleted);
    },
  }),
  route({
    method: 'get',
    path: '/sender/resend-mail',
    tag,
    summary: 'Mail a fresh verification link (the previous one stops working)',
    description:
      'Sent whether or not the sender is verified already. When the mail server does not accept the message the ' +
      'answer is 503 and the previous link keeps working.',
    id: senderId,
    response: confirmation(messages.verificationSent),
    failures: ['AUTH', 'NF1'],
    handle: async ({ ctx, deps, id }) => {
      await service.resendVerification(ctx, deps, id);
      return ok(messages.verificationSent);
    },
  }),
];
