import request from 'supertest';
import type { ParsedMail } from 'mailparser';
import { eventRecord } from '../../src/resources/notifications/notifications.schemas';
import { readTotals } from '../../src/statistics';
import { api, expectShape, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType, makeGroup } from '../helpers/fixtures';
import { createSend as createSendViaApi } from '../helpers/sends';
import type { SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { setupDelivery, waitForSend } from '../helpers/worker';

/**
 * Single sends through the worker as production runs it (started once for the file, every loop
 * and pipelined sending) into a real SMTP server; each test waits for what the worker makes
 * happen.
 */
const { app, db, config } = setupApp({ RETRY_BASE_MS: '0', MAX_ATTEMPTS: '3', WORKER_POLL_MS: '50' }, 'delivery');
const rig = setupDelivery({ config, db });
let sink: SmtpSink;
let a: TestAccount;
let sender: number;
let group: number;
let otherGroup: number;
let list: number;

beforeAll(async () => {
  ({ sink, account: a, sender, group } = rig);
  otherGroup = await makeGroup(db, a, 'Offers');
  list = await makeContactType(db, a);
  const [field] = await db('custom_fields')
    .insert({ user_id: a.id, field_name: 'plan', field_type: 'text' })
    .returning('id');
  await makeContacts(db, a, list, [
    { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', custom_fields: JSON.stringify({ [field.id]: 'gold <vip>' }) },
    { email: 'grace@example.com', first_name: 'Grace', last_name: 'Hopper' },
    { email: 'global@example.com', first_name: 'Gone' },
    { email: 'grouped@example.com', first_name: 'Grouped' },
    { email: 'excluded@example.com', first_name: 'Excluded' },
  ]);
  await db('global_unsubscribers').insert({ user_id: a.id, email_address: 'GLOBAL@example.com' });
  await db('unsubscribe_group_recipients').insert({ user_id: a.id, unsubscribe_groups_id: group, email_address: 'grouped@example.com' });
});

async function createSend(fields: Record<string, unknown> = {}, exclude?: number): Promise<string> {
  const excludeList = exclude ?? (await makeContactType(db, a, 'Exclusions'));
  if (exclude === undefined) await makeContacts(db, a, excludeList, [{ email: 'EXCLUDED@example.com' }]);
  const send = await createSendViaApi(app, db, a, { sender, group, list }, {
    template_html:
      '<html><body><h1>Hello ((first_name))!</h1><p>Your plan: ((plan)). ((unknown_thing))</p><p>From ((sender_name)), ((sender_address))</p></body></html>',
    single_send_name: 'November news',
    subject: 'News for ((first_name))',
    preheader: 'Hi ((first_name)), this month…',
    exclude_specific_recipient_id: [`contacts_${excludeList}`],
    ...fields,
  });
  return send.utr;
}

async function canary(): Promise<void> {
  const list = await makeContactType(db, a, 'Canary');
  await makeContacts(db, a, list, [{ email: `canary-${list}@example.com` }]);
  await waitForSend(db, await createSend({ recipient_id: [`contacts_${list}`], single_send_name: 'Canary' }));
}

async function details(utr: string) {
  const res = await api(app, a).get(`/single-send/details?utr=${utr}`);
  expectSuccess(res);
  return res.body.message.singleSend[0];
}

/** A header exactly as received (mailparser folds List-* headers into objects). */
function header(mail: ParsedMail, name: string): string {
  const line = mail.headerLines.find((h) => h.key === name.toLowerCase())?.line ?? '';
  return line.slice(line.indexOf(':') + 1).trim();
}

describe('a single send, delivered through a real SMTP server', () => {
  let utr: string;
  let mails: Map<string, ParsedMail[]>;

  beforeAll(async () => {
    utr = await createSend();
    await waitForSend(db, utr);
    mails = await sink.byRecipient();
  });

  it('reaches exactly the audience: minus exclusions, global unsubscribers and the group’s recipients', () => {
    expect([...mails.keys()].sort()).toEqual(['ada@example.com', 'grace@example.com']);
    for (const list of mails.values()) expect(list).toHaveLength(1);
  });

  it('personalises subject, HTML (escaped) and text, with the sender, footer, preheader and pixel', () => {
    const [mail] = mails.get('ada@example.com')!;
    expect(mail.subject).toBe('News for Ada');
    expect(mail.from!.value[0]).toEqual({ name: 'Acme News', address: 'news@acme.test' });
    expect(mail.replyTo!.text).toBe('reply@acme.test');
    expect(mail.html).toContain('<h1>Hello Ada!</h1>');
    expect(mail.html).toContain('Your plan: gold &#60;vip&#62;.');
    expect(mail.html).not.toContain('((');
    expect(mail.html).toContain('Hi Ada, this month');
    expect(mail.html).toContain('1 High Street');
    expect(mail.html).toMatch(/<img src="http:\/\/herald\.test\/t\/open\/[a-f0-9]{56}\.gif"/);
    expect(mail.html).toMatch(/href="http:\/\/herald\.test\/unsubscribe\/[a-f0-9]{56}"/);
    expect(mail.text).toContain('Hello Ada!');
    expect(mail.text).toContain('Your plan: gold <vip>.');
    expect(mail.text).toMatch(/http:\/\/herald\.test\/unsubscribe\/[a-f0-9]{56}/);
  });

  it('carries Message-ID and RFC 8058 List-Unsubscribe headers', () => {
    const [mail] = mails.get('grace@example.com')!;
    const token = /^<([a-f0-9]{56})@acme\.test>$/.exec(header(mail, 'message-id'))![1];
    // One token for the Message-ID and every link of the message.
    expect(header(mail, 'list-unsubscribe')).toBe(`<http://herald.test/unsubscribe/${token}>`);
    expect(mail.html).toContain(`/t/open/${token}.gif`);
    expect(header(mail, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
  });

  it('completes with statistics', async () => {
    const s = await details(utr);
    expect(s).toMatchObject({ status: 3, triggered: 2, delivered: 2, bounces: 0, unique_opens: 0, unsubscribes: 0 });
    expect(s.sent_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    // Its hours count the same: fan-out counts the rows it queued there too (the rollup an account's window adds up).
    const { id } = await db('single_sends').where({ utr }).first('id');
    expect(await readTotals(db, a.id, { owner: { kind: 'single_send', id } })).toMatchObject({ triggered: 2, delivered: 2 });
  });

  it('counts opens: total per load, unique once per recipient; unknown tokens still get the GIF', async () => {
    const [mail] = mails.get('ada@example.com')!;
    const pixel = /\/t\/open\/([a-f0-9]{56})\.gif/.exec(mail.html as string)![0];
    for (let i = 0; i < 3; i++) {
      const res = await request(app).get(pixel);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('image/gif');
    }
    const unknown = await request(app).get('/t/open/ffffffffffffffffffffffffffffffff.gif');
    expect(unknown.status).toBe(200);
    expect((await request(app).get('/t/open/garbage')).status).toBe(200);
    // Another recipient's token with one digit of its id changed: the signature no longer fits.
    const [grace] = mails.get('grace@example.com')!;
    const forged = /\/t\/open\/([a-f0-9]{56})\.gif/.exec(grace.html as string)![1].replace(/^(.{15})(.)/, (_, p, d) => p + (d === '0' ? '1' : '0'));
    expect((await request(app).get(`/t/open/${forged}.gif`)).status).toBe(200);
    const s = await details(utr);
    expect(s).toMatchObject({ total_opens: 3, unique_opens: 1 });
    expect(s.unique_open_token).toEqual({ 'ada@example.com': /\/t\/open\/([a-f0-9]{56})\.gif/.exec(mail.html as string)![1] });
  });

  it('honours one-click unsubscribe: the address joins the group, the count rises, the next send skips it', async () => {
    const [mail] = mails.get('grace@example.com')!;
    const link = /\/unsubscribe\/[a-f0-9]{56}/.exec(header(mail, 'list-unsubscribe'))![0];
    const res = await request(app).post(link).type('form').send('List-Unsubscribe=One-Click');
    expect(res.status).toBe(200);
    const again = await request(app).post(link).type('form').send('List-Unsubscribe=One-Click');
    expect(again.status).toBe(200);
    expect((await details(utr)).unsubscribes).toBe(1);
    const rows = await db('unsubscribe_group_recipients').where({ unsubscribe_groups_id: group }).pluck('email_address');
    expect(rows).toContain('grace@example.com');
    sink.received.length = 0;
    const next = await createSend();
    await waitForSend(db, next);
    expect(sink.received.map((m) => m.to[0]).sort()).toEqual(['ada@example.com']);
    expect((await details(next)).triggered).toBe(1);
  });

  it('sends to another group’s unsubscribers (groups are separate)', async () => {
    sink.received.length = 0;
    await waitForSend(db, await createSend({ unsubscribe_group_id: otherGroup }));
    expect(sink.received.map((m) => m.to[0]).sort()).toEqual(['ada@example.com', 'grace@example.com', 'grouped@example.com']);
  });
});

describe('scheduling and states', () => {
  it('a scheduled send waits for its time, then goes out', async () => {
    sink.received.length = 0;
    const tomorrow = new Date(Date.now() + 86_400_000);
    const utr = await createSend({
      schedule_type: 1,
      schedule_date: tomorrow.toISOString().slice(0, 10),
      schedule_time: '09:30',
    });
    await canary();
    expect(sink.received.filter((m) => !m.to[0].startsWith('canary-'))).toHaveLength(0);
    const s = await details(utr);
    expect(s).toMatchObject({ status: 1, schedule_type: 1, schedule_time: '09:30:00', schedule_date: tomorrow.toISOString().slice(0, 10) });
    await db('single_sends').where({ utr }).update({ due_at: db.raw("now() - interval '1 second'") });
    await waitForSend(db, utr);
    // (Grace left the group's mail in the one-click test above.)
    expect(sink.received.map((m) => m.to[0]).filter((to) => !to.startsWith('canary-'))).toEqual(['ada@example.com']);
  });

  it('a duplicate is a draft (status 0) that nothing sends until it is updated', async () => {
    const utr = await createSend({ schedule_type: 1, schedule_date: '2099-01-01', schedule_time: '00:00:00' });
    expectSuccess(await api(app, a).get(`/single/send/duplicate?utr=${utr}`), 'Duplicated Successfully');
    const copy = (await api(app, a).get('/single-send/list')).body.message.singleSends[0];
    expect(copy).toMatchObject({ status: 0, single_send_name: 'November news (copy)', triggered: 0, delivered: 0 });
    sink.received.length = 0;
    await db('single_sends').where({ utr: copy.utr }).update({ due_at: db.raw("now() - interval '1 second'") });
    await canary();
    expect(sink.received.filter((m) => !m.to[0].startsWith('canary-'))).toHaveLength(0);
    expect((await details(copy.utr)).status).toBe(0);
  });

  it('update is refused once sending has started, and delete stops the messages not yet sent', async () => {
    const utr = await createSend();
    await waitForSend(db, utr);
    const res = await api(app, a).form('/single/send/update', {
      utr,
      template_id: 1,
      sender_id: sender,
      unsubscribe_group_id: group,
      single_send_name: 'x',
      subject: 'x',
      preheader: 'x',
      recipient_id: [`contacts_${list}`],
      schedule_type: 0,
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ status: 'failed', errors: 'Single send can not be updated once sending has started' });
    // Its messages back in the queue, waiting for a retry an hour away (as after a 4xx), the
    // send running again; then the send is deleted: they are cancelled, never sent.
    const send = await db('single_sends').where({ utr }).first('id');
    await db('single_sends').where({ id: send.id }).update({ status: 2 });
    await db('deliveries')
      .where({ single_send_id: send.id })
      .update({ status: 'queued', next_attempt_at: db.raw("now() + interval '1 hour'") });
    expectSuccess(await api(app, a).delete(`/single/send/delete?utr=${utr}`), 'Deleted Successfully');
    const statuses = await db('deliveries').where({ single_send_id: send.id }).distinct().pluck('status');
    expect(statuses).toEqual(['cancelled']);
    await db('deliveries').where({ single_send_id: send.id }).update({ next_attempt_at: db.raw("now() - interval '1 second'") });
    sink.received.length = 0;
    await canary();
    expect(sink.received.map((m) => m.to[0])).toEqual([expect.stringMatching(/^canary-/)]);
  });
});

describe('SMTP failures', () => {
  it('retries a 4xx answer and delivers later; counts a 5xx as a bounce and never retries it', async () => {
    const bounceList = await makeContactType(db, a, 'Failures');
    await makeContacts(db, a, bounceList, [{ email: 'later@example.com' }, { email: 'nobody@example.com' }, { email: 'fine@example.com' }]);
    let tempFailures = 0;
    let permanent = 0;
    sink.rcpt = (address) => {
      if (address === 'later@example.com' && tempFailures < 1) {
        tempFailures += 1;
        return { code: 451, message: 'Try again later' };
      }
      if (address === 'nobody@example.com') {
        permanent += 1;
        return { code: 550, message: 'No such user' };
      }
      return 'accept';
    };
    sink.received.length = 0;
    const utr = await createSend({ recipient_id: [`contacts_${bounceList}`] });
    await waitForSend(db, utr);
    sink.rcpt = () => 'accept';
    expect(sink.received.map((m) => m.to[0]).sort()).toEqual(['fine@example.com', 'later@example.com']);
    expect(tempFailures).toBe(1);
    expect(permanent).toBe(1);
    expect(await details(utr)).toMatchObject({ status: 3, triggered: 3, delivered: 2, bounces: 1 });
    const bounced = await db('deliveries').where({ email: 'nobody@example.com' }).first();
    expect(bounced).toMatchObject({ status: 'bounced', attempts: 1 });
    expect(bounced.last_error).toMatch(/No such user/);
  });

  it('gives up after MAX_ATTEMPTS temporary failures and counts a bounce', async () => {
    const stuckList = await makeContactType(db, a, 'Stuck');
    await makeContacts(db, a, stuckList, [{ email: 'stuck@example.com' }]);
    sink.rcpt = (address) => (address === 'stuck@example.com' ? { code: 421, message: 'Busy' } : 'accept');
    const utr = await createSend({ recipient_id: [`contacts_${stuckList}`] });
    await waitForSend(db, utr);
    sink.rcpt = () => 'accept';
    const row = await db('deliveries').where({ email: 'stuck@example.com' }).first();
    expect(row).toMatchObject({ status: 'failed', attempts: 3 });
    expect(await details(utr)).toMatchObject({ status: 3, delivered: 0, bounces: 1 });
  });
});

describe('notifications', () => {
  it('mails the account’s notification recipients when a send starts and completes (with statistics), and keeps the events', async () => {
    expectSuccess(await api(app, a).form('/notification-recipient/save', { email_address: 'boss@acme.test', email_owner: 'Boss' }));
    sink.received.length = 0;
    const utr = await createSend({ single_send_name: 'Notified send' });
    await waitForSend(db, utr);
    // The completion notice goes out right after the status changes.
    await waitFor('the completion notice', () => sink.received.filter((m) => m.to[0] === 'boss@acme.test').length === 2, { timeoutMs: 5000, describe: async () => [sink.received.map((m) => m.to), await db('outbox_jobs').where({ user_id: a.id }).select('event_id', 'status', 'done_count', 'last_error'), await db('notification_recipients').select()] });
    const mails = (await sink.byRecipient()).get('boss@acme.test') ?? [];
    const subjects = mails.map((m) => m.subject);
    expect(subjects).toEqual(['[Herald] Single send “Notified send” started', '[Herald] Single send “Notified send” completed']);
    expect(mails[1].text).toMatch(/delivered\s+\d+/);
    expect(mails[1].text).toContain(utr);
    // The worker records the mailing after the SMTP server has answered, so the sink can see the mail first.
    const events = await waitFor('the completion notice recorded as mailed', async () => {
      const latest = (await api(app, a).get('/notification-events')).body.message.events;
      return latest[0]?.notified === 1 ? latest : undefined;
    });
    expect(events.slice(0, 2).map((e: { type: string }) => e.type)).toEqual(['single_send.completed', 'single_send.started']);
    expect(events[0]).toMatchObject({ notified: 1, notify_error: null, payload: { utr, single_send: 'Notified send' } });
    expectShape(eventRecord, events[0]);
    // Recorded with the send: its events filter finds them beside its message events.
    const ofSend = (await api(app, a).get(`/events?single_send_utr=${utr}&type=single_send.started,single_send.completed`)).body.message.events;
    expect(ofSend.map((e: { type: string; single_send_utr: string }) => [e.type, e.single_send_utr])).toEqual([
      ['single_send.started', utr],
      ['single_send.completed', utr],
    ]);
    await db('notification_recipients').where({ user_id: a.id }).delete();
  });
});
