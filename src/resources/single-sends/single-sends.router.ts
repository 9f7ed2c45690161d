import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound2 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { bulkDeleteBody, confirmation, pagination } from '../shared/schemas';
import { abWinnerBody, previewQuery, previewResponse, scheduleBody, singleSendResponse, singleSendSaveBody, testSendBody } from './single-sends.schemas';
import { previewSingleSend, sendTestMessages, TEST_MESSAGES_PER_HOUR } from './single-sends.preview';
import * as service from './single-sends.service';
import { alsoNeeds, answer, bulk, count } from '../shared/audit';

const tag = 'Single sends';
const utrId = { name: 'utr', notFound: notFound2, kind: 'utr' as const };
const utrMessage = z.object({ utr: z.uuid() });

export const singleSendRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/single-send/list',
    tag,
    summary: 'List the account’s single sends with their statistics',
    list: true,
    response: z.object({ singleSends: z.array(singleSendResponse), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('singleSends', await service.listSingleSends(ctx, paging))),
  }),
  route({
    method: 'post',
    path: '/single/send/create',
    tag,
    summary: 'Create a single send; it is ready (status 1) and goes out now or at its scheduled time, or a draft (status 0) with draft=1',
    description:
      'Without `draft`, every field the spec marks required is required. With `draft=1` (Herald extension) only `single_send_name` is; ' +
      'every other field given is checked as usual, and nothing is sent until POST /single/send/schedule.',
    body: singleSendSaveBody,
    bodyLimit: 'design',
    response: utrMessage,
    failures: ['AUTH', 'VAL'],
    permission: 'campaigns:manage',
    audit: {
      action: 'single_send.created',
      entry: ({ body }, envelope) => ({ objectKind: 'single_send', objectId: String(answer(envelope).utr), summary: `“${body.single_send_name}”, ${body.draft === 1 ? 'a draft' : 'ready to send'}` }),
    },
    handle: async ({ ctx, body }) => {
      // Without draft=1 the send is ready, and goes out: that is sending.
      if (body.draft !== 1) alsoNeeds(ctx, 'campaigns:send');
      return ok({ utr: await service.createSingleSend(ctx, body) });
    },
  }),
  route({
    method: 'get',
    alsoMethods: ['post'],
    path: '/single/send/duplicate',
    tag,
    summary: 'Copy a single send as a draft (status 0) named “<name> (copy)”',
    id: utrId,
    response: confirmation(messages.duplicated),
    failures: ['AUTH', 'NF2'],
    permission: 'campaigns:manage',
    audit: {
      action: 'single_send.duplicated',
      entry: ({ utr }) => ({ objectKind: 'single_send', objectId: utr, summary: 'copied as a draft' }),
    },
    handle: async ({ ctx, utr }) => {
      await service.duplicateSingleSend(ctx, utr);
      return ok(messages.duplicated);
    },
  }),
  route({
    method: 'get',
    path: '/single-send/details',
    tag,
    summary: 'One single send (the key holds an array of one record)',
    id: utrId,
    response: z.object({ singleSend: z.array(singleSendResponse).length(1) }),
    failures: ['AUTH', 'NF2'],
    permission: 'read',
    handle: async ({ ctx, utr }) => ok({ singleSend: [await service.getSingleSend(ctx, utr)] }),
  }),
  route({
    method: 'post',
    path: '/single/send/update',
    tag,
    summary: 'Replace a single send’s fields (refused once sending has started); it becomes ready, or a draft with draft=1',
    description:
      'With `draft=1` (Herald extension) the send is saved as a draft (status 0): a draft stays one, a ready send that has not started ' +
      'goes back to one, and only `single_send_name` is required. Without it the send becomes ready, as the spec’s update does.',
    id: { ...utrId, requiredMessage: true },
    body: singleSendSaveBody,
    bodyLimit: 'design',
    response: utrMessage,
    failures: ['AUTH', 'VAL', 'NF2', 'REFUSED'],
    permission: 'campaigns:manage',
    audit: {
      action: 'single_send.updated',
      entry: ({ utr, body }) => ({ objectKind: 'single_send', objectId: utr, summary: `“${body.single_send_name}”, ${body.draft === 1 ? 'a draft' : 'ready to send'}` }),
    },
    handle: async ({ ctx, utr, body }) => {
      if (body.draft !== 1) alsoNeeds(ctx, 'campaigns:send');
      return ok({ utr: await service.updateSingleSend(ctx, utr, body) });
    },
  }),
  route({
    method: 'post',
    path: '/single/send/schedule',
    tag,
    summary: 'Herald extension: schedule a draft — every check of create runs on the stored send, then it is ready (status 1)',
    description:
      'A ready send that has not started may be scheduled again (`send_at` moves it). `send_at` (UTC, in the future) replaces the ' +
      'send’s schedule; without it the send’s own schedule holds (schedule_type 0: now). A send that has started answers VAL.',
    id: { ...utrId, requiredMessage: true },
    body: scheduleBody,
    response: utrMessage,
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'campaigns:send',
    audit: {
      action: 'single_send.scheduled',
      entry: ({ utr, body }) => ({ objectKind: 'single_send', objectId: utr, summary: body.send_at ? `for ${body.send_at} UTC` : 'at its own schedule' }),
    },
    handle: async ({ ctx, utr, body }) => ok({ utr: await service.scheduleSingleSend(ctx, utr, body.send_at) }),
  }),
  route({
    method: 'post',
    path: '/single/send/unschedule',
    tag,
    summary: 'Herald extension: a ready send that has not started goes back to a draft (status 0); anything else answers VAL',
    id: { ...utrId, requiredMessage: true },
    response: utrMessage,
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'campaigns:send',
    audit: {
      action: 'single_send.unscheduled',
      entry: ({ utr }) => ({ objectKind: 'single_send', objectId: utr, summary: 'back to a draft' }),
    },
    handle: async ({ ctx, utr }) => ok({ utr: await service.unscheduleSingleSend(ctx, utr) }),
  }),
  route({
    method: 'post',
    path: '/single/send/pause',
    tag,
    summary: 'Herald extension: pause a sending single send (status 2); nothing more is sent until it is resumed',
    description:
      'Its recipients not yet sent wait, its audience is no longer written, and it is not completed while paused; messages already handed ' +
      'to the mail server finish. A send that is not sending, is already paused, or has an A/B test answers VAL.',
    id: { ...utrId, requiredMessage: true },
    response: utrMessage,
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'campaigns:send',
    audit: {
      action: 'single_send.paused',
      entry: ({ utr }) => ({ objectKind: 'single_send', objectId: utr, summary: 'paused' }),
    },
    handle: async ({ ctx, utr }) => ok({ utr: await service.pauseSingleSend(ctx, utr) }),
  }),
  route({
    method: 'post',
    path: '/single/send/resume',
    tag,
    summary: 'Herald extension: a paused single send goes on sending where it stopped; a send that is not paused answers VAL',
    id: { ...utrId, requiredMessage: true },
    response: utrMessage,
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'campaigns:send',
    audit: {
      action: 'single_send.resumed',
      entry: ({ utr }) => ({ objectKind: 'single_send', objectId: utr, summary: 'resumed' }),
    },
    handle: async ({ ctx, utr }) => ok({ utr: await service.resumeSingleSend(ctx, utr) }),
  }),
  route({
    method: 'get',
    path: '/single/send/preview',
    tag,
    summary: 'Herald extension: the send as a contact would get it — subject, HTML and text, placeholders filled (sample values without contact_id)',
    description:
      'Rendered by the function the send uses: byte for byte the message but for the tokens of its open pixel, unsubscribe and tracked ' +
      'links (which name no message here). An A/B send also answers `variations`: each variation’s message, A first. Works on drafts; ' +
      'a draft without a design answers VAL (`template_id`). A contact of another account, or none, answers NF2 like the utr.',
    id: utrId,
    query: previewQuery,
    response: previewResponse,
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'read',
    handle: async ({ ctx, deps, utr, query }) => ok(await previewSingleSend(ctx, deps.config, utr, query.contact_id)),
  }),
  route({
    method: 'post',
    path: '/single/send/test',
    tag,
    summary: 'Herald extension: send a test copy of each variation to 1–10 addresses, “[Test] ” before the subject, DKIM-signed',
    description:
      'Filled with the values of `contact_id` (sample values without it; another account’s contact answers NF2 like the utr). Not counted in the send’s statistics and no status change. ' +
      'VAL: a send without a subject, verified sender or design, or a suppressed address. ' +
      `At most ${TEST_MESSAGES_PER_HOUR} test messages per account in any hour: past it 429 (\`Too Many Requests…\`) with a Retry-After header. ` +
      'A mail server that does not take a message: 503 with the server’s answer (the messages not sent do not count).',
    id: { ...utrId, requiredMessage: true },
    body: testSendBody,
    response: z.object({ sent: z.number().int().meta({ description: 'test messages sent' }) }),
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'campaigns:manage',
    audit: {
      action: 'single_send.tested',
      entry: ({ utr, body }, envelope) => ({ objectKind: 'single_send', objectId: utr, summary: `${count(Number(answer(envelope).sent), 'test message')} to ${count(body.emails.length, 'address', 'addresses')}` }),
    },
    handle: async ({ ctx, deps, utr, body }) => ok({ sent: await sendTestMessages(ctx, deps, utr, body) }),
  }),
  route({
    method: 'post',
    path: '/single/send/ab/winner',
    tag,
    summary: 'Herald extension: pick the winner of a send’s A/B test (while it runs or waits); the rest of the audience is sent the winner',
    id: { ...utrId, requiredMessage: true },
    body: abWinnerBody,
    response: confirmation(messages.winnerSelected),
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'campaigns:send',
    audit: {
      action: 'single_send.winner_picked',
      entry: ({ utr, body }) => ({ objectKind: 'single_send', objectId: utr, summary: `variation ${String.fromCharCode(65 + body.variation)}` }),
    },
    handle: async ({ ctx, utr, body }) => {
      await service.pickAbWinner(ctx, utr, body.variation);
      return ok(messages.winnerSelected);
    },
  }),
  route({
    method: 'delete',
    path: '/single/send/delete',
    tag,
    summary: 'Delete a single send; its messages not yet sent are cancelled',
    id: utrId,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF2'],
    permission: 'campaigns:manage',
    audit: {
      action: 'single_send.deleted',
      entry: ({ utr }) => ({ objectKind: 'single_send', objectId: utr, summary: 'deleted' }),
    },
    handle: async ({ ctx, utr }) => {
      await service.deleteSingleSends(ctx, [utr]);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/single/send/bulk-delete',
    tag,
    summary: 'Delete several single sends by utr or id (all or nothing)',
    body: bulkDeleteBody,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'campaigns:manage',
    audit: {
      action: 'single_send.deleted',
      entry: ({ body }) => ({ objectKind: 'single_send', ...bulk(body.strIds, 'send') }),
    },
    handle: async ({ ctx, body }) => {
      await service.deleteSingleSends(ctx, body.strIds);
      return ok(messages.deleted);
    },
  }),
];
