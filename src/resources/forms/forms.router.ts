import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { confirmation } from '../shared/schemas';
import { formRecord, formSavedResponse, formsListResponse, formStatsResponse, saveFormBody, statsQuery } from './forms.schemas';
import * as service from './forms.service';
import { answer } from '../shared/audit';

const tag = 'Forms';
const formId = { name: 'id', notFound: notFound1 };
const WHOLE_FORM =
  'Lists, fields and the sender are checked against the account’s live records (VAL otherwise); success_url and confirm_url must be ' +
  'http or https URLs (checked, never fetched). Email is always among the fields, required.';

/**
 * Herald extension (issue 35): the account's public signup forms. Each has a public id; people
 * subscribe at /subscribe/<public id> (hosted page, HTML snippet or JSON), with double opt-in
 * unless the form says otherwise.
 */
export const formRoutes: RouteDef[] = [
  route({
    method: 'post',
    path: '/forms/save',
    tag,
    summary: 'Herald extension: create a signup form',
    description: WHOLE_FORM,
    body: saveFormBody,
    response: formSavedResponse,
    failures: ['AUTH', 'VAL'],
    permission: 'audience:manage',
    audit: {
      action: 'form.created',
      entry: ({ body }, envelope) => ({ objectKind: 'form', objectId: Number(answer(envelope).id), summary: `“${body.name}”` }),
    },
    handle: async ({ ctx, body }) => ok(await service.saveForm(ctx, body)),
  }),
  route({
    method: 'post',
    path: '/forms/update',
    tag,
    summary: 'Herald extension: replace a signup form (the whole form, as save takes it); its public id stays',
    description: `${WHOLE_FORM} Optional fields left out take their defaults again.`,
    id: { ...formId, requiredMessage: true },
    body: saveFormBody,
    response: formSavedResponse,
    failures: ['AUTH', 'VAL', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'form.updated',
      entry: ({ id, body }) => ({ objectKind: 'form', objectId: id, summary: `“${body.name}”` }),
    },
    handle: async ({ ctx, id, body }) => ok(await service.updateForm(ctx, id, body)),
  }),
  route({
    method: 'get',
    path: '/forms/list',
    tag,
    summary: 'Herald extension: the account’s signup forms, newest first (details has their fields and snippet)',
    list: true,
    response: formsListResponse,
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('forms', await service.listForms(ctx, paging))),
  }),
  route({
    method: 'get',
    path: '/forms/details',
    tag,
    summary: 'Herald extension: one signup form, with its public id, hosted page URL, JSON endpoint and HTML snippet',
    id: formId,
    response: z.object({ form: formRecord }),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, deps, id }) => ok({ form: await service.findForm(ctx, deps.config, id) }),
  }),
  route({
    method: 'delete',
    path: '/forms/delete',
    tag,
    summary: 'Herald extension: delete a signup form',
    description:
      'Its public id then answers not found, and its unconfirmed pending subscriptions are deleted (their links confirm nothing). ' +
      'Its statistics and the consent records that name it stay.',
    id: formId,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF1'],
    permission: 'audience:manage',
    audit: {
      action: 'form.deleted',
      entry: ({ id }) => ({ objectKind: 'form', objectId: id, summary: 'deleted' }),
    },
    handle: async ({ ctx, id }) => {
      await service.deleteForm(ctx, id);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'get',
    path: '/forms/stats',
    tag,
    summary: 'Herald extension: a form’s submissions, confirmations, confirmation rate and pending subscriptions by UTC day',
    description: 'Every day of the range is listed, oldest first; `pending` counts that day’s submissions still waiting for confirmation.',
    id: formId,
    query: statsQuery,
    response: formStatsResponse,
    failures: ['AUTH', 'NF1', 'VAL'],
    permission: 'read',
    handle: async ({ ctx, id, query }) => ok({ stats: await service.formStats(ctx, id, query.days) }),
  }),
];
