import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { recordMessageEvents } from '../../../src/events/record';
import type { MessageEvent } from '../../../src/events/types';
import { countQueued } from '../../../src/statistics';
import { AutomationStatus, SendStatus } from '../../../src/states';
import type { TestAccount } from '../../helpers/app';
import { makeContacts, makeContactType, makeGroup, makeSender, makeSendRow } from '../../helpers/fixtures';

/**
 * An account with something to report, written the way Herald writes it: recipient rows as the
 * worker leaves them, every fact through recordMessageEvents (so the statistics consumer keeps
 * the counters and rollups the dashboard reads), queued automation emails through countQueued, as
 * the engine counts them.
 */
export interface World {
  typeId: number;
  contactIds: number[];
  emails: string[];
  send: { id: number; utr: string; name: string; subject: string; linkUrl: string };
  oldSend: { id: number; utr: string };
  automation: { id: number; utr: string; emails: Array<{ id: number; utr: string; subject: string }> };
  /** A complaint and a hard bounce with a kept report (event ids). */
  bounceEventId: string;
  complaintEventId: string;
  webhookId: number;
  senderId: number;
}

export interface WorldOptions {
  /** Shown as the contacts' first name, the send's subject and its link (markup to be shown as text). */
  contactName?: string;
  subject?: string;
  linkUrl?: string;
  /**
   * Applied to every other text the world writes (names, subjects, addresses, diagnostics,
   * errors, file names): the long-values test makes each one 200 unbroken characters.
   */
  stretch?: (value: string) => string;
}

const DSN = (to: string, diagnostic: string) =>
  [
    'From: MAILER-DAEMON@mx.remote.test',
    `To: bounce@bounces.test`,
    'Subject: Undelivered Mail Returned to Sender',
    'Content-Type: text/plain',
    '',
    `<${to}>: host mx.remote.test said: ${diagnostic}`,
    '',
  ].join('\r\n');

async function events(db: Knex, list: MessageEvent[]): Promise<void> {
  await db.transaction((trx) => recordMessageEvents(trx, list));
}

async function deliveries(db: Knex, rows: Array<Record<string, unknown>>): Promise<Array<{ id: number; email: string }>> {
  return db('deliveries').insert(rows).returning(['id', 'email']);
}

