import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import type { Knex } from 'knex';
import { api, makeAccount, type TestAccount } from '../../helpers/app';

/**
 * One record of every kind an account can own, made through the API where the API makes
 * it (so the records are what a client would have), with their ids and utrs. Every
 * string the account stores carries `marker`, so a response that leaks one of its records
 * to another account can be spotted by searching for the marker.
 */
export interface World {
  account: TestAccount;
  marker: string;
  countryId: number;
  contactTypeId: number;
  /** A second contact type, for moves and bodies that need another list. */
  otherContactTypeId: number;
  contactIds: number[];
  customFieldId: number;
  customFieldName: string;
  groupId: number;
  groupRecipientIds: number[];
  globalUnsubscriberIds: number[];
  notificationIds: number[];
  senderId: number;
  segmentId: number;
  segmentRecipientId: number;
  emailFieldId: number;
  singleSendUtr: string;
  singleSendId: number;
  automationUtr: string;
  automationId: number;
  /** A `bounced` event whose report is kept. */
  bounceEventId: number;
  scheduleUtr: string;
  importId: number;
  webhookId: number;
  /** A suppression with a kept report (GET /suppressions/message). */
  suppressionId: number;
  /** A saved design (POST /designs/save), named with the marker. */
  designId: number;
  /** A signup form (POST /forms/save), named with the marker. */
  formId: number;
  /** An invited user (POST /users/invite), address and name with the marker. */
  userMemberId: number;
  /** Another, for the removal (the control replays every row on one world). */
  removableMemberId: number;
}

function ok(res: { status: number; body: unknown; text?: string }, what: string): void {
  const body = res.body as { status?: string };
  if (res.status !== 200 || body?.status !== 'success') {
    throw new Error(`world: ${what} failed: ${res.status} ${JSON.stringify(res.body ?? res.text)}`);
  }
}

async function newestId(db: Knex, table: string, userId: number): Promise<number> {
  const row = await db(table).where({ user_id: userId }).orderBy('id', 'desc').first('id');
  if (!row) throw new Error(`world: no ${table} row`);
  return row.id as number;
}

