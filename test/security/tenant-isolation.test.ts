import { NOT_FOUND_2 } from '../../src/http/envelope';
import type request from 'supertest';
import { api, setupApp } from '../helpers/app';
import { isBulkDelete, notFoundText, operations, referenceFields } from './lib/routes';
import { accountRows, digest } from './lib/snapshot';
import { buildWorld, type World } from './lib/world';

/**
 * The tenant isolation matrix. Account B uses its own, valid keys on account A's records:
 * every operation that takes an id or a utr (query or body, bulk deletes, Herald's
 * extensions) must answer not found (NF1/NF2 as the route says) — or, for a reference
 * inside a form, VAL on that field — and change nothing of A's (nor of B's). The list of
 * operations comes from the route table: a route that takes an id and has no row here
 * fails the coverage test. Each row is also replayed with A's own keys on a fresh copy of
 * A's records, which must NOT answer not found: that proves the ids in the row are real.
 */
const { app, db, mailer } = setupApp();

type Http = ReturnType<typeof api>;
/** Builds the request: `t` owns the records named, `me` is the caller (its records fill the rest). */
type Send = (http: Http, t: World, me: World) => request.Test;

interface Case {
  /** What the row shows, e.g. `id`, `strIds (mixed)`. */
  name: string;
  /** The id param or body fields that name `t`'s records. */
  refs: string[];
  send: Send;
  /** NF for ids (the route's own NF1/NF2 text), VAL (422 on a `refs` field) for references in a form. */
  expect: 'NF' | 'VAL';
  /** The not-found text when the route answers two (GET /contacts/export: NF1 for a type, NF2 for a segment). */
  notFound?: string;
}

const q = (path: string, params: Record<string, string | number>) =>
  `${path}?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString()}`;

let seq = 0;
const contactBody = (me: World, typeId = me.contactTypeId) => ({
  contact_type_id: typeId,
  email: `${me.marker}.fresh${(seq += 1)}@example.com`,
  first_name: 'Eve',
  country: me.countryId,
});
const groupBody = { group_name: 'Renamed', description: 'Changed', is_display: 0 };
const senderBody = (me: World) => ({
  from_name: 'Changed',
  from_email: `${me.marker}.changed@example.com`,
  reply_to_email: `${me.marker}.changed@example.com`,
  country_id: me.countryId,
  company_address: 'Elsewhere 2',
  nickname: 'changed',
});
const segmentBody = (me: World, typeId = me.contactTypeId, fieldId = me.emailFieldId) => ({
  segment_name: 'Changed segment',
  contact_type_id: typeId,
  select_field: [fieldId],
  select_operator: fieldId === me.emailFieldId ? ['contains'] : ['is'],
  value: ['x'],
});
const sendBody = (me: World, over: Record<string, unknown> = {}) => ({
  template_id: 1,
  template_html: '<html><body><p>Changed</p></body></html>',
  sender_id: me.senderId,
  unsubscribe_group_id: me.groupId,
  single_send_name: 'Changed send',
  subject: 'Changed subject',
  preheader: 'Changed preheader',
  recipient_id: [`contacts_${me.contactTypeId}`],
  schedule_type: 1,
  schedule_date: '2099-02-01',
  schedule_time: '09:00:00',
  ...over,
});
const scheduleBody = (me: World, over: Record<string, unknown> = {}) => ({
  utr: me.automationUtr,
  sender_id: me.senderId,
  subject: 'Another step',
  waiting_period: 2,
  waiting_type: 'days',
  template_id: 1,
  preview_img: 'custom.png',
  template_html: '<html><body>step</body></html>',
  ...over,
});
const idCase = (name: string, send: Send): Case => ({ name, refs: [name], send, expect: 'NF' });
/** A signup form of `me` (JSON: its fields are objects), with these fields changed. */
const formBody = (me: World, over: Record<string, unknown> = {}) => ({
  name: `${me.marker} form`,
  contact_type_ids: [me.contactTypeId],
  fields: [{ field_name: 'email' }, { field_name: me.customFieldName }],
  consent_text: `${me.marker} consent`,
  confirmation_sender_id: me.senderId,
  ...over,
});
/** A form naming `t`'s sender, lists or custom field (VAL on that field). */
const formCases = (send: (h: Http, body: Record<string, unknown>, me: World) => request.Test): Case[] => [
  {
    name: 'confirmation_sender_id',
    refs: ['confirmation_sender_id'],
    expect: 'VAL',
    send: (h, t, me) => send(h, formBody(me, { confirmation_sender_id: t.senderId }), me),
  },
  {
    name: 'contact_type_ids',
    refs: ['contact_type_ids'],
    expect: 'VAL',
    send: (h, t, me) => send(h, formBody(me, { contact_type_ids: [me.contactTypeId, t.contactTypeId] }), me),
  },
  {
    name: 'fields (custom field by name)',
    refs: ['fields'],
    expect: 'VAL',
    send: (h, t, me) => send(h, formBody(me, { fields: [{ field_name: t.customFieldName }] }), me),
  },
];
/** A bulk delete: `t`'s ids alone, and mixed with the caller's own (all or nothing: the caller's stay too). */
const bulkCases = (path: string, ids: (w: World) => Array<string | number>): Case[] => [
  { name: 'strIds', refs: ['strIds'], expect: 'NF', send: (h, t) => bulk(h, path, ids(t)) },
  { name: 'strIds (mixed with own)', refs: ['strIds'], expect: 'NF', send: (h, t, me) => bulk(h, path, [ids(me)[0], ids(t)[0]]) },
];
/** Bulk deletes are application/x-www-form-urlencoded (spec rule 4). */
function bulk(h: Http, path: string, ids: Array<string | number>): request.Test {
  return h.urlencoded(path, ids.map((id, i) => `strIds[${i}]=${encodeURIComponent(String(id))}`).join('&'));
}

