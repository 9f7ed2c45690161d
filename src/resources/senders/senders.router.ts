import { z } from 'zod';
import { messages, ok, okInErrors, type Envelope } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { DnsRecordStatus } from '../../states';
import { confirmation, pagination } from '../shared/schemas';
import { senderBody, senderRecord } from './senders.schemas';
import * as service from './senders.service';
import * as dns from './sender-dns.service';
import { answer, count } from '../shared/audit';

const tag = 'Senders';
const senderId = { name: 'sender_id', notFound: notFound1 };

const recordStatus = z.enum(DnsRecordStatus);
const dnsRecords = z.object({
  domain: z.string(),
  records: z.array(
    z.object({
      purpose: z.enum(['dkim', 'bounce', 'spf', 'dmarc']),
      type: z.enum(['TXT', 'MX']),
      host: z.string(),
      value: z.string(),
      status: recordStatus,
    }),
  ),
});
const DNS_DESCRIPTION =
  '`dkim`: the TXT record of the signing key (and of a rotation’s new key until it takes over); `bounce`: the MX of ' +
  'BOUNCE_DOMAIN (only when it is set); `spf`: a hint for the envelope sender’s domain; `dmarc`: a hint at ' +
  '`_dmarc.<domain>`. `status` is that of the last check (`unchecked` before any).';


/** A DNS check's outcome in counts. */
function dnsSummary(envelope: Envelope): string {
  const records = (answer(envelope).records ?? []) as Array<{ status: string }>;
  return `${records.filter((r) => r.status === DnsRecordStatus.Verified).length} of ${count(records.length, 'record')} verified`;
}

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
    permission: 'read',
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
    permission: 'settings:manage',
    audit: {
      action: 'sender.created',
      entry: ({ body }) => ({ objectKind: 'sender', summary: `“${body.nickname}” <${body.from_email}>, verification mailed` }),
    },
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
    permission: 'read',
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
    permission: 'settings:manage',
    audit: {
      action: 'sender.updated',
      entry: ({ id, body }) => ({ objectKind: 'sender', objectId: id, summary: `“${body.nickname}” <${body.from_email}>` }),
    },
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
    permission: 'settings:manage',
    audit: {
      action: 'sender.deleted',
      entry: ({ id }) => ({ objectKind: 'sender', objectId: id, summary: 'deleted' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteSender(ctx, id);
      return okInErrors(messages.deleted);
    },
  }),
  route({
    method: 'get',
    path: '/sender/dns',
    tag,
    summary: 'The DNS records to publish for the sender’s domain, with the last check’s status',
    description: DNS_DESCRIPTION,
    id: senderId,
    response: dnsRecords,
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, deps, id }) => ok(await dns.senderRecords(ctx, deps.config, id)),
  }),
  route({
    method: 'post',
    path: '/sender/dns/check',
    tag,
    summary: 'Look the sender domain’s records up now; answers like GET /sender/dns',
    description: `${DNS_DESCRIPTION} A rotation’s new key starts signing once its record is found here.`,
    id: senderId,
    response: dnsRecords,
    failures: ['AUTH', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'sender.dns_checked',
      entry: ({ id }, envelope) => ({ objectKind: 'sender', objectId: id, summary: dnsSummary(envelope) }),
    },
    handle: async ({ ctx, deps, id }) => ok(await dns.checkSenderRecords(ctx, deps.config, id)),
  }),
  route({
    method: 'post',
    path: '/sender/dns/rotate',
    tag,
    summary: 'Make a new DKIM key (selector) for the sender’s domain',
    description:
      'Publish the new selector’s record (GET /sender/dns lists it), then check: mail is signed with the current key ' +
      'until a check finds the new record. A second rotation before that replaces the new key.',
    id: senderId,
    response: z.object({ selector: z.string() }),
    failures: ['AUTH', 'NF1'],
    permission: 'settings:manage',
    audit: {
      action: 'sender.dkim_rotated',
      entry: ({ id }, envelope) => ({ objectKind: 'sender', objectId: id, summary: `new selector ${String(answer(envelope).selector)}` }),
    },
    handle: async ({ ctx, deps, id }) => ok(await dns.rotateSenderKey(ctx, deps.config, id)),
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
    permission: 'settings:manage',
    audit: {
      action: 'sender.verification_sent',
      entry: ({ id }) => ({ objectKind: 'sender', objectId: id, summary: 'a fresh verification link mailed' }),
    },
    handle: async ({ ctx, deps, id }) => {
      await service.resendVerification(ctx, deps, id);
      return ok(messages.verificationSent);
    },
  }),
];
