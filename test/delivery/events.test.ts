import request from 'supertest';
import { purgeEvents } from '../../src/events/retention';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType } from '../helpers/fixtures';
import { createSend as createSendViaApi } from '../helpers/sends';
import type { SmtpSink, Verdict } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { setupDelivery, waitForSend } from '../helpers/worker';

/**
 * Every fact recorded once (src/events/record.ts), against what a real SMTP server saw: the
 * worker's outcomes (delivered, deferred, bounced), opens, unsubscribes, the statistics made
 * from them, and account events whose notices the worker mails (src/events/notification-mail.ts).
 */
const { app, db, config } = setupApp({ RETRY_BASE_MS: '0', MAX_ATTEMPTS: '3', NOTIFICATION_RETRY_BASE_MS: '0', WORKER_POLL_MS: '50' }, 'events');
// A long socket timeout: a notice held by the sink stays held until the test lets it go.
const rig = setupDelivery({ config, db }, { socketTimeoutMs: 600_000 });
let sink: SmtpSink;
let a: TestAccount;
let sender: number;
let group: number;
beforeAll(() => {
  ({ sink, account: a, sender, group } = rig);
});

async function createSend(list: number, name: string): Promise<string> {
  return (await createSendViaApi(app, db, a, { sender, group, list }, { single_send_name: name })).utr;
}

async function eventsOf(where: Record<string, unknown>) {
  return db('events').where({ user_id: a.id, ...where }).orderBy('id').select('type', 'email', 'single_send_id', 'automation_id', 'delivery_id', 'data');
}

/** The recipient's token: the Message-ID's local part, the same as in every link of the message. */
function tokenOf(raw: string): string {
  return /^Message-ID: <([a-f0-9]{56})@/im.exec(raw)![1];
}

