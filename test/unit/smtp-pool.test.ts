import net, { type AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { classifySmtpError, smtpMailer } from '../../src/mail/mailer';
import fc from 'fast-check';
import DataStream from 'nodemailer/lib/smtp-connection/data-stream';
import { dkimSignatureLine } from '../../src/dkim/sign';
import { buildMessage } from '../../src/mail/mime';
import { envelopeFor, sendsAsItStands, SmtpPool, writeData, type SmtpFailure } from '../../src/mail/smtp-pool';
import { testDkimKey } from '../helpers/dkim-key';

/**
 * Herald's SMTP pool (src/mail/smtp-pool.ts) against a real in-process server: what the server
 * receives, how many connections it sees, and what happens when it refuses, closes or needs a
 * login. The delivery and fault suites drive the same pool through whole sends.
 */

interface Seen {
  from: string;
  to: string[];
  raw: string;
  /** The connection (smtp-server's session id) the message came on. */
  session: string;
}

interface TestServer {
  port: number;
  messages: Seen[];
  /** Connections opened, in order. */
  connections: string[];
  /** Connections open at once, at most. */
  peak: number;
  close(): Promise<void>;
}

async function startServer(options: Partial<SMTPServerOptions> = {}, host = '127.0.0.1'): Promise<TestServer> {
  const messages: Seen[] = [];
  const connections: string[] = [];
  let open = 0;
  const state = { peak: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    closeTimeout: 100,
    onConnect(session, callback) {
      connections.push(session.id);
      open += 1;
      state.peak = Math.max(state.peak, open);
      callback();
    },
    onClose() {
      open -= 1;
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
          session: session.id,
        });
        callback();
      });
    },
    ...options,
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  return Object.assign(state, {
    port: (server.server.address() as AddressInfo).port,
    messages,
    connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

function poolFor(port: number, extra: Partial<ConstructorParameters<typeof SmtpPool>[0]> = {}): SmtpPool {
  return new SmtpPool({ host: '127.0.0.1', port, secure: false, size: 3, connectionTimeout: 2_000, greetingTimeout: 2_000, socketTimeout: 5_000, ...extra });
}

const message = (n: number) => `From: a@herald.test\r\nTo: r${n}@example.com\r\nSubject: ${n}\r\n\r\nline one\r\n.starts with a dot\r\n..two dots\r\nend\r\n`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SmtpPool', () => {
  let server: TestServer | undefined;
  let pool: SmtpPool | undefined;
  afterEach(async () => {
    pool?.close();
    pool = undefined;
    await server?.close();
    server = undefined;
  });

  it('delivers the bytes and envelope as given, over at most `size` connections kept open between messages', async () => {
    server = await startServer();
    pool = poolFor(server.port, { size: 3 });
    await Promise.all(Array.from({ length: 30 }, (_, n) => pool!.send('bounce@herald.test', `r${n}@example.com`, message(n))));
    expect(server.messages).toHaveLength(30);
    for (let n = 0; n < 30; n++) {
      const m = server.messages.find((x) => x.to[0] === `r${n}@example.com`)!;
      expect(m).toMatchObject({ from: 'bounce@herald.test', to: [`r${n}@example.com`], raw: message(n) });
    }
    expect(server.connections).toHaveLength(3);
    expect(server.peak).toBe(3);
    // Later messages reuse the open connections.
    await pool.send('bounce@herald.test', 'later@example.com', message(99));
    expect(server.connections).toHaveLength(3);
  });

  it('a refused recipient fails that message only; the connection goes on after RSET', async () => {
    server = await startServer({
      onRcptTo(address, _session, callback) {
        if (address.address.startsWith('gone')) return callback(Object.assign(new Error('5.1.1 No such user'), { responseCode: 550 }));
        if (address.address.startsWith('busy')) return callback(Object.assign(new Error('4.2.1 Try later'), { responseCode: 451 }));
        callback();
      },
    });
    pool = poolFor(server.port, { size: 1 });
    await pool.send('b@herald.test', 'one@example.com', message(1));
    const gone = await pool.send('b@herald.test', 'gone@example.com', message(2)).catch((e: SmtpFailure) => e);
    expect(gone).toMatchObject({ code: 'EENVELOPE', responseCode: 550 });
    expect(classifySmtpError(gone)).toMatchObject({ permanent: true, code: 550 });
    const busy = await pool.send('b@herald.test', 'busy@example.com', message(3)).catch((e: SmtpFailure) => e);
    expect(classifySmtpError(busy)).toMatchObject({ permanent: false, code: 451 });
    await pool.send('b@herald.test', 'two@example.com', message(4));
    expect(server.messages.map((m) => m.to[0])).toEqual(['one@example.com', 'two@example.com']);
    expect(server.connections).toHaveLength(1);
  });

  it('drops a connection the server closed while idle and opens another for the next message', async () => {
    server = await startServer({ socketTimeout: 150 });
    pool = poolFor(server.port, { size: 1 });
    await pool.send('b@herald.test', 'one@example.com', message(1));
    await sleep(500); // the server answers 421 and hangs up
    await pool.send('b@herald.test', 'two@example.com', message(2));
    expect(server.messages.map((m) => m.to[0])).toEqual(['one@example.com', 'two@example.com']);
    expect(server.connections).toHaveLength(2);
    expect(server.messages[0].session).not.toBe(server.messages[1].session);
  });

  it('moves a message once to a new connection when the server closes a reused one before the message went out', async () => {
    const transactions = new Map<string, number>();
    let alwaysRefuse = false;
    server = await startServer({
      onMailFrom(_address, session, callback) {
        const n = (transactions.get(session.id) ?? 0) + 1;
        transactions.set(session.id, n);
        // Each connection's second transaction (or every one, later) is refused with 421 and the connection closed.
        if (n === 2 || alwaysRefuse) return callback(Object.assign(new Error('4.4.2 Closing'), { responseCode: 421 }));
        callback();
      },
    });
    pool = poolFor(server.port, { size: 1 });
    await pool.send('b@herald.test', 'one@example.com', message(1));
    await pool.send('b@herald.test', 'two@example.com', message(2));
    expect(server.messages.map((m) => m.to[0])).toEqual(['one@example.com', 'two@example.com']);
    expect(server.connections).toHaveLength(2);
    // A new connection that closes is not tried again: the message fails (and is retried by the sender's backoff).
    alwaysRefuse = true;
    const err = await pool.send('b@herald.test', 'three@example.com', message(3)).catch((e: SmtpFailure) => e);
    expect(classifySmtpError(err)).toMatchObject({ permanent: false, code: 421 });
    expect(server.connections).toHaveLength(3);
    expect(server.messages).toHaveLength(2);
  });

  it('logs in when the URL carries credentials; a refused login is a temporary failure, not a bounce', async () => {
    server = await startServer({
      authOptional: false,
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      onAuth(auth, _session, callback) {
        if (auth.username === 'herald' && auth.password === 'p@ss word') return callback(null, { user: 'herald' });
        callback(Object.assign(new Error('5.7.8 Authentication failed'), { responseCode: 535 }));
      },
    });
    const good = smtpMailer(`smtp://herald:${encodeURIComponent('p@ss word')}@127.0.0.1:${server.port}`);
    await good.send({ from: 'b@herald.test', to: 'one@example.com', raw: message(1) });
    await good.close();
    expect(server.messages).toHaveLength(1);
    const bad = smtpMailer(`smtp://herald:wrong@127.0.0.1:${server.port}`);
    const err = await bad.send({ from: 'b@herald.test', to: 'two@example.com', raw: message(2) }).catch((e: unknown) => e);
    await bad.close();
    expect(err).toMatchObject({ permanent: false, code: 535 });
    expect(server.messages).toHaveLength(1);
  });

  it('a refused sender (5xx to MAIL FROM) is a temporary failure, not a bounce of the recipient', async () => {
    server = await startServer({
      onMailFrom(_address, _session, callback) {
        callback(Object.assign(new Error('5.7.1 Sender address rejected: not owned by user'), { responseCode: 553 }));
      },
    });
    pool = poolFor(server.port, { size: 1 });
    const err = await pool.send('b@herald.test', 'one@example.com', message(1)).catch((e: SmtpFailure) => e);
    expect(err).toMatchObject({ code: 'EENVELOPE', responseCode: 553 });
    expect(classifySmtpError(err)).toMatchObject({ permanent: false, code: 553 });
  });

  it('a server refusing service at the greeting (554) is a temporary failure, not a bounce', async () => {
    server = await startServer({
      onConnect(_session, callback) {
        callback(Object.assign(new Error('No service for you'), { responseCode: 554 }));
      },
    });
    const mailer = smtpMailer(`smtp://127.0.0.1:${server.port}`);
    const err = await mailer.send({ from: 'b@herald.test', to: 'one@example.com', raw: message(1) }).catch((e: unknown) => e);
    await mailer.close();
    expect(err).toMatchObject({ permanent: false, code: 554 });
  });

  it('reaches a server named by an IPv6 literal in SMTP_URL', async () => {
    server = await startServer({}, '::1');
    const mailer = smtpMailer(`smtp://[::1]:${server.port}`);
    try {
      await mailer.send({ from: 'b@herald.test', to: 'one@example.com', raw: message(1) });
    } finally {
      await mailer.close();
    }
  });

  it('fails every message, none left waiting, when the server cannot be reached', async () => {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    pool = poolFor(port, { size: 2 });
    const results = await Promise.allSettled(Array.from({ length: 5 }, (_, n) => pool!.send('b@herald.test', `r${n}@example.com`, message(n))));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    for (const r of results) expect(classifySmtpError((r as PromiseRejectedResult).reason).permanent).toBe(false);
  });

  it('close(): waiting messages fail, messages on a connection finish, connections end', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    server = await startServer({
      onRcptTo(_address, _session, callback) {
        void held.then(() => callback());
      },
    });
    pool = poolFor(server.port, { size: 1 });
    const first = pool.send('b@herald.test', 'one@example.com', message(1));
    await sleep(100);
    const second = pool.send('b@herald.test', 'two@example.com', message(2));
    pool.close();
    await expect(second).rejects.toThrow(/closed/);
    release();
    await first;
    expect(server.messages.map((m) => m.to[0])).toEqual(['one@example.com']);
    await expect(pool.send('b@herald.test', 'three@example.com', message(3))).rejects.toThrow(/closed/);
    await sleep(100);
    expect(server.peak).toBe(1);
  });
});

