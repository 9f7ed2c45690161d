import { z } from 'zod';
import { messages, ok } from '../../http/envelope';
import { notFound1, notFound2 } from '../../http/errors';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { bulkDeleteBody, confirmation, pagination } from '../shared/schemas';
import {
  automationContactRecord,
  automationListRecord,
  automationRecord,
  createAutomationBody,
  createScheduleBody,
  scheduleRecord,
  updateScheduleBody,
} from './automations.schemas';
import * as service from './automations.service';
import * as schedules from './schedules.service';
import { answer, bulk } from '../shared/audit';

const tag = 'Automations';
const utr2 = { name: 'utr', notFound: notFound2, kind: 'utr' as const };
const utrMessage = z.object({ utr: z.uuid() });

export const automationRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/automations',
    tag,
    summary: 'List the account’s automations with their number of emails',
    list: true,
    response: z.object({ automations: z.array(automationListRecord), pagination: pagination.optional() }),
    failures: ['AUTH'],
    permission: 'read',
    handle: async ({ ctx, paging }) => ok(listPayload('automations', await service.listAutomations(ctx, paging))),
  }),
  route({
    method: 'post',
    path: '/automations/create',
    tag,
    summary: 'Create an automation (draft): welcome → type 1, custom → type 2',
    body: createAutomationBody,
    response: utrMessage,
    failures: ['AUTH', 'VAL'],
    permission: 'campaigns:manage',
    audit: {
      action: 'automation.created',
      entry: ({ body }, envelope) => ({ objectKind: 'automation', objectId: String(answer(envelope).utr), summary: `“${body.automation_name}” (${body.type})` }),
    },
    handle: async ({ ctx, body }) => ok({ utr: await service.createAutomation(ctx, body) }),
  }),
  route({
    method: 'get',
    path: '/automations/duplicate',
    tag,
    summary: 'Copy an automation and its emails as a draft',
    id: utr2,
    response: utrMessage,
    failures: ['AUTH', 'NF2'],
    permission: 'campaigns:manage',
    audit: {
      action: 'automation.duplicated',
      entry: ({ utr }, envelope) => ({ objectKind: 'automation', objectId: String(answer(envelope).utr), summary: `copy of ${utr}` }),
    },
    handle: async ({ ctx, utr }) => ok({ utr: await service.duplicateAutomation(ctx, utr) }),
  }),
  route({
    method: 'get',
    path: '/automations/details',
    tag,
    summary: 'One automation',
    id: { name: 'utr', notFound: notFound1, kind: 'utr' },
    response: z.object({ automation: automationRecord }),
    failures: ['AUTH', 'NF1'],
    permission: 'read',
    handle: async ({ ctx, utr }) => ok({ automation: await service.getAutomation(ctx, utr) }),
  }),
  route({
    method: 'get',
    path: '/automations/pause',
    tag,
    summary: 'Pause a live automation: due emails wait until it is live again',
    id: utr2,
    response: confirmation(messages.automationPaused),
    failures: ['AUTH', 'NF2', 'REFUSED'],
    permission: 'campaigns:send',
    audit: {
      action: 'automation.paused',
      entry: ({ utr }) => ({ objectKind: 'automation', objectId: utr, summary: 'paused' }),
    },
    handle: async ({ ctx, utr }) => {
      await service.pause(ctx, utr);
      return ok(messages.automationPaused);
    },
  }),
  route({
    method: 'get',
    path: '/automations/set-live',
    tag,
    summary: 'Set an automation live (needs an unsubscribe group and at least one email)',
    id: utr2,
    response: confirmation(messages.automationLive),
    failures: ['AUTH', 'NF2', 'REFUSED'],
    permission: 'campaigns:send',
    audit: {
      action: 'automation.set_live',
      entry: ({ utr }) => ({ objectKind: 'automation', objectId: utr, summary: 'live' }),
    },
    handle: async ({ ctx, utr }) => {
      await service.setLive(ctx, utr);
      return ok(messages.automationLive);
    },
  }),
  route({
    method: 'delete',
    path: '/automations/delete',
    tag,
    summary: 'Delete an automation; entered contacts stop',
    id: utr2,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF2'],
    permission: 'campaigns:manage',
    audit: {
      action: 'automation.deleted',
      entry: ({ utr }) => ({ objectKind: 'automation', objectId: utr, summary: 'deleted' }),
    },
    handle: async ({ ctx, utr }) => {
      await service.deleteAutomations(ctx, [utr]);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/automations/bulk-delete',
    tag,
    summary: 'Delete several automations by utr or id (all or nothing)',
    body: bulkDeleteBody,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'campaigns:manage',
    audit: {
      action: 'automation.deleted',
      entry: ({ body }) => ({ objectKind: 'automation', ...bulk(body.strIds, 'automation') }),
    },
    handle: async ({ ctx, body }) => {
      await service.deleteAutomations(ctx, body.strIds);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'get',
    path: '/automations/schedule',
    tag,
    summary: 'The automation’s emails, in sending order',
    id: utr2,
    response: z.object({ automation_schedules: z.array(scheduleRecord) }),
    failures: ['AUTH', 'NF2'],
    permission: 'read',
    handle: async ({ ctx, utr, deps }) => ok({ automation_schedules: await schedules.listSchedules(ctx, deps.config, utr) }),
  }),
  route({
    method: 'post',
    path: '/automations/schedule/create',
    tag,
    summary: 'Add an email to an automation (after the previous one, waiting hours/days or instantly)',
    body: createScheduleBody,
    bodyLimit: 'design',
    response: confirmation(messages.scheduleAdded),
    failures: ['AUTH', 'VAL'],
    permission: 'campaigns:manage',
    audit: {
      action: 'automation_email.created',
      entry: ({ body }) => ({ objectKind: 'automation', objectId: body.utr, summary: `email “${body.subject}”, ${body.waiting_type === 'instantly' ? 'instantly' : `after ${body.waiting_period} ${body.waiting_type}`}` }),
    },
    handle: async ({ ctx, body }) => {
      await schedules.createSchedule(ctx, body);
      return ok(messages.scheduleAdded);
    },
  }),
  route({
    method: 'post',
    path: '/automations/schedule/update',
    tag,
    summary: 'Herald extension: change an email of an automation in place (every field of create again)',
    description:
      '`utr` is the email’s (from GET /automations/schedule). Its place in the sequence, its utr and its counters ' +
      'stay. Contacts already waiting for it keep the due time they were given; a changed wait applies to those ' +
      'who reach it later.',
    id: utr2,
    body: updateScheduleBody,
    bodyLimit: 'design',
    response: confirmation(messages.updated),
    failures: ['AUTH', 'VAL', 'NF2'],
    permission: 'campaigns:manage',
    audit: {
      action: 'automation_email.updated',
      entry: ({ utr, body }) => ({ objectKind: 'automation_email', objectId: utr, summary: `email “${body.subject}”` }),
    },
    handle: async ({ ctx, utr, body }) => {
      await schedules.updateSchedule(ctx, utr, body);
      return ok(messages.updated);
    },
  }),
  route({
    method: 'delete',
    path: '/automations/schedule/delete',
    tag,
    summary: 'Remove an email from an automation',
    id: utr2,
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'NF2'],
    permission: 'campaigns:manage',
    audit: {
      action: 'automation_email.deleted',
      entry: ({ utr }) => ({ objectKind: 'automation_email', objectId: utr, summary: 'removed' }),
    },
    handle: async ({ ctx, utr }) => {
      await schedules.deleteSchedule(ctx, utr);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'get',
    path: '/automations/contacts',
    tag,
    summary: 'Herald extension: each entered contact with its next email and due time, or finished/exited',
    id: utr2,
    list: true,
    response: z.object({ contacts: z.array(automationContactRecord), pagination: pagination.optional() }),
    failures: ['AUTH', 'NF2'],
    permission: 'read',
    handle: async ({ ctx, utr, paging }) => ok(listPayload('contacts', await service.listEnteredContacts(ctx, utr, paging))),
  }),
];