/** The matrix, by operation. */
const MATRIX: Record<string, Case[]> = {
  'DELETE /global-unsubscribes/delete': [idCase('id', (h, t) => h.delete(q('/global-unsubscribes/delete', { id: t.globalUnsubscriberIds[0] })))],
  'POST /global-unsubscribes/bulk-delete': bulkCases('/global-unsubscribes/bulk-delete', (w) => w.globalUnsubscriberIds),

  'GET /segment/email/list': [idCase('segment_id', (h, t) => h.get(q('/segment/email/list', { segment_id: t.segmentId })))],
  'POST /segment/email/store': [
    {
      name: 'segment_id',
      refs: ['segment_id'],
      expect: 'VAL',
      send: (h, t, me) =>
        h.form('/segment/email/store', { segment_id: t.segmentId, first_name: 'Eve', last_name: 'X', email: `${me.marker}.eve@example.com` }),
    },
  ],
  'DELETE /segment/email/delete': [
    idCase('segment_recipient_id', (h, t) => h.delete(q('/segment/email/delete', { segment_recipient_id: t.segmentRecipientId }))),
  ],
  'DELETE /segment/delete': [idCase('segment_id', (h, t) => h.delete(q('/segment/delete', { segment_id: t.segmentId })))],
  'POST /segment/save': [
    { name: 'contact_type_id', refs: ['contact_type_id'], expect: 'VAL', send: (h, t, me) => h.form('/segment/save', segmentBody(me, t.contactTypeId)) },
    {
      name: 'select_field (a custom field of t)',
      refs: ['select_field'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/segment/save', segmentBody(me, me.contactTypeId, t.customFieldId)),
    },
  ],
  'POST /segment/update': [
    idCase('segment_id', (h, t, me) => h.form(q('/segment/update', { segment_id: t.segmentId }), segmentBody(me))),
    {
      name: 'contact_type_id',
      refs: ['contact_type_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form(q('/segment/update', { segment_id: me.segmentId }), segmentBody(me, t.contactTypeId)),
    },
    {
      name: 'select_field (a custom field of t)',
      refs: ['select_field'],
      expect: 'VAL',
      send: (h, t, me) => h.form(q('/segment/update', { segment_id: me.segmentId }), segmentBody(me, me.contactTypeId, t.customFieldId)),
    },
  ],
  'GET /segment/details': [idCase('segment_id', (h, t) => h.get(q('/segment/details', { segment_id: t.segmentId })))],

  'POST /webhooks/save': [idCase('id', (h, t) => h.form('/webhooks/save', { id: t.webhookId, url: 'https://93.184.215.14/changed' }))],
  'GET /webhooks/details': [idCase('id', (h, t) => h.get(q('/webhooks/details', { id: t.webhookId })))],
  'DELETE /webhooks/delete': [idCase('id', (h, t) => h.delete(q('/webhooks/delete', { id: t.webhookId })))],
  'POST /webhooks/test': [idCase('id', (h, t) => h.form(q('/webhooks/test', { id: t.webhookId }), {}))],
  'GET /webhooks/deliveries': [idCase('id', (h, t) => h.get(q('/webhooks/deliveries', { id: t.webhookId })))],
  'GET /unsubscribes-groups/details': [idCase('id', (h, t) => h.get(q('/unsubscribes-groups/details', { id: t.groupId })))],
  'POST /unsubscribes-groups/update': [idCase('id', (h, t) => h.form(q('/unsubscribes-groups/update', { id: t.groupId }), groupBody))],
  'DELETE /unsubscribes-groups/delete': [idCase('id', (h, t) => h.delete(q('/unsubscribes-groups/delete', { id: t.groupId })))],
  'POST /unsubscribes-groups/manually-add': [
    {
      name: 'unsubscribe_groups_id',
      refs: ['unsubscribe_groups_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/unsubscribes-groups/manually-add', { unsubscribe_groups_id: t.groupId, email_address: `${me.marker}.x@example.com` }),
    },
  ],
  'GET /unsubscribes-groups/recipients-list': [
    idCase('groupId', (h, t) => h.get(q('/unsubscribes-groups/recipients-list', { groupId: t.groupId }))),
  ],
  'DELETE /unsubscribes-groups/recipients-delete': [
    idCase('id', (h, t) => h.delete(q('/unsubscribes-groups/recipients-delete', { id: t.groupRecipientIds[0] }))),
  ],
  'POST /unsubscribes-groups/recipients-bulk-delete': bulkCases('/unsubscribes-groups/recipients-bulk-delete', (w) => w.groupRecipientIds),

  'GET /contacts-type/view': [idCase('contact_type_id', (h, t) => h.get(q('/contacts-type/view', { contact_type_id: t.contactTypeId })))],
  'POST /contacts-type/update': [idCase('id', (h, t) => h.form('/contacts-type/update', { id: t.contactTypeId, name: 'Renamed list' }))],
  'DELETE /contacts-type/delete': [idCase('contact_type_id', (h, t) => h.delete(q('/contacts-type/delete', { contact_type_id: t.contactTypeId })))],

  'POST /contacts/add': [
    { name: 'contact_type_id', refs: ['contact_type_id'], expect: 'VAL', send: (h, t, me) => h.form('/contacts/add', contactBody(me, t.contactTypeId)) },
    {
      name: 'custom_field[<a custom field of t>]',
      refs: ['custom_field'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/contacts/add', { ...contactBody(me), [`custom_field[${t.customFieldName}]`]: 'x' }),
    },
  ],
  'POST /contacts/upload-csv': [
    {
      name: 'contact_type_id',
      refs: ['contact_type_id'],
      expect: 'VAL',
      send: (h, t, me) =>
        h
          .form('/contacts/upload-csv', { contact_type_id: t.contactTypeId })
          .attach('file', Buffer.from(`email,first_name\n${me.marker}.up@example.com,Up\n`), { filename: 'list.csv', contentType: 'text/csv' }),
    },
  ],
  'GET /contacts/details': [idCase('contact_id', (h, t) => h.get(q('/contacts/details', { contact_id: t.contactIds[0] })))],
  'POST /contacts/update': [
    idCase('contact_id', (h, t, me) => h.form('/contacts/update', { contact_id: t.contactIds[0], ...contactBody(me) })),
    {
      name: 'contact_type_id',
      refs: ['contact_type_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/contacts/update', { contact_id: me.contactIds[0], ...contactBody(me, t.contactTypeId) }),
    },
  ],
  'DELETE /contacts/delete': [idCase('contact_id', (h, t) => h.delete(q('/contacts/delete', { contact_id: t.contactIds[0] })))],
  'POST /contacts/bulk-delete': bulkCases('/contacts/bulk-delete', (w) => w.contactIds),

  'DELETE /custom-fields/delete': [idCase('id', (h, t) => h.delete(q('/custom-fields/delete', { id: t.customFieldId })))],

  'POST /single/send/create': [
    { name: 'sender_id', refs: ['sender_id'], expect: 'VAL', send: (h, t, me) => h.form('/single/send/create', sendBody(me, { sender_id: t.senderId })) },
    {
      name: 'unsubscribe_group_id',
      refs: ['unsubscribe_group_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/single/send/create', sendBody(me, { unsubscribe_group_id: t.groupId })),
    },
    {
      name: 'recipient_id (contacts_)',
      refs: ['recipient_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/single/send/create', sendBody(me, { recipient_id: [`contacts_${t.contactTypeId}`] })),
    },
    {
      name: 'recipient_id (segments_)',
      refs: ['recipient_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/single/send/create', sendBody(me, { recipient_id: [`segments_${t.segmentId}`] })),
    },
    {
      name: 'exclude_specific_recipient_id',
      refs: ['exclude_specific_recipient_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/single/send/create', sendBody(me, { exclude_specific_recipient_id: [`contacts_${t.contactTypeId}`] })),
    },
    {
      name: 'ab_variations.0.sender_id',
      refs: ['ab_variations.0.sender_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/single/send/create', sendBody(me, { ab_test_type: 'sender', 'ab_variations[0][sender_id]': t.senderId })),
    },
  ],
  'POST /single/send/ab/winner': [idCase('utr', (h, t) => h.form('/single/send/ab/winner', { utr: t.singleSendUtr, variation: 0 }))],
  'GET /designs/details': [idCase('id', (h, t) => h.get(q('/designs/details', { id: t.designId })))],
  'POST /designs/update': [idCase('id', (h, t) => h.form('/designs/update', { id: t.designId, template_name: 'Changed design' }))],
  'DELETE /designs/delete': [idCase('id', (h, t) => h.delete(q('/designs/delete', { id: t.designId })))],
  'POST /forms/save': formCases((h, body) => h.json('/forms/save', body)),
  'POST /forms/update': [
    idCase('id', (h, t, me) => h.json(q('/forms/update', { id: t.formId }), formBody(me))),
    ...formCases((h, body, me) => h.json(q('/forms/update', { id: me.formId }), body)),
  ],
  'GET /forms/details': [idCase('id', (h, t) => h.get(q('/forms/details', { id: t.formId })))],
  'GET /forms/stats': [idCase('id', (h, t) => h.get(q('/forms/stats', { id: t.formId })))],
  'DELETE /forms/delete': [idCase('id', (h, t) => h.delete(q('/forms/delete', { id: t.formId })))],
  'POST /users/resend-invitation': [idCase('id', (h, t) => h.form('/users/resend-invitation', { id: t.userMemberId }))],
  'POST /users/role': [idCase('id', (h, t) => h.form('/users/role', { id: t.userMemberId, role: 'viewer' }))],
  'POST /users/reset-two-factor': [idCase('id', (h, t) => h.form('/users/reset-two-factor', { id: t.userMemberId }))],
  // A user of its own: the control replays every row on one world, and this one removes its user.
  'POST /users/delete': [idCase('id', (h, t) => h.form('/users/delete', { id: t.removableMemberId }))],
  'GET /contacts/search': [idCase('contact_type_id', (h, t, me) => h.get(q('/contacts/search', { q: me.marker, contact_type_id: t.contactTypeId })))],
  'GET /contacts/export': [
    idCase('contact_type_id', (h, t) => h.get(q('/contacts/export', { contact_type_id: t.contactTypeId }))),
    { ...idCase('segment_id', (h, t) => h.get(q('/contacts/export', { segment_id: t.segmentId }))), notFound: NOT_FOUND_2 },
  ],
  'POST /single/send/schedule': [idCase('utr', (h, t) => h.form('/single/send/schedule', { utr: t.singleSendUtr }))],
  'POST /single/send/unschedule': [idCase('utr', (h, t) => h.form('/single/send/unschedule', { utr: t.singleSendUtr }))],
  'POST /single/send/pause': [idCase('utr', (h, t) => h.form('/single/send/pause', { utr: t.singleSendUtr }))],
  'POST /single/send/resume': [idCase('utr', (h, t) => h.form('/single/send/resume', { utr: t.singleSendUtr }))],
  'GET /single/send/preview': [
    idCase('utr', (h, t) => h.get(q('/single/send/preview', { utr: t.singleSendUtr }))),
    { name: 'contact_id', refs: ['contact_id'], expect: 'NF', send: (h, t, me) => h.get(q('/single/send/preview', { utr: me.singleSendUtr, contact_id: t.contactIds[0] })) },
  ],
  'POST /single/send/test': [
    idCase('utr', (h, t) => h.form('/single/send/test', { utr: t.singleSendUtr, emails: ['isolation@example.com'] })),
    {
      name: 'contact_id',
      refs: ['contact_id'],
      expect: 'NF',
      send: (h, t, me) => h.form('/single/send/test', { utr: me.singleSendUtr, emails: ['isolation@example.com'], contact_id: t.contactIds[0] }),
    },
  ],
  'GET /single/send/duplicate': [idCase('utr', (h, t) => h.get(q('/single/send/duplicate', { utr: t.singleSendUtr })))],
  'POST /single/send/duplicate': [idCase('utr', (h, t) => h.form(q('/single/send/duplicate', { utr: t.singleSendUtr }), {}))],
  'GET /single-send/details': [idCase('utr', (h, t) => h.get(q('/single-send/details', { utr: t.singleSendUtr })))],
  'GET /single/send/stats': [idCase('utr', (h, t) => h.get(q('/single/send/stats', { utr: t.singleSendUtr })))],
  'POST /single/send/update': [
    idCase('utr', (h, t, me) => h.form('/single/send/update', { utr: t.singleSendUtr, ...sendBody(me) })),
    {
      name: 'sender_id',
      refs: ['sender_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/single/send/update', { utr: me.singleSendUtr, ...sendBody(me, { sender_id: t.senderId }) }),
    },
    {
      name: 'unsubscribe_group_id',
      refs: ['unsubscribe_group_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/single/send/update', { utr: me.singleSendUtr, ...sendBody(me, { unsubscribe_group_id: t.groupId }) }),
    },
    {
      name: 'recipient_id',
      refs: ['recipient_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/single/send/update', { utr: me.singleSendUtr, ...sendBody(me, { recipient_id: [`segments_${t.segmentId}`] }) }),
    },
    {
      name: 'exclude_specific_recipient_id',
      refs: ['exclude_specific_recipient_id'],
      expect: 'VAL',
      send: (h, t, me) =>
        h.form('/single/send/update', { utr: me.singleSendUtr, ...sendBody(me, { exclude_specific_recipient_id: [`segments_${t.segmentId}`] }) }),
    },
  ],
  'DELETE /single/send/delete': [idCase('utr', (h, t) => h.delete(q('/single/send/delete', { utr: t.singleSendUtr })))],
  'POST /single/send/bulk-delete': [
    ...bulkCases('/single/send/bulk-delete', (w) => [w.singleSendUtr]),
    { name: 'strIds (by id)', refs: ['strIds'], expect: 'NF', send: (h, t) => bulk(h, '/single/send/bulk-delete', [t.singleSendId]) },
  ],

  'POST /automations/create': [
    {
      name: 'automation_for (contacts_)',
      refs: ['automation_for'],
      expect: 'VAL',
      send: (h, t, me) =>
        h.form('/automations/create', { type: 'custom', automation_for: `contacts_${t.contactTypeId}`, automation_name: 'X', unsubscribe_group_id: me.groupId }),
    },
    {
      name: 'automation_for (segments_)',
      refs: ['automation_for'],
      expect: 'VAL',
      send: (h, t, me) =>
        h.form('/automations/create', { type: 'welcome', automation_for: `segments_${t.segmentId}`, automation_name: 'X', unsubscribe_group_id: me.groupId }),
    },
    {
      name: 'unsubscribe_group_id',
      refs: ['unsubscribe_group_id'],
      expect: 'VAL',
      send: (h, t, me) =>
        h.form('/automations/create', { type: 'custom', automation_for: `contacts_${me.contactTypeId}`, automation_name: 'X', unsubscribe_group_id: t.groupId }),
    },
  ],
  'GET /automations/duplicate': [idCase('utr', (h, t) => h.get(q('/automations/duplicate', { utr: t.automationUtr })))],
  'GET /automations/details': [idCase('utr', (h, t) => h.get(q('/automations/details', { utr: t.automationUtr })))],
  'GET /automations/stats': [idCase('utr', (h, t) => h.get(q('/automations/stats', { utr: t.automationUtr })))],
  'GET /automations/pause': [idCase('utr', (h, t) => h.get(q('/automations/pause', { utr: t.automationUtr })))],
  'GET /automations/set-live': [idCase('utr', (h, t) => h.get(q('/automations/set-live', { utr: t.automationUtr })))],
  'DELETE /automations/delete': [idCase('utr', (h, t) => h.delete(q('/automations/delete', { utr: t.automationUtr })))],
  'POST /automations/bulk-delete': [
    ...bulkCases('/automations/bulk-delete', (w) => [w.automationUtr]),
    { name: 'strIds (by id)', refs: ['strIds'], expect: 'NF', send: (h, t) => bulk(h, '/automations/bulk-delete', [t.automationId]) },
  ],
  'GET /automations/schedule': [idCase('utr', (h, t) => h.get(q('/automations/schedule', { utr: t.automationUtr })))],
  'POST /automations/schedule/create': [
    { name: 'utr', refs: ['utr'], expect: 'VAL', send: (h, t, me) => h.form('/automations/schedule/create', scheduleBody(me, { utr: t.automationUtr })) },
    {
      name: 'sender_id',
      refs: ['sender_id'],
      expect: 'VAL',
      send: (h, t, me) => h.form('/automations/schedule/create', scheduleBody(me, { sender_id: t.senderId })),
    },
  ],
  'POST /automations/schedule/update': [
    idCase('utr', (h, t, me) => h.form('/automations/schedule/update', { ...scheduleBody(me), utr: t.scheduleUtr })),
    { name: 'sender_id', refs: ['sender_id'], expect: 'VAL', send: (h, t, me) => h.form('/automations/schedule/update', { ...scheduleBody(me, { sender_id: t.senderId }), utr: me.scheduleUtr }) },
  ],
  'DELETE /automations/schedule/delete': [idCase('utr', (h, t) => h.delete(q('/automations/schedule/delete', { utr: t.scheduleUtr })))],
  'GET /automations/contacts': [idCase('utr', (h, t) => h.get(q('/automations/contacts', { utr: t.automationUtr })))],

  'DELETE /notification-recipient/delete': [idCase('id', (h, t) => h.delete(q('/notification-recipient/delete', { id: t.notificationIds[0] })))],
  'POST /notification-recipient/bulk-delete': bulkCases('/notification-recipient/bulk-delete', (w) => w.notificationIds),

  'GET /sender/details': [idCase('sender_id', (h, t) => h.get(q('/sender/details', { sender_id: t.senderId })))],
  'POST /sender/update': [idCase('sender_id', (h, t, me) => h.form('/sender/update', { sender_id: t.senderId, ...senderBody(me) }))],
  'DELETE /sender/delete': [idCase('sender_id', (h, t) => h.delete(q('/sender/delete', { sender_id: t.senderId })))],
  'GET /sender/resend-mail': [idCase('sender_id', (h, t) => h.get(q('/sender/resend-mail', { sender_id: t.senderId })))],
  'GET /sender/dns': [idCase('sender_id', (h, t) => h.get(q('/sender/dns', { sender_id: t.senderId })))],
  'POST /sender/dns/check': [idCase('sender_id', (h, t) => h.form(q('/sender/dns/check', { sender_id: t.senderId }), {}))],
  'POST /sender/dns/rotate': [idCase('sender_id', (h, t) => h.form(q('/sender/dns/rotate', { sender_id: t.senderId }), {}))],
  'GET /suppressions/message': [idCase('id', (h, t) => h.get(q('/suppressions/message', { id: t.suppressionId })))],
  'GET /reports/automation': [idCase('utr', (h, t) => h.get(q('/reports/automation', { utr: t.automationUtr })))],
  'GET /reports/kept-report': [idCase('event_id', (h, t) => h.get(q('/reports/kept-report', { event_id: t.bounceEventId })))],
};

const ops = operations();
/** One person's data by address (issue 35): checked below with A's address and B's keys. */
const PERSON_ROUTES = new Set(['GET /contacts/consent', 'GET /contacts/export-person', 'POST /contacts/erase']);
/** Operations that name records: an id param, or reference fields in the form. */
const referencing = ops.filter((op) => op.def.id || referenceFields(op.def).length > 0);
/** Operations with neither: lists and other reads, checked for leaks by marker. */
// Reads that need a query (GET /contacts/search's q, GET /contacts/export's list) are rows of the matrix instead.
const reads = ops.filter((op) => !op.def.id && !op.def.body && op.method !== 'delete' && !MATRIX[op.key] && !PERSON_ROUTES.has(op.key));


let A: World;
let B: World;

beforeAll(async () => {
  [A, B] = await Promise.all([buildWorld(app, db), buildWorld(app, db)]);
}, 60_000);

describe('the matrix covers the route table', () => {
  it('has a row for every operation that takes an id, a utr or a reference to another record', () => {
    const missing: string[] = [];
    for (const op of referencing) {
      const cases = MATRIX[op.key];
      if (!cases) {
        missing.push(op.key);
        continue;
      }
      const covered = new Set(cases.flatMap((c) => c.refs));
      const wanted = [...(op.def.id ? [op.def.id.name] : []), ...referenceFields(op.def)];
      for (const name of wanted) if (!covered.has(name)) missing.push(`${op.key} (${name})`);
    }
    expect(missing).toEqual([]);
  });

  it('has no row for an operation that no longer exists', () => {
    const known = new Set(ops.map((o) => o.key));
    expect(Object.keys(MATRIX).filter((k) => !known.has(k))).toEqual([]);
  });

  it('covers the bulk deletes and both methods of rule-9 routes', () => {
    expect(ops.filter((o) => isBulkDelete(o.def)).every((o) => MATRIX[o.key])).toBe(true);
    expect(MATRIX['GET /single/send/duplicate']).toBeDefined();
    expect(MATRIX['POST /single/send/duplicate']).toBeDefined();
    expect(referencing.length).toBeGreaterThanOrEqual(45);
  });
});

const rows = referencing.flatMap((op) => (MATRIX[op.key] ?? []).map((c) => ({ op, c, label: `${op.key} — ${c.name}` })));

describe("account B's keys on account A's records", () => {
  it.each(rows)('$label: not found, nothing changes', async ({ op, c }) => {
    const beforeA = await accountRows(db, A.account.id);
    const beforeB = await digest(db, B.account.id);
    const mails = mailer.sent.length;

    const res = await c.send(api(app, B.account), A, B);

    if (c.expect === 'NF') {
      expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { status: 'failed', errors: c.notFound ?? notFoundText(op.def) } });
    } else {
      expect(res.status).toBe(422);
      expect(res.body.status).toBe('failed');
      const fields = Object.keys(res.body.errors ?? {});
      expect(fields.some((f) => c.refs.some((r) => f === r || f.startsWith(`${r}.`)))).toBe(true);
    }
    // Nothing of A's changed, nothing of B's was half-written, no mail went out.
    expect(await accountRows(db, A.account.id)).toEqual(beforeA);
    expect(await digest(db, B.account.id)).toEqual(beforeB);
    expect(mailer.sent.length).toBe(mails);
  });
});

describe("control: account A's own keys on the same requests", () => {
  let shared: World | undefined;
  it.each(rows)('$label: found (the row names real records)', async ({ op, c }) => {
    // Deletes get a fresh copy of A's records each, so one row's delete cannot mask another.
    const destructive = op.method === 'delete' || isBulkDelete(op.def);
    const own = destructive ? await buildWorld(app, db) : (shared ??= await buildWorld(app, db));
    const res = await c.send(api(app, own.account), own, own);
    if (c.expect === 'NF') {
      expect(res.status).not.toBe(404);
      expect(res.status).toBeLessThan(500);
    } else {
      expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { status: 'success' } });
    }
  });
});