export async function makeWorld(db: Knex, a: TestAccount, opts: WorldOptions = {}): Promise<World> {
  const tag = randomBytes(3).toString('hex');
  const s = opts.stretch ?? ((value: string) => value);
  const typeId = await makeContactType(db, a, s('Customers'));
  const emails = Array.from({ length: 12 }, (_, i) => s(`reader${i}.${tag}@example.com`));
  const contactIds = await makeContacts(
    db,
    a,
    typeId,
    emails.map((email, i) => ({ email, first_name: i === 0 && opts.contactName ? opts.contactName : s(`Reader ${i}`) })),
  );

  // A single send sent two days ago to the 12 contacts: 10 delivered, 2 bounced at send.
  const subject = opts.subject ?? s(`November news ${tag}`);
  const linkUrl = opts.linkUrl ?? s(`https://example.com/offer?tag=${tag}`);
  const name = s(`November ${tag}`);
  const send = await makeSendRow(db, a, { name, status: SendStatus.Completed });
  await db('single_sends')
    .where({ id: send.id })
    .update({ subject, triggered: 12, sent_at: db.raw(`now() - interval '2 days'`), completed_at: db.raw(`now() - interval '2 days'`) });
  const rows = await deliveries(
    db,
    emails.map((email, i) => ({
      user_id: a.id,
      single_send_id: send.id,
      contact_id: contactIds[i],
      email,
      token: randomBytes(16).toString('hex'),
      status: i < 10 ? 'sent' : 'bounced',
      sent_at: db.fn.now(),
    })),
  );
  const [link] = await db('tracked_links').insert({ user_id: a.id, single_send_id: send.id, url: linkUrl }).returning('id');
  const ref = (i: number) => ({ userId: a.id, deliveryId: rows[i].id, singleSendId: send.id, automationId: null, email: rows[i].email });
  const bounce = { status: '5.1.1', diagnostic: s('550 5.1.1 User unknown'), source: 'dsn' };
  await events(db, [
    ...rows.slice(0, 10).map((_, i) => ({ type: 'delivered' as const, ...ref(i) })),
    { type: 'bounced', ...ref(10), data: { ...bounce, source: 'smtp', smtp_code: 550, kind: 'hard' } },
    { type: 'bounced', ...ref(11), data: { ...bounce, kind: 'hard' } },
  ]);
  // Six readers open (one twice), three click the link (one of them a suspected bot, which counts in totals only).
  await events(db, [...[0, 1, 2, 3, 4, 5, 0].map((i) => ({ type: 'opened' as const, ...ref(i) }))]);
  await events(db, [
    { type: 'clicked', ...ref(0), linkId: link.id, data: { url: linkUrl, suspected_bot: false } },
    { type: 'clicked', ...ref(1), linkId: link.id, data: { url: linkUrl, suspected_bot: false } },
    { type: 'clicked', ...ref(2), linkId: link.id, data: { url: linkUrl, suspected_bot: true } },
  ]);
  await events(db, [{ type: 'complained', ...ref(3), data: { source: 'arf', feedback_type: 'abuse' } }]);
  await db('bounce_reports').insert([
    { user_id: a.id, delivery_id: rows[11].id, kind: 'hard', source: 'dsn', status: '5.1.1', diagnostic: bounce.diagnostic, raw: Buffer.from(DSN(rows[11].email, bounce.diagnostic)) },
    { user_id: a.id, delivery_id: rows[3].id, kind: 'complaint', source: 'arf', diagnostic: s('abuse'), raw: Buffer.from('Feedback-Type: abuse\r\n') },
  ]);
  const problemIds = (await db('events').where({ user_id: a.id, single_send_id: send.id }).whereIn('type', ['bounced', 'complained']).orderBy('id').pluck('id')) as string[];

  // An older send, sent 40 days ago: outside a 30-day overview.
  const oldSend = await makeSendRow(db, a, { name: s(`October ${tag}`), status: SendStatus.Completed });
  await db('single_sends').where({ id: oldSend.id }).update({ triggered: 3, delivered: 3, unique_opens: 3, sent_at: db.raw(`now() - interval '40 days'`) });

  // A live automation with two emails; the first went to four contacts, the second to two.
  const group = await makeGroup(db, a, s(`Drip ${tag}`));
  const sender = await makeSender(db, a);
  const utr = randomUUID();
  const [auto] = await db('automations')
    .insert({
      user_id: a.id,
      utr,
      automation_for: typeId,
      automation_for_table: 'contacts_',
      automation_name: s(`Welcome ${tag}`),
      unsubscribe_group_id: group,
      automation_type: 1,
      status: AutomationStatus.Live,
      live_at: db.fn.now(),
    })
    .returning('id');
  const schedules: Array<{ id: number; utr: string; subject: string }> = [];
  for (const [i, subj] of [s(`Welcome aboard ${tag}`), s(`Getting started ${tag}`)].entries()) {
    const sUtr = randomUUID();
    const [s] = await db('automation_schedules')
      .insert({ user_id: a.id, automation_id: auto.id, sender_id: sender, subject: subj, waiting_period: i, waiting_type: i ? 'days' : 'instantly', utr: sUtr, template_id: 1, preview_img: 'x.png' })
      .returning('id');
    schedules.push({ id: s.id, utr: sUtr, subject: subj });
  }
  const queued = await deliveries(db, [
    ...[0, 1, 2, 3].map((i) => ({ user_id: a.id, automation_id: auto.id, automation_schedule_id: schedules[0].id, contact_id: contactIds[i], email: emails[i], status: 'sent', token: randomBytes(16).toString('hex') })),
    ...[0, 1].map((i) => ({ user_id: a.id, automation_id: auto.id, automation_schedule_id: schedules[1].id, contact_id: contactIds[i], email: emails[i], status: 'sent', token: randomBytes(16).toString('hex') })),
  ]);
  await db.transaction((trx) =>
    countQueued(
      trx,
      queued.map((_, i) => ({ userId: a.id, source: { kind: 'automation_email' as const, automationId: auto.id, scheduleId: schedules[i < 4 ? 0 : 1].id }, n: 1 })),
    ),
  );
  const aref = (i: number) => ({ userId: a.id, deliveryId: queued[i].id, singleSendId: null, automationId: auto.id, email: queued[i].email });
  await events(db, [...[0, 1, 2, 3, 4, 5].map((i) => ({ type: 'delivered' as const, ...aref(i) })), ...[0, 1, 4].map((i) => ({ type: 'opened' as const, ...aref(i) }))]);
  await events(db, [{ type: 'unsubscribed', ...aref(1), data: { group_id: group } }]);

  // Deliverability: a sender whose DKIM record was found missing; a failing webhook; a failed import.
  const senderId = await makeSender(db, a);
  await db('senders').where({ id: senderId }).update({ from_email: `news@dkim-${tag}.test` });
  await db('dkim_keys').insert({
    user_id: a.id,
    domain: `dkim-${tag}.test`,
    selector: `herald${tag}`,
    algorithm: 'rsa-sha256',
    public_key: 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtest',
    private_key: Buffer.from('sealed'),
    state: 'active',
    dns_status: 'missing',
    checks: JSON.stringify({ spf: 'verified', dmarc: 'mismatch' }),
    checked_at: db.fn.now(),
  });
  const [hook] = await db('webhooks')
    .insert({ user_id: a.id, url: s('https://hooks.example.com/herald'), secret: 'whsec_test', failing_since: db.raw(`now() - interval '3 hours'`) })
    .returning('id');
  await db('webhook_deliveries').insert({
    user_id: a.id,
    webhook_id: hook.id,
    msg_id: `msg_${tag}`,
    type: 'delivered',
    event_ids: [1],
    payload: JSON.stringify({}),
    status: 'pending',
    attempt: 2,
    last_status: 500,
    last_error: s('HTTP 500: upstream down'),
  });
  await db('contact_imports').insert({ user_id: a.id, contact_type_id: typeId, file_name: s(`broken-${tag}.csv`), status: 'failed', error: s('The file is not UTF-8'), finished_at: db.fn.now() });
  await db('suppressions').insert([
    { user_id: a.id, email: emails[11], type: 'bounce', reason: s('hard bounce'), diagnostic: bounce.diagnostic, source: 'dsn', single_send_id: send.id },
    { user_id: a.id, email: emails[3], type: 'complaint', reason: 'complaint (abuse)', diagnostic: '', source: 'arf', single_send_id: send.id },
    { user_id: a.id, email: s(`manual.${tag}@example.com`), type: 'manual', reason: s('added by API'), diagnostic: '', source: 'api' },
  ]);

  return {
    typeId,
    contactIds,
    emails,
    send: { id: send.id, utr: send.utr, name, subject, linkUrl },
    oldSend,
    automation: { id: auto.id, utr, emails: schedules },
    bounceEventId: String(problemIds[1]),
    complaintEventId: String(problemIds[2]),
    webhookId: hook.id,
    senderId,
  };
}
