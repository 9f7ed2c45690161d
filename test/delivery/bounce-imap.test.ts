import { ImapFlow } from 'imapflow';
import { BounceMailboxFollower } from '../../src/bounces/imap-follower';
import { createLogger } from '../../src/logger';
import { smtpMailer } from '../../src/mail/mailer';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeDovecot, startDovecot, type Dovecot } from '../helpers/dovecot';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { createSend } from '../helpers/sends';
import { arf, dsn, vacation } from '../helpers/reports';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { runWorker, waitForSend } from '../helpers/worker';

/**
 * The bounce mailbox (BOUNCE_IMAP_URL) end to end, against a real Dovecot: Herald sends a
 * campaign through a real SMTP server; a DSN for one of its messages lands in the mailbox
 * beside mail that is not Herald's business (a person's message, an out-of-office reply to a
 * campaign message, a bounce of someone else's message). The worker's follower suppresses the
 * bounced address — the statistics count it, /events shows it, the next send skips it — and
 * moves only the DSN to the processed folder; the rest stays in INBOX, unread.
 */
// ESP_METADATA_HEADERS: the same messages also show what an ESP would be handed.
const { app, db, config } = setupApp({ WORKER_POLL_MS: '50', BOUNCE_IMAP_POLL_MS: '1000', ESP_METADATA_HEADERS: 'sendgrid,postmark' }, 'bounce_imap');
/** The worker's configuration, completed with the mailbox's URL once Dovecot runs. */
const workerConfig = { ...config };