describe('message events', () => {
  let utr: string;
  let sendId: number;

  beforeAll(async () => {
    const list = await makeContactType(db, a, 'Outcomes');
    await makeContacts(db, a, list, [
      { email: 'Ok-One@Example.com' },
      { email: 'ok-two@example.com' },
      { email: 'hard@example.com' },
      { email: 'slow@example.com' },
    ]);
    sink.rcpt = (address) =>
      address === 'hard@example.com'
        ? { code: 550, message: '5.1.1 No such user' }
        : address === 'slow@example.com'
          ? { code: 451, message: '4.2.2 Try later' }
          : 'accept';
    utr = await createSend(list, 'Outcomes');
    await waitForSend(db, utr);
    sink.rcpt = () => 'accept';
    sendId = (await db('single_sends').where({ utr }).first('id')).id;
  });

  it('records one delivered per message the SMTP server accepted, a hard bounce for a 5xx, deferrals then a soft bounce for a 4xx', async () => {
    const accepted = sink.received.filter((m) => m.to[0].endsWith('@example.com') && /^ok-/i.test(m.to[0]));
    expect(accepted.map((m) => m.to[0].toLowerCase()).sort()).toEqual(['ok-one@example.com', 'ok-two@example.com']);
    const events = await eventsOf({ single_send_id: sendId });
    const delivered = events.filter((e) => e.type === 'delivered');
    // Lower-cased, one each, naming their recipient rows.
    expect(delivered.map((e) => e.email).sort()).toEqual(['ok-one@example.com', 'ok-two@example.com']);
    expect(new Set(delivered.map((e) => e.delivery_id)).size).toBe(2);
    expect(events.filter((e) => e.type === 'bounced')).toEqual([
      expect.objectContaining({ email: 'hard@example.com', data: { kind: 'hard', status: '5.1.1', smtp_code: 550, source: 'smtp', diagnostic: expect.stringContaining('No such user') } }),
      expect.objectContaining({ email: 'slow@example.com', data: { kind: 'soft', status: '4.2.2', smtp_code: 451, source: 'smtp', diagnostic: expect.stringContaining('Try later') } }),
    ]);
    // MAX_ATTEMPTS 3: two temporary failures were retried, the third gave up.
    expect(events.filter((e) => e.type === 'deferred')).toEqual([
      expect.objectContaining({ email: 'slow@example.com', data: { status: '4.2.2', smtp_code: 451, source: 'smtp', diagnostic: expect.stringContaining('Try later') } }),
      expect.objectContaining({ email: 'slow@example.com', data: { status: '4.2.2', smtp_code: 451, source: 'smtp', diagnostic: expect.stringContaining('Try later') } }),
    ]);
    expect(events.every((e) => e.automation_id === null)).toBe(true);
    // The spec's counters, Herald's own and GET /events are made from the same events.
    expect(await db('single_sends').where({ id: sendId }).first('delivered', 'bounces')).toEqual({ delivered: 2, bounces: 2 });
    const stats = (await api(app, a).get(`/single/send/stats?utr=${utr}`)).body.message;
    expect(stats).toMatchObject({ delivered: 2, bounces: 2, bounced_hard: 1, bounced_soft: 1, deferred: 2, dropped: 0 });
    expect(stats.timeline.reduce((n: number, h: { delivered: number }) => n + h.delivered, 0)).toBe(2);
    const listed = (await api(app, a).get(`/events?single_send_utr=${utr}&type=delivered`)).body.message;
    expect(listed.events.map((e: { email: string }) => e.email).sort()).toEqual(['ok-one@example.com', 'ok-two@example.com']);
  });

  it('records an opened event per pixel load; the first per recipient is a unique open', async () => {
    const mail = sink.received.find((m) => m.to[0].toLowerCase() === 'ok-one@example.com')!;
    const token = tokenOf(mail.raw);
    for (let i = 0; i < 3; i++) expect((await request(app).get(`/t/open/${token}.gif`)).status).toBe(200);
    const opened = await eventsOf({ single_send_id: sendId, type: 'opened' });
    expect(opened).toHaveLength(3);
    expect(opened[0]).toMatchObject({ email: 'ok-one@example.com', data: {} });
    expect(await db('single_sends').where({ id: sendId }).first('total_opens', 'unique_opens')).toEqual({ total_opens: 3, unique_opens: 1 });
    // An unknown token records nothing (and still gets the GIF).
    expect((await request(app).get('/t/open/ffffffffffffffffffffffffffffffff.gif')).status).toBe(200);
    expect(await eventsOf({ single_send_id: sendId, type: 'opened' })).toHaveLength(3);
  });

  it('records one unsubscribed event per message, however often its link is used', async () => {
    const mail = sink.received.find((m) => m.to[0] === 'ok-two@example.com')!;
    const token = tokenOf(mail.raw);
    for (let i = 0; i < 2; i++) {
      const res = await request(app).post(`/unsubscribe/${token}`).type('form').send('List-Unsubscribe=One-Click');
      expect(res.status).toBe(200);
    }
    expect(await eventsOf({ single_send_id: sendId, type: 'unsubscribed' })).toEqual([
      expect.objectContaining({ email: 'ok-two@example.com', data: { group_id: group } }),
    ]);
    expect(await db('single_sends').where({ id: sendId }).first('unsubscribes')).toEqual({ unsubscribes: 1 });
  });
});