describe("lists and reads with B's keys never show A's records", () => {
  it.each(reads.map((op) => ({ op, label: op.key })))('$label', async ({ op }) => {
    const send = (w: World) => {
      const h = api(app, w.account);
      return op.method === 'post' ? h.form(op.path, {}) : h.get(op.path);
    };
    const theirs = await send(B);
    expect(theirs.status).toBe(200);
    expect(theirs.text).not.toContain(A.marker);
    expect(theirs.text).not.toMatch(new RegExp(`"user_id":${A.account.id}[,}]`));
    // Control: where A's own answer shows A's records, the marker is how they are recognised.
    const mine = await send(A);
    expect(mine.status).toBe(200);
    if (OWN_DATA_VISIBLE.has(op.key)) expect(mine.text).toContain(A.marker);
  });

  it('every read that shows account data is listed as such (so its control runs)', () => {
    // GET /routes: the installation's relays (only filtered by the account's pinning; test/api/routes.test.ts).
    const global = new Set(['GET /reserve-fields', 'GET /get/country-state-city', 'GET /routes']);
    expect(reads.map((o) => o.key).filter((k) => !global.has(k) && !OWN_DATA_VISIBLE.has(k))).toEqual([]);
  });
});

/** Reads whose answer, for the owner, contains the owner's records (hence its marker). */
const OWN_DATA_VISIBLE = new Set([
  'GET /users',
  'GET /audit-log',
  'GET /reports/overview',
  'GET /global-unsubscribes',
  'GET /segment/list',
  'GET /unsubscribes-groups',
  'GET /contacts-type',
  'GET /contacts/list',
  'GET /contacts/csv-sample/download',
  'GET /contacts/imports',
  'GET /custom-fields',
  'GET /get-dynamic/content',
  'GET /single-send/list',
  'GET /automations',
  'GET /notification-recipients',
  'GET /notification-events',
  'GET /senders',
  'POST /senders',
  'GET /events',
  'GET /webhooks/list',
  'GET /suppressions/list',
  'GET /get-design/template',
  'GET /designs/list',
  'GET /forms/list',
]);