describe('envelopeFor', () => {
  it('passes plain addresses as they are and others through nodemailer’s normalisation', () => {
    expect(envelopeFor('b@herald.test', 'a.b+c@x-y.example')).toEqual({ from: 'b@herald.test', to: ['a.b+c@x-y.example'] });
    expect(envelopeFor('b@herald.test', 'User@Example.COM')).toEqual({ from: 'b@herald.test', to: ['User@example.com'] });
    expect(envelopeFor('b@herald.test', 'u@bücher.de')).toEqual({ from: 'b@herald.test', to: ['u@xn--bcher-kva.de'] });
    expect(envelopeFor('b@herald.test', 'a..b@x.example')).toEqual({ from: 'b@herald.test', to: ['"a..b"@x.example'] });
  });
});

describe('the DATA stream (writeData)', () => {
  /** What nodemailer's DATA stream sends for `raw` written as the pool writes it (`skip`) or as nodemailer does; and its counters. */
  async function wire(raw: string, skip: boolean): Promise<{ bytes: string; size: number; source: number }> {
    const stream = new DataStream();
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    const ended = new Promise((resolve) => stream.on('end', resolve));
    if (skip) writeData(stream, raw);
    else {
      stream.write(raw);
      stream.end();
    }
    await ended;
    const counters = stream as unknown as { outByteCount: number; inByteCount: number };
    return { bytes: Buffer.concat(chunks).toString('latin1'), size: counters.outByteCount, source: counters.inByteCount };
  }

  const lines = fc.array(fc.constantFrom('a', 'é', '.', '..', '\r', '\n', '\r\n', ' ', '=', '-'), { maxLength: 40 }).map((xs) => xs.join(''));

  it('sends the same bytes, with the same counts, as nodemailer’s own escaping, for any message', async () => {
    await fc.assert(
      fc.asyncProperty(lines, async (raw) => {
        expect(await wire(raw, true)).toEqual(await wire(raw, false));
      }),
      { numRuns: 500 },
    );
    // The cases the loop is there for: a dot at a line's start is doubled, bare CR and LF become CRLF, and the end-of-data line follows the last byte.
    for (const raw of ['.hidden\r\n', 'a\r\n.b\r\n', 'a\nb\r\n', 'a\rb', 'end\r', 'end\n', 'plain\r\n', 'plain']) {
      expect(await wire(raw, true)).toEqual(await wire(raw, false));
    }
  });

  it('lets a message through unchanged only when the escaping would change nothing', () => {
    expect(sendsAsItStands('Subject: x\r\n\r\nbody\r\n')).toBe(true);
    for (const raw of ['', '.x\r\n', 'a\r\n\nb', 'a\r\n.b\r\n', 'a\nb\r\n', '\nb', 'a\rb\r\n', 'a\r']) expect(sendsAsItStands(raw)).toBe(false);
  });

  it('Herald’s messages, signed, need no escaping (so none pays for the loop), whatever their subject, headers and bodies hold', async () => {
    const { key } = testDkimKey('acme.test', 'herald2026111');
    const text = fc.string({ unit: fc.constantFrom('a', 'é', '.', '\r', '\n', ' ', '\u2028', '😀'), maxLength: 60 });
    await fc.assert(
      fc.asyncProperty(text, text, text, text, async (subject, body, html, header) => {
        const raw = buildMessage({
          from: { name: `News ${header}`, email: 'news@acme.test' },
          to: { email: 'jane@example.com' },
          replyTo: header || null,
          subject,
          text: body,
          html,
          messageId: '<m1@acme.test>',
          headers: { 'List-Unsubscribe': `<https://acme.test/u/${header}>` },
        });
        const signed = (await dkimSignatureLine(raw, key)) + raw;
        expect(sendsAsItStands(signed)).toBe(true);
      }),
      { numRuns: 60 },
    );
  });
});