describe('suppression', () => {
  it('writes a suppressed recipient as a dropped row and a dropped event with its reason, and sends it nothing', async () => {
    const list = await makeContactType(db, a, 'Suppressed');
    await makeContacts(db, a, list, [{ email: 'kept@example.com' }, { email: 'Global-Out@example.com' }, { email: 'group-out@example.com' }]);
    await db('global_unsubscribers').insert({ user_id: a.id, email_address: 'global-out@EXAMPLE.com' });
    await db('unsubscribe_group_recipients').insert({ user_id: a.id, unsubscribe_groups_id: group, email_address: 'group-out@example.com' });
    const before = sink.received.length;
    const utr = await createSend(list, 'Suppressed');
    const send = await waitForSend(db, utr);
    expect(sink.received.slice(before).map((m) => m.to[0])).toEqual(['kept@example.com']);
    expect(send).toMatchObject({ triggered: 1, delivered: 1, bounces: 0 });
    const rows = await db('deliveries').where({ single_send_id: send.id }).orderBy('email').select('email', 'status', 'last_error');
    expect(rows).toEqual([
      { email: 'Global-Out@example.com', status: 'dropped', last_error: 'unsubscribed' },
      { email: 'group-out@example.com', status: 'dropped', last_error: 'group_unsubscribed' },
      { email: 'kept@example.com', status: 'sent', last_error: null },
    ]);
    const dropped = await eventsOf({ single_send_id: send.id, type: 'dropped' });
    expect(dropped.map((e) => [e.email, e.data])).toEqual([
      ['global-out@example.com', { reason: 'unsubscribed' }],
      ['group-out@example.com', { reason: 'group_unsubscribed' }],
    ]);
    expect(dropped.every((e) => e.delivery_id !== null)).toBe(true);
  });

  it('suppresses an address its server kept refusing for now (4xx until out of attempts) SOFT_BOUNCE_LIMIT times', async () => {
    const list = await makeContactType(db, a, 'Soft');
    await makeContacts(db, a, list, [{ email: 'full-box@example.com' }, { email: 'fine@example.com' }]);
    sink.rcpt = (address) => (address === 'full-box@example.com' ? { code: 452, message: 'Mailbox full' } : 'accept');
    config.softBounceLimit = 2;
    try {
      const first = await waitForSend(db, await createSend(list, 'Soft 1'));
      expect(first).toMatchObject({ delivered: 1, bounces: 1 });
      expect(await db('suppressions').where({ user_id: a.id, email: 'full-box@example.com' }).first()).toBeUndefined();
      await waitForSend(db, await createSend(list, 'Soft 2'));
      const suppression = await db('suppressions').where({ user_id: a.id, email: 'full-box@example.com' }).first('type', 'source', 'reason');
      expect(suppression).toEqual({ type: 'bounce', source: 'smtp', reason: '2 soft bounces within 30 days' });
      const before = sink.received.length;
      const third = await waitForSend(db, await createSend(list, 'Soft 3'));
      expect(sink.received.slice(before).map((m) => m.to[0])).toEqual(['fine@example.com']);
      expect(await eventsOf({ single_send_id: third.id, type: 'dropped' })).toMatchObject([{ email: 'full-box@example.com', data: { reason: 'bounced' } }]);
    } finally {
      config.softBounceLimit = 3;
      sink.rcpt = () => 'accept';
    }
  });
});

