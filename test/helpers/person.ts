import type { Express } from 'express';
import type { Knex } from 'knex';
import request from 'supertest';
import { recordConsent } from '../../src/consent/record';
import { fanOutChunk } from '../../src/delivery/audience';
import { recordAccountEvent } from '../../src/events/account-events';
import { unsubscribeFromGroup } from '../../src/suppression';
import { api, type TestAccount } from './app';
import { expectSuccess } from './expect';
import { makeContactType, makeGroup, makeSegment, makeSender } from './fixtures';
import { createAutomation, createSend } from './sends';

/**
 * One person's address written into an account through every path a test can take (issue 35:
 * the export and the erasure): API adds, an import, a deleted contact, another contact's
 * alternative address, a segment's hand-added recipient, automation progress, recipient rows
 * (sent with events and a bounce report, and queued in a running send), unsubscribes, a
 * suppression, a form's consent record, a pending subscription, a test send, webhook and job
 * payloads, an account event, an import's skip reasons.
 */
/** A country id: POST /contacts/add requires one. */
export async function countryId(db: Knex): Promise<number> {
  return ((await db('countries').orderBy('id').first('id')) as { id: number }).id;
}

export interface PersonWorld {
  lists: number[];
  sendId: number;
  groupId: number;
  sender: number;
  sentRowId: number;
  queuedRowId: number;
}

export async function writePerson(app: Express, db: Knex, a: TestAccount, email: string): Promise<PersonWorld> {
  const lists = [await makeContactType(db, a, 'News'), await makeContactType(db, a, 'Offers'), await makeContactType(db, a, 'Old')];
  const groupId = await makeGroup(db, a);
  const sender = await makeSender(db, a);
  expectSuccess(await api(app, a).form('/contacts/add', { country: await countryId(db), contact_type_id: lists[0], email, first_name: 'Erin', last_name: 'Example' }));
  const csv = `email,first_name\n${email.toUpperCase()},Erin\nother-${a.id}@example.com,Other\n`;
  expectSuccess(await request(app).post('/contacts/upload-csv').set(a.headers).field('contact_type_id', String(lists[1])).attach('file', Buffer.from(csv), 'people.csv'));
  expectSuccess(await api(app, a).form('/contacts/add', { country: await countryId(db), contact_type_id: lists[2], email }));
  const old = await db('contacts').where({ user_id: a.id, contact_type_id: lists[2] }).first('id');
  expectSuccess(await api(app, a).delete(`/contacts/delete?contact_id=${old.id}`));
  expectSuccess(await api(app, a).form('/contacts/add', { country: await countryId(db), contact_type_id: lists[0], email: `friend-${a.id}@example.com`, alt_email: email }));
  const contact = await db('contacts').where({ user_id: a.id, contact_type_id: lists[0] }).whereRaw('lower(email) = lower(?)', [email]).first('id');
  const segment = await makeSegment(db, a, lists[0]);
  await db('segment_recipients').insert({ user_id: a.id, segment_id: segment, contact_id: contact.id, email, first_name: 'Erin' });
  const automation = await createAutomation(app, db, a, { group: groupId, list: lists[0] });
  await db('automation_contacts').insert({ user_id: a.id, automation_id: automation.id, contact_id: contact.id, email, state: 'active' });

  // A running send: its row for the address queued by fan-out, then one copy of it sent with events.
  const send = await createSend(app, db, a, { sender, group: groupId, list: lists[0] });
  await db('single_sends').where({ id: send.id }).update({ status: 2 });
  await db.transaction((trx) =>
    fanOutChunk(trx, { userId: a.id, singleSendId: send.id, groupId, sources: [{ id: String(lists[0]), table: 'contacts_' }], exclusions: [], hold: false }, { source: 0, after: 0 }, 100),
  );
  await db('single_sends').where({ id: send.id }).update({ triggered: db.raw('triggered + 2'), fanout_done_at: db.fn.now() });
  const queued = await db('deliveries').where({ user_id: a.id, single_send_id: send.id }).whereRaw('lower(email) = lower(?)', [email]).first('id');
  const other = await createSend(app, db, a, { sender, group: groupId, list: lists[0] }, { single_send_name: 'Earlier' });
  const [sent] = await db('deliveries')
    .insert({ user_id: a.id, single_send_id: other.id, contact_id: contact.id, email, status: 'sent', data: JSON.stringify({ first_name: 'Erin', email }), sent_at: db.fn.now(), message_id: `<m1@${a.id}.test>` })
    .returning('id');
  await db('events').insert([
    { user_id: a.id, type: 'delivered', email: email.toLowerCase(), single_send_id: other.id, delivery_id: sent.id, data: '{}' },
    { user_id: a.id, type: 'opened', email: email.toLowerCase(), single_send_id: other.id, delivery_id: sent.id, data: '{}' },
  ]);
  await db('bounce_reports').insert({ user_id: a.id, delivery_id: sent.id, kind: 'soft', source: 'smtp', diagnostic: `452 mailbox of ${email} full`, raw: Buffer.from(`To: ${email}\r\n\r\nfull`) });

  expectSuccess(await api(app, a).form('/global-unsubscribes/save', { email_address: email }));
  await unsubscribeFromGroup(db, a.id, groupId, [email]);
  expectSuccess(await api(app, a).form('/suppressions/add', { emails: email.toLowerCase() }));
  await recordConsent(db, [{ userId: a.id, email, contactTypeId: lists[0], source: 'form', formId: 5, clientIp: '203.0.113.7', userAgent: 'UA/1', consentText: 'Yes please', consentedAt: new Date() }]);
  await db('pending_subscriptions').insert({ user_id: a.id, form_id: 5, email, fields: JSON.stringify({ first_name: 'Erin' }), contact_type_ids: [lists[0]], consent_text: 'Yes please', ip: '203.0.113.7', user_agent: 'UA/1' });
  await db('test_sends').insert({ user_id: a.id, single_send_id: send.id, email });
  const [hook] = await db('webhooks').insert({ user_id: a.id, url: 'https://hooks.example.com/h', secret: 'whsec_test' }).returning('id');
  await db('webhook_deliveries').insert({ user_id: a.id, webhook_id: hook.id, msg_id: `msg_${a.id}`, type: 'delivered', event_ids: [1], payload: JSON.stringify({ data: { email, other: `keep-${a.id}@example.com` } }) });
  await db('jobs').insert({ user_id: a.id, kind: 'test.kind', status: 'done', payload: JSON.stringify({ to: email }) });
  await db('outbox_jobs').insert({ user_id: a.id, kind: 'notification', status: 'done', payload: JSON.stringify({ to: [email] }) });
  await recordAccountEvent({ db }, a.id, 'contact.confirmed', 'Confirmed', { email, contact_type_id: lists[0] });
  await db('contact_imports').insert({ user_id: a.id, contact_type_id: lists[1], file_name: 'x.csv', status: 'completed', reasons: JSON.stringify([{ row: 3, reason: `duplicate ${email}` }]) });
  return { lists, sendId: send.id, groupId, sender, sentRowId: Number(sent.id), queuedRowId: Number(queued.id) };
}