export async function buildWorld(app: Express, db: Knex, account?: TestAccount): Promise<World> {
  const a = account ?? (await makeAccount(db, 'World'));
  const marker = `mk${randomBytes(5).toString('hex')}`;
  const http = api(app, a);
  const gb = (await db('countries').where({ iso_code: 'GB' }).first('id')) as { id: number };
  const emailField = (await db('fields').whereNull('user_id').where({ field_name: 'email' }).first('id')) as { id: number };

  ok(await http.form('/contacts-type/add', { name: `${marker} customers` }), 'contact type');
  const contactTypeId = await newestId(db, 'contact_types', a.id);
  ok(await http.form('/contacts-type/add', { name: `${marker} others` }), 'contact type 2');
  const otherContactTypeId = await newestId(db, 'contact_types', a.id);

  const customFieldName = `notes_${marker}`;
  ok(await http.form('/custom-fields/save', { field_name: customFieldName, field_type: 'text' }), 'custom field');
  const customFieldId = await newestId(db, 'fields', a.id);

  const contactIds: number[] = [];
  for (const n of [1, 2, 3]) {
    ok(
      await http.form('/contacts/add', {
        contact_type_id: contactTypeId,
        first_name: `${marker} first ${n}`,
        last_name: `${marker} last`,
        email: `${marker}.${n}@example.com`,
        country: gb.id,
        city: `${marker} city`,
        [`custom_field[${customFieldName}]`]: `${marker} note ${n}`,
      }),
      'contact',
    );
    contactIds.push(await newestId(db, 'contacts', a.id));
  }

  ok(await http.form('/unsubscribes-groups/save', { group_name: `${marker} news`, description: `${marker} about`, is_display: 1 }), 'group');
  const groupId = await newestId(db, 'unsubscribe_groups', a.id);
  ok(
    await http.form('/unsubscribes-groups/manually-add', {
      unsubscribe_groups_id: groupId,
      email_address: `${marker}.g1@example.com, ${marker}.g2@example.com`,
    }),
    'group recipients',
  );
  const groupRecipientIds = (await db('unsubscribe_group_recipients').where({ user_id: a.id }).orderBy('id').pluck('id')) as number[];

  ok(await http.form('/global-unsubscribes/save', { email_address: `${marker}.u1@example.com, ${marker}.u2@example.com` }), 'global unsubscribers');
  const globalUnsubscriberIds = (await db('global_unsubscribers').where({ user_id: a.id }).orderBy('id').pluck('id')) as number[];

  ok(await http.form('/notification-recipient/save', { email_address: `${marker}.n1@example.com`, email_owner: `${marker} owner 1` }), 'notification');
  ok(await http.form('/notification-recipient/save', { email_address: `${marker}.n2@example.com`, email_owner: `${marker} owner 2` }), 'notification');
  const notificationIds = (await db('notification_recipients').where({ user_id: a.id }).orderBy('id').pluck('id')) as number[];

  ok(
    await http.form('/sender/save', {
      from_name: `${marker} sender`,
      from_email: `${marker}.from@example.com`,
      reply_to_email: `${marker}.reply@example.com`,
      country_id: gb.id,
      company_address: `${marker} 1 High Street`,
      nickname: `${marker} nick`,
    }),
    'sender',
  );
  const senderId = await newestId(db, 'senders', a.id);
  // Verified as if its link had been opened (the verification page has its own tests).
  await db('senders').where({ id: senderId }).update({ is_verified: 1 });

  ok(
    await http.form('/segment/save', {
      segment_name: `${marker} segment`,
      contact_type_id: contactTypeId,
      select_field: [emailField.id],
      select_operator: ['contains'],
      value: [marker],
    }),
    'segment',
  );
  const segmentId = await newestId(db, 'segments', a.id);
  ok(
    await http.form('/segment/email/store', {
      segment_id: segmentId,
      first_name: `${marker} hand`,
      last_name: `${marker} added`,
      email: `${marker}.s1@example.com`,
    }),
    'segment recipient',
  );
  const segmentRecipientId = await newestId(db, 'segment_recipients', a.id);

  const send = await http.form('/single/send/create', {
    template_id: 1,
    template_html: `<html><body><p>${marker} hello ((first_name))</p></body></html>`,
    sender_id: senderId,
    unsubscribe_group_id: groupId,
    single_send_name: `${marker} campaign`,
    subject: `${marker} subject`,
    preheader: `${marker} preheader`,
    recipient_id: [`contacts_${contactTypeId}`],
    // Scheduled far ahead: no worker ever sends the fixture.
    schedule_type: 1,
    schedule_date: '2099-01-01',
    schedule_time: '10:00:00',
  });
  ok(send, 'single send');
  const singleSendUtr = send.body.message.utr as string;
  const singleSendId = (await db('single_sends').where({ utr: singleSendUtr }).first('id')).id as number;

  const auto = await http.form('/automations/create', {
    type: 'custom',
    automation_for: `contacts_${contactTypeId}`,
    automation_name: `${marker} drip`,
    unsubscribe_group_id: groupId,
  });
  ok(auto, 'automation');
  const automationUtr = auto.body.message.utr as string;
  const automationId = (await db('automations').where({ utr: automationUtr }).first('id')).id as number;
  ok(
    await http.form('/automations/schedule/create', {
      utr: automationUtr,
      sender_id: senderId,
      subject: `${marker} step one`,
      waiting_period: 1,
      waiting_type: 'days',
      template_id: 1,
      preview_img: 'custom.png',
      template_html: `<html><body><p>${marker} step</p></body></html>`,
    }),
    'automation email',
  );
  const scheduleUtr = (await db('automation_schedules').where({ automation_id: automationId }).orderBy('id', 'desc').first('utr')).utr as string;
  // Live, which also records an account event (`/notification-events`) naming it.
  ok(await http.get(`/automations/set-live?utr=${automationUtr}`), 'automation live');

  const csv = `email,first_name\n${marker}.csv@example.com,${marker} imported\n`;
  const imported = await http
    .form('/contacts/upload-csv', { contact_type_id: otherContactTypeId })
    .attach('file', Buffer.from(csv), { filename: `${marker}.csv`, contentType: 'text/csv' });
  ok(imported, 'csv import');
  const importId = await newestId(db, 'contact_imports', a.id);

  ok(await http.form('/webhooks/save', { url: `https://93.184.215.14/${marker}`, description: `${marker} webhook` }), 'webhook');
  const webhookId = await newestId(db, 'webhooks', a.id);
  // An address the test call refuses at once (loopback, not allowed here): no request leaves the test.
  await db('webhooks').where({ user_id: a.id, id: webhookId }).update({ url: `http://127.0.0.1:9/${marker}` });

  // A bounce as Herald keeps it: the report, and the suppression that names it.
  const [report] = await db('bounce_reports')
    .insert({ user_id: a.id, delivery_id: 1, kind: 'hard', source: 'dsn', status: '5.1.1', diagnostic: 'user unknown', raw: Buffer.from(`Subject: ${marker} bounce\r\n\r\nno such user\r\n`) })
    .returning('id');
  const [suppression] = await db('suppressions')
    .insert({ user_id: a.id, email: `${marker}-gone@example.com`, type: 'bounce', reason: 'hard bounce', diagnostic: 'user unknown', source: 'dsn', report_id: report.id })
    .returning('id');
  // An import that failed: the overview warns of it, by its file's name (GET /reports/overview).
  await db('contact_imports').insert({ user_id: a.id, contact_type_id: otherContactTypeId, file_name: `${marker}-broken.csv`, status: 'failed', error: 'not UTF-8', finished_at: db.fn.now() });
  // …and the event the bounce was recorded as (GET /reports/kept-report names the report by it).
  const [bounceEvent] = await db('events')
    .insert({ user_id: a.id, type: 'bounced', email: `${marker}-gone@example.com`, delivery_id: 1, data: JSON.stringify({ kind: 'hard', status: '5.1.1', diagnostic: 'user unknown', source: 'dsn' }) })
    .returning('id');

  const design = await http.form('/designs/save', { template_name: `${marker} design`, format: 'markdown', source: `# ${marker} heading` });
  ok(design, 'design');
  const form = await http.json('/forms/save', {
    name: `${marker} form`,
    contact_type_ids: [contactTypeId],
    fields: [{ field_name: 'email' }, { field_name: customFieldName }],
    consent_text: `${marker} consent`,
    confirmation_sender_id: senderId,
  });
  ok(form, 'form');
  const invited = await http.form('/users/invite', { email: `${marker}.user@example.com`, name: `${marker} user`, role: 'editor' });
  ok(invited, 'user');
  const removable = await http.form('/users/invite', { email: `${marker}.leaver@example.com`, name: `${marker} leaver`, role: 'viewer' });
  ok(removable, 'user to remove');

  return {
    userMemberId: Number((invited.body as { message: { user: { id: number } } }).message.user.id),
    removableMemberId: Number((removable.body as { message: { user: { id: number } } }).message.user.id),
    formId: Number((form.body as { message: { id: number } }).message.id),
    designId: Number((design.body as { message: { id: number } }).message.id),
    suppressionId: Number(suppression.id),
    bounceEventId: Number(bounceEvent.id),
    account: a,
    marker,
    countryId: gb.id,
    contactTypeId,
    otherContactTypeId,
    contactIds,
    customFieldId,
    customFieldName,
    groupId,
    groupRecipientIds,
    globalUnsubscriberIds,
    notificationIds,
    senderId,
    segmentId,
    segmentRecipientId,
    emailFieldId: emailField.id,
    singleSendUtr,
    singleSendId,
    automationUtr,
    automationId,
    scheduleUtr,
    importId,
    webhookId,
  };
}