describe('account events and their notices', () => {
  beforeAll(async () => {
    expectSuccess(await api(app, a).form('/notification-recipient/save', { email_address: 'boss@acme.test', email_owner: 'Boss' }));
  });

  it('mails the import notice from the worker once the import completes', async () => {
    const list = await makeContactType(db, a, 'Imported');
    const res = await request(app)
      .post('/contacts/upload-csv')
      .set(a.headers)
      .field('contact_type_id', String(list))
      .attach('file', Buffer.from('email,first_name\nnew-1@example.com,One\nnew-2@example.com,Two\n'), 'people.csv');
    expect(res.body).toEqual({ status: 'success', message: 'Imported Successfully' });
    const notice = await waitFor('the import notice', async () =>
      (await sink.byRecipient()).get('boss@acme.test')?.find((m) => /Contacts imported/.test(String(m.subject))),
    );
    expect(notice.subject).toBe('[Herald] Contacts imported: people.csv');
    expect(notice.text).toMatch(/inserted\s+2/);
    // The worker records the mailing after the SMTP server has answered, so the sink can see the mail first.
    const event = await waitFor('the import notice recorded as mailed', async () => {
      const [latest] = (await api(app, a).get('/notification-events')).body.message.events;
      return latest?.notified === 1 ? latest : undefined;
    });
    expect(event).toMatchObject({ type: 'contacts.imported', notified: 1, notify_error: null, payload: { file_name: 'people.csv', inserted: 2 } });
  });

  it('retries a notice the SMTP server refused for now, and mails each recipient once', async () => {
    expectSuccess(await api(app, a).form('/notification-recipient/save', { email_address: 'deputy@acme.test', email_owner: 'Deputy' }));
    let refusals = 0;
    sink.rcpt = (address) => (address === 'deputy@acme.test' && refusals++ < 1 ? { code: 450, message: 'Mailbox busy' } : 'accept');
    const before = sink.received.length;
    const list = await makeContactType(db, a, 'Retry');
    const res = await request(app)
      .post('/contacts/upload-csv')
      .set(a.headers)
      .field('contact_type_id', String(list))
      .attach('file', Buffer.from('email\nretry@example.com\n'), 'retry.csv');
    expectSuccess(res);
    await waitFor('the job done', async () => (await db('outbox_jobs').where({ user_id: a.id }).orderBy('id', 'desc').first())?.status === 'done');
    sink.rcpt = () => 'accept';
    const notices = sink.received.slice(before).filter((m) => m.raw.includes('retry.csv'));
    expect(notices.map((m) => m.to[0]).sort()).toEqual(['boss@acme.test', 'deputy@acme.test']);
    const job = await db('outbox_jobs').where({ user_id: a.id }).orderBy('id', 'desc').first('attempts', 'done_count', 'last_error', 'payload');
    expect(job).toEqual({ attempts: 2, done_count: 2, last_error: null, payload: { to: [] } });
    await db('notification_recipients').where({ user_id: a.id, email_address: 'deputy@acme.test' }).delete();
  });

  it('holds up no send while the SMTP server is slow to take a notice', async () => {
    const list = await makeContactType(db, a, 'Held');
    await makeContacts(db, a, list, [{ email: 'held@example.com' }]);
    // The sink does not answer the first notice's RCPT TO until the test lets it.
    let release: () => void = () => undefined;
    const held = new Promise<Verdict>((resolve) => (release = () => resolve('accept')));
    let holding = false;
    sink.rcpt = (address) => (address === 'boss@acme.test' && !holding ? ((holding = true), held) : 'accept');
    try {
      const first = await createSend(list, 'Held 1');
      await waitFor('the first notice to be held by the SMTP server', () => holding);
      // Meanwhile another send starts, is written, sent and completed.
      const second = await createSend(list, 'Held 2');
      await waitForSend(db, first);
      await waitForSend(db, second);
      expect(sink.received.filter((m) => m.to[0] === 'held@example.com')).toHaveLength(2);
    } finally {
      release();
      sink.rcpt = () => 'accept';
    }
    // Let go, the held notice and those queued behind it all arrive.
    const notices = await waitFor('the four notices of both sends', async () => {
      const subjects = ((await sink.byRecipient()).get('boss@acme.test') ?? []).map((m) => String(m.subject)).filter((x) => /Held [12]/.test(x));
      return subjects.length === 4 ? subjects : undefined;
    });
    expect(notices.sort()).toEqual([
      '[Herald] Single send “Held 1” completed',
      '[Herald] Single send “Held 1” started',
      '[Herald] Single send “Held 2” completed',
      '[Herald] Single send “Held 2” started',
    ]);
  });
});

describe('retention', () => {
  it('purges events older than EVENTS_RETENTION_DAYS, and only those', async () => {
    const b = await makeAccount(db);
    await db('events').insert([
      { user_id: b.id, type: 'delivered', email: 'old@example.com', occurred_at: db.raw("now() - interval '181 days'") },
      { user_id: b.id, type: 'delivered', email: 'new@example.com', occurred_at: db.raw("now() - interval '179 days'") },
    ]);
    await purgeEvents(db, 180, 1);
    expect(await db('events').where({ user_id: b.id }).pluck('email')).toEqual(['new@example.com']);
  });
});