describeDovecot('bounce mailbox (IMAP)', () => {
  let dovecot: Dovecot;
  let sink: SmtpSink;
  let imap: ImapFlow;
  let a: TestAccount;
  let sender: number;
  let group: number;
  let list: number;

  /** The test's own IMAP connection (to append and to look). */
  async function connectImap(server = dovecot): Promise<ImapFlow> {
    // Plain IMAP, even where the server offers STARTTLS (the TLS server's certificate is the followers' business).
    const client = new ImapFlow({ host: server.host, port: server.port, secure: false, doSTARTTLS: false, auth: { user: server.user, pass: server.password }, logger: false });
    client.on('error', () => undefined); // a kicked connection reports an error; the test reconnects
    await client.connect();
    return client;
  }

  beforeAll(async () => {
    dovecot = await startDovecot();
    sink = await startSmtpSink();
    workerConfig.bounceImapUrl = dovecot.url('INBOX');
    imap = await connectImap();
  });
  const { worker } = runWorker({ config: workerConfig, db, mailer: () => smtpMailer(sink.url, { poolSize: 1 }) });
  afterAll(async () => {
    await imap?.logout().catch(() => undefined);
    await sink?.close();
    await dovecot?.stop();
  });

  beforeAll(async () => {
    a = await makeAccount(db);
    sender = await makeSender(db, a);
    group = await makeGroup(db, a, 'Newsletter');
    list = await makeContactType(db, a, 'Readers');
    await makeContacts(db, a, list, [{ email: 'gone@example.com' }, { email: 'away@example.com' }, { email: 'fine@example.com' }, { email: 'spam@example.com' }]);
  });

  async function send(name: string): Promise<{ utr: string; id: number }> {
    const send = await createSend(app, db, a, { sender, group, list }, { single_send_name: name });
    await waitForSend(db, send.utr);
    return send;
  }

  /** The message `to` got last: its Message-ID, headers, whole text and envelope sender. */
  function sentTo(to: string): { messageId: string; headers: string; raw: string; from: string } {
    const m = [...sink.received].reverse().find((r) => r.to.includes(to));
    if (!m) throw new Error(`nothing was sent to ${to}`);
    const headers = m.raw.split('\r\n\r\n')[0];
    return { messageId: /^Message-ID: (<[^>]+>)/im.exec(headers)![1], headers, raw: m.raw, from: m.from };
  }

  async function inbox(): Promise<Array<{ subject: string; seen: boolean }>> {
    const lock = await imap.getMailboxLock('INBOX');
    try {
      const all = await imap.fetchAll('1:*', { uid: true, envelope: true, flags: true }).catch(() => []);
      return all.map((m) => ({ subject: m.envelope?.subject ?? '', seen: m.flags?.has('\\Seen') ?? false }));
    } finally {
      lock.release();
    }
  }

  async function processed(): Promise<string[]> {
    const folders = await imap.list();
    const done = folders.find((f) => f.path.split(f.delimiter).join('/') === config.bounceImapDoneFolder);
    if (!done) return [];
    const lock = await imap.getMailboxLock(done.path);
    try {
      const all = await imap.fetchAll('1:*', { uid: true, envelope: true }).catch(() => []);
      return all.map((m) => m.envelope?.subject ?? '');
    } finally {
      lock.release();
    }
  }

  const lastUid = async () => Number((await db('bounce_mailboxes').first('last_uid'))?.last_uid ?? 0);

  it('suppresses the address of a DSN for a message Herald sent, moves only that report, and leaves the rest unread in INBOX', async () => {
    const first = await send('November');
    const gone = sentTo('gone@example.com');
    const away = sentTo('away@example.com');
    // Each message names its recipient row to an ESP too: the token of its Message-ID.
    const token = /^<([0-9a-f]{56})@/.exec(gone.messageId)![1];
    expect(gone.headers).toContain(`X-SMTPAPI: {"unique_args":{"herald":"${token}"}}`);
    expect(gone.headers).toContain(`X-PM-Metadata-herald: ${token}`);
    expect(gone.headers).not.toMatch(/X-Mailgun-Variables|X-Herald-Recipient/);

    await imap.append('INBOX', dsn({ to: gone.from, recipient: 'gone@example.com', originalHeaders: gone.headers }));
    await imap.append(
      'INBOX',
      ['From: Friend <friend@example.org>', 'To: bounces@herald.test', 'Subject: Lunch on Friday?', 'Message-ID: <lunch@example.org>', '', 'Are you free?', ''].join('\r\n'),
    );
    await imap.append('INBOX', vacation({ to: away.from, from: 'away@example.com', inReplyTo: away.messageId }));
    await imap.append(
      'INBOX',
      dsn({
        to: 'someone@elsewhere.test',
        recipient: 'stranger@example.net',
        originalHeaders: 'From: someone@elsewhere.test\r\nTo: stranger@example.net\r\nSubject: Hi\r\nMessage-ID: <not-herald@elsewhere.test>',
      }),
    );

    await waitFor('the follower to read all four messages', async () => (await lastUid()) >= 4, { describe: inbox });
    await waitFor('gone@example.com to be suppressed', () => db('suppressions').where({ user_id: a.id, email: 'gone@example.com' }).first());
    expect(await db('suppressions').where({ user_id: a.id }).select('email', 'type', 'source')).toEqual([{ email: 'gone@example.com', type: 'bounce', source: 'imap' }]);

    await waitFor('the DSN in the processed folder', async () => (await processed()).length === 1);
    expect(await processed()).toEqual(['Undelivered Mail Returned to Sender']);
    expect(await inbox()).toEqual([
      { subject: 'Lunch on Friday?', seen: false },
      { subject: 'Out of office: News', seen: false },
      { subject: 'Undelivered Mail Returned to Sender', seen: false },
    ]);

    // The statistics count it and /events shows it.
    expect(await db('single_sends').where({ id: first.id }).first('bounces')).toEqual({ bounces: 1 });
    const events = await api(app, a).get(`/events?single_send_utr=${first.utr}&type=bounced`);
    expect(events.status).toBe(200);
    expect(events.body.message.events).toEqual([
      expect.objectContaining({ type: 'bounced', email: 'gone@example.com', data: expect.objectContaining({ kind: 'hard', status: '5.1.1', source: 'imap' }) }),
    ]);

    // The next send skips the address.
    const before = sink.received.length;
    const second = await send('December');
    const got = sink.received.slice(before).flatMap((m) => m.to);
    expect(got.sort()).toEqual(['away@example.com', 'fine@example.com', 'spam@example.com']);
    const dropped = await db('events').where({ user_id: a.id, single_send_id: second.id, type: 'dropped' }).select('email', 'data');
    expect(dropped).toEqual([{ email: 'gone@example.com', data: expect.objectContaining({ reason: 'bounced' }) }]);
  });

  it('follows new mail as it arrives — a bounce and a complaint — reads each message once, and moves nothing twice', async () => {
    const fine = sentTo('fine@example.com');
    const spam = sentTo('spam@example.com');
    await imap.append('INBOX', dsn({ to: fine.from, recipient: 'fine@example.com', originalHeaders: fine.headers }));
    await imap.append('INBOX', arf({ to: spam.from, recipient: 'spam@example.com', original: spam.raw }));
    await waitFor('fine@example.com to be suppressed', () => db('suppressions').where({ user_id: a.id, email: 'fine@example.com' }).first());
    await waitFor('spam@example.com to be suppressed', () => db('suppressions').where({ user_id: a.id, email: 'spam@example.com' }).first());
    expect(await db('suppressions').where({ user_id: a.id, email: 'spam@example.com' }).first('type', 'source')).toEqual({ type: 'complaint', source: 'imap' });
    await waitFor('the new reports in the processed folder', async () => (await processed()).length === 3);
    // The progress is saved right after the move.
    await waitFor('the last UID read to be 6', async () => (await lastUid()) === 6);
    expect((await inbox()).map((m) => m.subject)).toEqual(['Lunch on Friday?', 'Out of office: News', 'Undelivered Mail Returned to Sender']);
    const state = await db('bounce_mailboxes').first('mailbox', 'uid_validity', 'lease_owner');
    expect(state.mailbox).toBe(`127.0.0.1:${dovecot.port}/${dovecot.user}/INBOX`);
    expect(state.uid_validity).not.toBeNull();
    expect(state.lease_owner).not.toBeNull();
  });

  it('reconnects when the server drops the connection, and carries on from the last UID', async () => {
    const away = sentTo('away@example.com');
    dovecot.kick();
    // The test's own connection was cut too.
    imap = await connectImap();
    await imap.append('INBOX', dsn({ to: away.from, recipient: 'away@example.com', originalHeaders: away.headers }));
    await waitFor('away@example.com to be suppressed', () => db('suppressions').where({ user_id: a.id, email: 'away@example.com' }).first());
    await waitFor('the report in the processed folder', async () => (await processed()).length === 4);
    await waitFor('the last UID read to be 7', async () => (await lastUid()) === 7);
    expect((await inbox()).map((m) => m.subject)).toEqual(['Lunch on Friday?', 'Out of office: News', 'Undelivered Mail Returned to Sender']);
  });

  it('reads the mailbox again when its UIDVALIDITY changes, and changes nothing for what it already applied', async () => {
    const real = await db('bounce_mailboxes').first('uid_validity');
    const before = { suppressions: await db('suppressions').where({ user_id: a.id }).count('* as n').first(), events: await db('events').where({ user_id: a.id }).count('* as n').first() };
    // As after the mailbox was recreated on the server: the stored UIDs mean nothing any more.
    await db('bounce_mailboxes').update({ uid_validity: 1, last_uid: 0 });
    await waitFor('the follower to read the mailbox again', async () => {
      const now = await db('bounce_mailboxes').first('uid_validity', 'last_uid');
      // The highest UID still in INBOX: the reports read before were moved out.
      return String(now.uid_validity) === String(real.uid_validity) && Number(now.last_uid) === 4;
    });
    expect({ suppressions: await db('suppressions').where({ user_id: a.id }).count('* as n').first(), events: await db('events').where({ user_id: a.id }).count('* as n').first() }).toEqual(before);
    expect((await inbox()).map((m) => m.subject)).toEqual(['Lunch on Friday?', 'Out of office: News', 'Undelivered Mail Returned to Sender']);
    expect(await processed()).toHaveLength(4);
  });

  it('lets one worker follow the mailbox at a time: a second one waits on the lease and takes over when the first stops', async () => {
    await makeContacts(db, a, list, [{ email: 'late-1@example.com' }, { email: 'late-2@example.com' }, { email: 'late-3@example.com' }]);
    await send('January');
    const late1 = sentTo('late-1@example.com');
    const late2 = sentTo('late-2@example.com');
    const holder = (await db('bounce_mailboxes').first('lease_owner')).lease_owner;
    // A second worker's follower, as another `herald serve` would run it, with its own log.
    const { said, logger } = capturedLog();
    const second = new BounceMailboxFollower({ db, config: workerConfig, logger });
    second.start();
    try {
      await imap.append('INBOX', dsn({ to: late1.from, recipient: 'late-1@example.com', originalHeaders: late1.headers }));
      await waitFor('late-1@example.com to be suppressed', () => db('suppressions').where({ user_id: a.id, email: 'late-1@example.com' }).first());
      await waitFor('the report in the processed folder', async () => (await processed()).length === 5);
      // Read by the lease holder only: the second follower never connected.
      expect(said).not.toContain('bounce mailbox: following');
      expect((await db('bounce_mailboxes').first('lease_owner')).lease_owner).toBe(holder);

      // The first worker stops and lets go of the lease; the second takes the mailbox over.
      await worker().stop();
      await waitFor('the second follower to take the mailbox', () => said.includes('bounce mailbox: following'), { describe: () => said });
      expect((await db('bounce_mailboxes').first('lease_owner')).lease_owner).not.toBe(holder);
      await imap.append('INBOX', dsn({ to: late2.from, recipient: 'late-2@example.com', originalHeaders: late2.headers }));
      await waitFor('late-2@example.com to be suppressed', () => db('suppressions').where({ user_id: a.id, email: 'late-2@example.com' }).first());
      await waitFor('the report in the processed folder', async () => (await processed()).length === 6);
      // Each report applied once, by one follower.
      expect(await db('events').where({ user_id: a.id, type: 'bounced' }).whereIn('email', ['late-1@example.com', 'late-2@example.com']).count('* as n').first()).toEqual({ n: 2 });
    } finally {
      await second.stop();
    }
    expect(await db('bounce_mailboxes').first('lease_owner')).toEqual({ lease_owner: null });
  });

  describe('over TLS (imaps://)', () => {
    let secure: Dovecot;
    let secureImap: ImapFlow;
    beforeAll(async () => {
      secure = await startDovecot({ tls: true });
      secureImap = await connectImap(secure);
    });
    afterAll(async () => {
      await secureImap?.logout().catch(() => undefined);
      await secure?.stop();
    });

    /** A follower of the TLS server's INBOX, as a worker with these settings runs it. */
    function follower(settings: Partial<typeof workerConfig>): { follower: BounceMailboxFollower; said: string[]; lines: Array<Record<string, unknown>> } {
      const log = capturedLog();
      const f = new BounceMailboxFollower({ db, config: { ...workerConfig, bounceImapUrl: secure.url('INBOX', { secure: true }), ...settings }, logger: log.logger });
      return { follower: f, ...log };
    }

    it('refuses a server whose certificate it cannot verify, and reads nothing', async () => {
      const late3 = sentTo('late-3@example.com');
      await secureImap.append('INBOX', dsn({ to: late3.from, recipient: 'late-3@example.com', originalHeaders: late3.headers }));
      const { follower: f, said, lines } = follower({});
      f.start();
      try {
        await waitFor('a failed connection', () => said.includes('bounce mailbox: connection failed; retrying'), { describe: () => said });
      } finally {
        await f.stop();
      }
      expect(said).not.toContain('bounce mailbox: following');
      const failure = lines.find((l) => l.msg === 'bounce mailbox: connection failed; retrying') as { err: { message: string } };
      expect(failure.err.message).toMatch(/self[- ]signed certificate/i);
      expect(await db('suppressions').where({ user_id: a.id, email: 'late-3@example.com' }).first()).toBeUndefined();
    });

    it('follows it with BOUNCE_IMAP_CA_FILE naming the certificate it trusts', async () => {
      const { follower: f, said } = follower({ bounceImapCaFile: secure.tls!.certFile });
      f.start();
      try {
        await waitFor('late-3@example.com to be suppressed', () => db('suppressions').where({ user_id: a.id, email: 'late-3@example.com' }).first(), { describe: () => said });
        expect(said).toContain('bounce mailbox: following');
        // The progress is saved after the report is applied and moved.
        const key = `127.0.0.1:${secure.tls!.port}/${secure.user}/INBOX`;
        await waitFor('the last UID read to be 1', async () => Number((await db('bounce_mailboxes').where({ mailbox: key }).first('last_uid'))?.last_uid) === 1);
      } finally {
        await f.stop();
      }
    });
  });
});

/** A logger whose lines the test reads: their messages in order, and the lines themselves. */
function capturedLog(): { said: string[]; lines: Array<Record<string, unknown>>; logger: ReturnType<typeof createLogger> } {
  const lines: Array<Record<string, unknown>> = [];
  const said: string[] = [];
  const logger = createLogger('info', {
    write: (line: string) => {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      lines.push(parsed);
      said.push(String(parsed.msg));
    },
  });
  return { said, lines, logger };
}