describe("one person's data by address (consent, export, erasure) with B's keys on A's address", () => {
  const address = () => `${A.marker}.1@example.com`;
  it('covers every route of the family', () => {
    expect(ops.filter((o) => /^(GET|POST) \/contacts\/(consent|export-person|erase)$/.test(o.key)).map((o) => o.key).sort()).toEqual([...PERSON_ROUTES].sort());
  });

  it.each(['/contacts/consent', '/contacts/export-person'])('GET %s: empty for B, A’s own for A', async (path) => {
    const theirs = await api(app, B.account).get(q(path, { email: address() }));
    expect(theirs.status).toBe(200);
    // The export names the address asked for; nothing else of A's.
    expect(theirs.text.split(address()).join('')).not.toContain(A.marker);
    const mine = await api(app, A.account).get(q(path, { email: address() }));
    expect(mine.status).toBe(200);
    expect(mine.text).toContain(path.endsWith('consent') ? `key:${A.account.public_key}` : `${A.marker} first 1`);
  });

  it("POST /contacts/erase: B's erasure of A's address changes nothing of A's", async () => {
    const beforeA = await accountRows(db, A.account.id);
    const res = await api(app, B.account).form('/contacts/erase', { email: address() });
    expect(res.status).toBe(200);
    expect(res.body.message.erasure.rows_removed).toEqual({});
    expect(await accountRows(db, A.account.id)).toEqual(beforeA);
  });
});
