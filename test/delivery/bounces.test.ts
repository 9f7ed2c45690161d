import { randomBytes } from 'node:crypto';
import { processInbound } from '../../src/bounces/inbound';
import { startInboundSmtp, type InboundSmtp } from '../../src/bounces/inbound-smtp';
import { createLogger } from '../../src/logger';
import { recipientToken } from '../../src/recipient-token';
import { api, setupApp, type TestAccount } from '../helpers/app';
import { makeContacts, makeContactType } from '../helpers/fixtures';
import { createAutomation, createSend } from '../helpers/sends';
import { arf, dsn, headersOf, remoteMta, vacation, type RemoteMta } from '../helpers/reports';
import type { Received, SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { setupDelivery, waitForSend } from '../helpers/worker';

/**
 * Bounces and complaints end to end, with real servers: Herald's worker sends through an SMTP
 * relay (the sink) with VERP envelope senders; the test, as the remote MTA, reads each
 * message's MAIL FROM and returns DSNs and ARF reports to Herald's inbound SMTP port; then the
 * API shows the suppression, the statistics and the events, and the next send skips the address.
 */
const BOUNCE_DOMAIN = 'bounces.herald.test';
const { app, db, config } = setupApp(
  { RETRY_BASE_MS: '0', WORKER_POLL_MS: '50', BOUNCE_DOMAIN, SOFT_BOUNCE_LIMIT: '2', INBOUND_MAX_BYTES: '200000' },
  'bounces',
);
const ADDRESSES = ['alice@example.com', 'Bob@example.com', 'carol@example.com', 'dave@example.com', 'erin@example.com', 'frank@example.com', 'gina@example.com'];

const rig = setupDelivery({ config, db });
let sink: SmtpSink;
let inbound: InboundSmtp;
let mta: RemoteMta;
let a: TestAccount;
let sender: number;
let group: number;
let list: number;

beforeAll(async () => {
  ({ sink, account: a, sender, group } = rig);
  inbound = await startInboundSmtp({ config, db, logger: createLogger('silent') }, { port: 0, host: '127.0.0.1' });
  mta = remoteMta(inbound.port);
  list = await makeContactType(db, a, 'Bounces');
  await makeContacts(db, a, list, ADDRESSES.map((email) => ({ email, first_name: email.split('@')[0] })));
});

afterAll(async () => {
  mta.close();
  await inbound.close();
});

async function send(name: string): Promise<{ utr: string; id: number; mail: Map<string, Received> }> {
  const before = sink.received.length;
  const { utr, id } = await createSend(app, db, a, { sender, group, list }, { single_send_name: name });
  await waitForSend(db, utr);
  const mail = new Map(sink.received.slice(before).map((m) => [m.to[0].toLowerCase(), m]));
  return { utr, id, mail };
}

const tokenOf = (m: Received) => /^Message-ID: <([0-9a-f]{56})@/im.exec(m.raw)![1];
const messageIdOf = (m: Received) => /^Message-ID: (<[^>]+>)/im.exec(m.raw)![1];

async function eventsOf(email: string, types = ['bounced', 'deferred', 'complained']) {
  return db('events').where({ user_id: a.id, email }).whereIn('type', types).orderBy('id').select('type', 'single_send_id', 'data');
}

async function suppressionOf(email: string) {
  const res = await api(app, a).get(`/suppressions/list?email=${encodeURIComponent(email)}`);
  return res.body.message.suppressions[0] as Record<string, unknown> | undefined;
}

describe('bounces and complaints through real SMTP servers', () => {
  let first: Awaited<ReturnType<typeof send>>;

  beforeAll(async () => {
    // gina's server refuses her at once: a hard bounce at send time (source smtp).
    sink.rcpt = (address) => (address === 'gina@example.com' ? { code: 550, message: '5.1.1 No such user' } : 'accept');
    first = await send('First');
    sink.rcpt = () => 'accept';
  });

  it('sends each message with a VERP envelope sender naming its recipient row; the From header is the sender’s', async () => {
    expect(first.mail.size).toBe(ADDRESSES.length - 1);
    for (const m of first.mail.values()) {
      expect(m.from).toBe(`bounce+${tokenOf(m)}@${BOUNCE_DOMAIN}`);
      expect(m.raw).toMatch(/^From: .*news@acme\.test/im);
    }
  });

  it('a DSN for a hard bounce suppresses the address, counts a bounce, and shows in /events and /suppressions', async () => {
    const m = first.mail.get('alice@example.com')!;
    const answer = await mta.deliver(m.from, dsn({ to: m.from, recipient: 'alice@example.com', originalHeaders: headersOf(m.raw) }));
    expect(answer).toMatch(/^250/);
    const sup = await waitFor('alice suppressed', () => suppressionOf('alice@example.com'));
    expect(sup).toMatchObject({ email: 'alice@example.com', type: 'bounce', source: 'dsn', single_send_utr: first.utr, automation_utr: null, has_message: 1 });
    expect(sup.diagnostic).toContain('5.1.1');
    const raw = (await api(app, a).get(`/suppressions/message?id=${sup.id}`)).body.message.raw as string;
    expect(raw).toContain('Final-Recipient: rfc822; alice@example.com');
    const stats = (await api(app, a).get(`/single/send/stats?utr=${first.utr}`)).body.message;
    // SMTP accepted all of them: delivered stays; the bounce is counted besides.
    expect(stats).toMatchObject({ delivered: ADDRESSES.length - 1, bounces: 2, bounced_hard: 2, bounced_soft: 0 });
    const events = (await api(app, a).get(`/events?type=bounced&email=alice@example.com`)).body.message.events;
    expect(events).toEqual([
      expect.objectContaining({ type: 'bounced', email: 'alice@example.com', single_send_utr: first.utr, data: expect.objectContaining({ kind: 'hard', status: '5.1.1', source: 'dsn' }) }),
    ]);
  });

  it('the same DSN delivered again is applied once', async () => {
    const m = first.mail.get('alice@example.com')!;
    const report = dsn({ to: m.from, recipient: 'alice@example.com', originalHeaders: headersOf(m.raw) });
    expect(await mta.deliver(m.from, report)).toMatch(/^250/);
    expect(await mta.deliver(m.from, report)).toMatch(/^250/);
    expect(await eventsOf('alice@example.com')).toHaveLength(1);
    expect(await db('single_sends').where({ id: first.id }).first('bounces')).toEqual({ bounces: 2 });
  });

  it('a 5xx at send time suppresses too (source smtp)', async () => {
    expect(await suppressionOf('gina@example.com')).toMatchObject({ type: 'bounce', source: 'smtp', has_message: 0, single_send_utr: first.utr });
  });

  it('an ARF complaint (matched by the returned Message-ID) records complained, suppresses and unsubscribes globally', async () => {
    const m = first.mail.get('bob@example.com')!;
    const report = arf({ to: `fbl@${BOUNCE_DOMAIN}`, recipient: 'Bob@example.com', original: m.raw });
    expect(await mta.deliver(`fbl@${BOUNCE_DOMAIN}`, report)).toMatch(/^250/);
    const sup = await waitFor('bob suppressed', () => suppressionOf('bob@example.com'));
    expect(sup).toMatchObject({ type: 'complaint', source: 'arf' });
    expect(await eventsOf('bob@example.com')).toEqual([expect.objectContaining({ type: 'complained', single_send_id: first.id })]);
    const unsubscribers = (await api(app, a).get('/global-unsubscribes')).body.message.unSubscribers;
    expect(unsubscribers.map((u: { email_address: string }) => u.email_address.toLowerCase())).toContain('bob@example.com');
    expect(await db('single_sends').where({ id: first.id }).first('complaints', 'bounces')).toEqual({ complaints: 1, bounces: 2 });
  });

  it('a vacation reply, a forged token, another installation’s token and a report naming another address change nothing', async () => {
    const carol = first.mail.get('carol@example.com')!;
    expect(await mta.deliver(carol.from, vacation({ to: carol.from, from: 'carol@example.com', inReplyTo: messageIdOf(carol) }))).toMatch(/^250/);
    const dave = first.mail.get('dave@example.com')!;
    const token = tokenOf(dave);
    const forged = `bounce+${token.slice(0, 24)}${randomBytes(16).toString('hex')}@${BOUNCE_DOMAIN}`;
    const deliveryId = parseInt(token.slice(0, 16), 16);
    const foreign = `bounce+${recipientToken(randomBytes(32), { deliveryId, userId: a.id })}@${BOUNCE_DOMAIN}`;
    for (const to of [forged, foreign]) expect(await mta.deliver(to, dsn({ to, recipient: 'dave@example.com' }))).toMatch(/^250/);
    // The real token, but the report is about somebody else.
    expect(await mta.deliver(dave.from, dsn({ to: dave.from, recipient: 'mallory@example.com' }))).toMatch(/^250/);
    // Each answer came after its message was processed: nothing to wait for.
    for (const email of ['carol@example.com', 'dave@example.com']) {
      expect(await eventsOf(email)).toEqual([]);
      expect(await suppressionOf(email)).toBeUndefined();
    }
  });

  it('a delayed DSN is a deferred event, not a bounce; a soft bounce is counted, not suppressed', async () => {
    const m = first.mail.get('erin@example.com')!;
    const delayed = dsn({ to: m.from, recipient: 'erin@example.com', action: 'delayed', status: '4.4.7', diagnostic: '421 4.4.7 Try again later' });
    expect(await mta.deliver(m.from, delayed)).toMatch(/^250/);
    const soft = dsn({ to: m.from, recipient: 'erin@example.com', status: '4.2.2', diagnostic: '452 4.2.2 Mailbox full' });
    expect(await mta.deliver(m.from, soft)).toMatch(/^250/);
    expect((await eventsOf('erin@example.com')).map((e) => [e.type, e.data.kind ?? null])).toEqual([
      ['deferred', null],
      ['bounced', 'soft'],
    ]);
    expect(await suppressionOf('erin@example.com')).toBeUndefined();
    expect(await db('single_sends').where({ id: first.id }).first('bounces', 'bounced_soft', 'deferred')).toEqual({ bounces: 3, bounced_soft: 1, deferred: 1 });
  });

  it('refuses recipients of other domains (550) and messages over INBOUND_MAX_BYTES (552)', async () => {
    await expect(mta.deliver('postmaster@example.com', vacation({ to: 'postmaster@example.com', from: 'x@example.com' }))).rejects.toMatchObject({ responseCode: 550 });
    const big = vacation({ to: `x@${BOUNCE_DOMAIN}`, from: 'x@example.com' }) + 'x'.repeat(250_000) + '\r\n';
    await expect(mta.deliver(`x@${BOUNCE_DOMAIN}`, big)).rejects.toMatchObject({ responseCode: 552 });
  });

  it('a bounce from the address a forward led to counts for the address Herald sent to (Original-Recipient)', async () => {
    const m = first.mail.get('frank@example.com')!;
    const report = dsn({ to: m.from, recipient: 'frank.new@elsewhere.example', originalRecipient: 'frank@example.com', status: '4.2.2', diagnostic: '452 4.2.2 Mailbox full' });
    expect(await mta.deliver(m.from, report)).toMatch(/^250/);
    expect(await eventsOf('frank@example.com')).toEqual([expect.objectContaining({ type: 'bounced', data: expect.objectContaining({ kind: 'soft', status: '4.2.2' }) })]);
  });

  it('processInbound from a mailbox (IMAP): handled only for reports about Herald’s messages, source imap', async () => {
    const deps = { config, db, logger: createLogger('silent') };
    const m = first.mail.get('frank@example.com')!;
    // A mailbox has no envelope: the report's own To header carries the VERP address.
    const report = Buffer.from(dsn({ to: m.from, recipient: 'frank@example.com', action: 'delayed', status: '4.4.1', diagnostic: 'connection timed out' }));
    expect(await processInbound(deps, report, { via: 'imap' })).toEqual({ handled: true });
    // Read again: still Herald's report (the follower may move it), applied once.
    expect(await processInbound(deps, report, { via: 'imap' })).toEqual({ handled: true });
    expect(await eventsOf('frank@example.com', ['deferred'])).toEqual([expect.objectContaining({ type: 'deferred', data: expect.objectContaining({ source: 'imap', status: '4.4.1' }) })]);
    const reply = Buffer.from(vacation({ to: m.from, from: 'frank@example.com', inReplyTo: messageIdOf(m) }));
    expect(await processInbound(deps, reply, { via: 'imap' })).toEqual({ handled: false });
    const foreign = Buffer.from(dsn({ to: `bounce+${'ab'.repeat(28)}@${BOUNCE_DOMAIN}`, recipient: 'frank@example.com' }));
    expect(await processInbound(deps, foreign, { via: 'imap' })).toEqual({ handled: false });
    expect(await suppressionOf('frank@example.com')).toBeUndefined();
  });

  describe('the next send', () => {
    let second: Awaited<ReturnType<typeof send>>;

    beforeAll(async () => {
      second = await send('Second');
    });

    it('skips the bounced and the complaining address with dropped events, and mails the others', async () => {
      expect([...second.mail.keys()].sort()).toEqual(['carol@example.com', 'dave@example.com', 'erin@example.com', 'frank@example.com']);
      const dropped = await db('events').where({ user_id: a.id, single_send_id: second.id, type: 'dropped' }).orderBy('email').select('email', 'data');
      expect(dropped).toEqual([
        { email: 'alice@example.com', data: { reason: 'bounced' } },
        { email: 'bob@example.com', data: { reason: 'complained' } },
        { email: 'gina@example.com', data: { reason: 'bounced' } },
      ]);
      expect((await api(app, a).get(`/single/send/stats?utr=${second.utr}`)).body.message).toMatchObject({ triggered: 4, dropped: 3 });
    });

    it('a second soft bounce of the same address within SOFT_BOUNCE_DAYS (limit 2) suppresses it', async () => {
      const m = second.mail.get('erin@example.com')!;
      expect(await mta.deliver(m.from, dsn({ to: m.from, recipient: 'erin@example.com', status: '4.2.2', diagnostic: '452 4.2.2 Mailbox full' }))).toMatch(/^250/);
      expect(await suppressionOf('erin@example.com')).toMatchObject({ type: 'bounce', reason: '2 soft bounces within 30 days', source: 'dsn' });
    });

    // erin is suppressed here too (two soft bounces, just above); the next test lifts it.
    it('an automation skips suppressed addresses too: the contact exits naming why, with a dropped event', async () => {
      const { utr } = await createAutomation(app, db, a, { group, list });
      const email = await api(app, a).form('/automations/schedule/create', {
        utr,
        sender_id: sender,
        subject: 'Drip',
        waiting_period: 1,
        waiting_type: 'instantly',
        template_id: 3,
        preview_img: 'template-welcome.png',
        template_html: '<html><body><p>Hi ((first_name))</p><a href="((unsubscribe_preferences))">prefs</a></body></html>',
      });
      expect(email.body.status).toBe('success');
      expect((await api(app, a).get(`/automations/set-live?utr=${utr}`)).body.status).toBe('success');
      const id = (await db('automations').where({ utr }).first('id')).id as number;
      const dropped = await waitFor('the suppressed contacts to be dropped', async () => {
        const rows = await db('events').where({ user_id: a.id, automation_id: id, type: 'dropped' }).orderBy('email').select('email', 'data');
        return rows.length === 4 ? rows : undefined;
      }, {
        describe: async () => ({
          automation: await db('automations').where({ id }).first('status', 'live_at', 'entry_scanned_at'),
          contacts: await db('automation_contacts').where({ automation_id: id }).select('email', 'state', 'exit_reason', 'next_due_at'),
          events: await db('events').where({ automation_id: id }).select('type', 'email', 'data'),
        }),
      });
      expect(dropped).toEqual([
        { email: 'alice@example.com', data: { reason: 'bounced' } },
        { email: 'bob@example.com', data: { reason: 'complained' } },
        { email: 'erin@example.com', data: { reason: 'bounced' } },
        { email: 'gina@example.com', data: { reason: 'bounced' } },
      ]);
      const contacts = (await api(app, a).get(`/automations/contacts?utr=${utr}`)).body.message.contacts as Array<{ email: string; state: string; exit_reason: string | null }>;
      expect(contacts.filter((c) => c.state === 'exited').map((c) => [c.email.toLowerCase(), c.exit_reason]).sort()).toEqual([
        ['alice@example.com', 'bounced'],
        ['bob@example.com', 'complained'],
        ['erin@example.com', 'bounced'],
        ['gina@example.com', 'bounced'],
      ]);
    });

    it('after lifting a suppression, the address is mailed again', async () => {
      const res = await api(app, a).delete('/suppressions/delete?emails=erin@example.com');
      expect(res.body).toEqual({ status: 'success', message: 'Deleted Successfully' });
      const third = await send('Third');
      expect(third.mail.has('erin@example.com')).toBe(true);
      expect(third.mail.has('alice@example.com')).toBe(false);
      expect(sink.received.filter((r) => r.to[0].toLowerCase() === 'alice@example.com')).toHaveLength(1);
    });
  });
});
