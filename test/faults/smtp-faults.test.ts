/**
 * SMTP faults (issue 6): a server that refuses connections for a while, answers 4xx, answers
 * 5xx, or hangs after DATA. The real worker loop (Worker.start) sends through Herald's real SMTP
 * pool (src/mail/smtp-pool.ts) to servers that misbehave on purpose (test/helpers/smtp.ts), on a database of this
 * file's own. After every scenario: nothing is marked delivered that the server did not accept.
 */
import os from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import type { Knex } from 'knex';
import { createApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import { createDb } from '../../src/db/knex';
import { smtpMailer } from '../../src/mail/mailer';
import { Worker } from '../../src/worker/worker';
import { createLogger } from '../../src/logger';
import { makeAccount, type TestAccount } from '../helpers/app';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { memoryMailer } from '../helpers/mail';
import { freePort } from '../helpers/net';
import { freshDatabase, type FreshDatabase } from './lib-db/database';
import { figure, printFigures } from './lib-db/figures';
import { recordingMailer, type Attempt, type RecordingMailer } from './lib-db/recording-mailer';
import { createSend as createSendViaApi } from '../helpers/sends';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp';
import { patient, sleep, waitFor } from '../helpers/wait';
import { TEST_MASTER_KEY } from '../helpers/master-key';

const RETRY_BASE_MS = 100;
const SMTP_TIMEOUT_MS = 1000;

let fresh: FreshDatabase;
let db: Knex;
let config: Config;
let app: Express;
let a: TestAccount;
let sender: number;
let group: number;

/** What each scenario started, stopped in afterEach whatever happened. */
let running: { worker?: Worker; mailer?: RecordingMailer; servers: SmtpSink[] } = { servers: [] };

beforeAll(async () => {
  fresh = await freshDatabase('smtp_faults');
  db = createDb({ url: fresh.url, poolMax: 4 });
  config = loadConfig({
    DATABASE_URL: fresh.url,
    LOG_LEVEL: 'silent',
    DATA_DIR: path.join(os.tmpdir(), `herald-test-${process.pid}`),
    HERALD_MASTER_KEY: TEST_MASTER_KEY,
    PUBLIC_URL: 'http://herald.test',
    SMTP_TIMEOUT_MS: String(SMTP_TIMEOUT_MS),
    RETRY_BASE_MS: String(RETRY_BASE_MS),
    MAX_ATTEMPTS: '30',
    WORKER_POLL_MS: '20',
    SEND_CONCURRENCY: '4',
    SEND_BATCH_SIZE: '50',
  });
  app = createApp({ config, db, logger: createLogger('silent'), mailer: memoryMailer() });
  a = await makeAccount(db, 'SMTP faults');
  sender = await makeSender(db, a);
  group = await makeGroup(db, a);
}, patient(60_000));

afterEach(async () => {
  await running.worker?.stop();
  await running.mailer?.close();
  await Promise.all(running.servers.map((s) => s.close()));
  running = { servers: [] };
});

afterAll(async () => {
  printFigures('SMTP fault figures');
  await db?.destroy();
  await fresh?.drop();
});

/** The in-process worker (its real loop) sending through Herald's SMTP pool to `url`. */
function startWorker(url: string): RecordingMailer {
  const mailer = recordingMailer(smtpMailer(url, { poolSize: 2, socketTimeoutMs: config.smtpTimeoutMs }));
  const worker = new Worker({ config, db, logger: createLogger('silent'), mailer });
  running.worker = worker;
  running.mailer = mailer;
  worker.start();
  return mailer;
}

/** A ready single send (schedule now) to a new list of these addresses; returns its id. */
async function createSend(emails: string[]): Promise<number> {
  const list = await makeContactType(db, a, 'Faults');
  await makeContacts(
    db,
    a,
    list,
    emails.map((email) => ({ email })),
  );
  const send = await createSendViaApi(app, db, a, { sender, group, list }, {
    template_html: '<html><body><p>Hello ((email))</p></body></html>',
    single_send_name: `Faults ${list}`,
    subject: 'Faults',
    preheader: 'Faults',
  });
  return send.id;
}

const sendRow = (id: number) => db('single_sends').where({ id }).first('status', 'triggered', 'delivered', 'bounces');
const deliveryRows = (id: number) =>
  db('deliveries').where({ single_send_id: id }).orderBy('id').select('email', 'status', 'attempts', 'last_error', 'message_id', 'sent_at');

async function waitForStatus(id: number, status: number, timeoutMs: number): Promise<void> {
  await waitFor(`single send ${id} to reach status ${status}`, async () => (await sendRow(id))?.status === status, {
    timeoutMs,
    describe: async () => JSON.stringify({ send: await sendRow(id), deliveries: await deliveryRows(id) }),
  });
}

/**
 * The property every scenario ends with: a delivery is `sent` exactly when the server
 * answered 250 to that message (same recipient, same Message-ID), once; the send's
 * `delivered` counts exactly those. While a batch is in flight (`settled` false) a message
 * may be accepted and not yet recorded, so only "sent ⇒ accepted" holds then.
 */
async function expectSentEqualsAccepted(id: number, servers: SmtpSink[], settled = true): Promise<void> {
  const rows = await deliveryRows(id);
  const emails = new Set(rows.map((r) => r.email.toLowerCase()));
  const accepted = servers
    .flatMap((s) => s.accepted)
    .filter((m) => emails.has(m.to))
    .map((m) => `${m.to} ${m.messageId}`)
    .sort();
  const sent = rows
    .filter((r) => r.status === 'sent')
    .map((r) => `${r.email.toLowerCase()} ${r.message_id}`)
    .sort();
  if (settled) {
    expect(sent).toEqual(accepted);
    expect((await sendRow(id)).delivered).toBe(sent.length);
  } else {
    expect(sent.filter((m) => !accepted.includes(m))).toEqual([]);
  }
}

/** Gaps between the starts of one recipient's consecutive attempts. */
const gaps = (attempts: Attempt[]) => attempts.slice(1).map((t, i) => t.start - attempts[i].start);

/** Each retry waits at least RETRY_BASE_MS · 2^(n−1) after the n-th attempt (a little slack for clocks). */
function expectBackoff(attempts: Attempt[]): void {
  gaps(attempts).forEach((gap, i) => {
    const atLeast = RETRY_BASE_MS * 2 ** i - 15;
    const retry = { n: i + 1, gap, atLeast };
    expect({ ...retry, waitedLongEnough: gap >= atLeast }).toEqual({ ...retry, waitedLongEnough: true });
  });
}

describe('SMTP faults', () => {
  it('a server refusing connections: the send stays running, retries with backoff, then completes once it is back', async () => {
    const port = await freePort(); // nobody listens there yet: connections are refused
    const emails = Array.from({ length: 20 }, (_, i) => `r${i}@refused.test`);
    const mailer = startWorker(`smtp://127.0.0.1:${port}`);
    const id = await createSend(emails);

    // Every recipient tried at least 4 times against the closed port.
    await waitFor('4 refused attempts per recipient', () => emails.every((e) => mailer.attemptsFor(e).length >= 4), {
      timeoutMs: 10_000,
      describe: () => JSON.stringify(emails.map((e) => mailer.attemptsFor(e).length)),
    });
    // Every attempt failed and was kept for a retry; refused connections are what they saw
    // (a busy pool may report a queued message's failure in other words, which is just as temporary).
    expect(mailer.attempts.filter((t) => t.ok || t.permanent)).toEqual([]);
    expect(mailer.attempts.filter((t) => /ECONNREFUSED/.test(t.error ?? '')).length).toBeGreaterThan(0);
    for (const e of emails) expectBackoff(mailer.attemptsFor(e));
    figure('refused: gaps between the first attempts of one recipient (ms)', gaps(mailer.attemptsFor(emails[0])));

    const during = await sendRow(id);
    expect(during).toMatchObject({ status: 2, triggered: 20, delivered: 0, bounces: 0 });
    const rows = await deliveryRows(id);
    expect(rows).toHaveLength(20);
    for (const r of rows) {
      expect(['queued', 'sending']).toContain(r.status);
      expect(r.sent_at).toBeNull();
      expect(r.attempts).toBeGreaterThanOrEqual(4);
      if (r.status === 'queued') expect(r.last_error).toMatch(/ECONNREFUSED/);
    }
    const attemptsAtRecovery = rows.map((r) => r.attempts as number);

    // The server comes up on that port: the send completes, one message per recipient.
    const upAt = Date.now();
    const server = await startSmtpSink({ port });
    running.servers.push(server);
    await waitForStatus(id, 3, 15_000);
    const [fewest, most] = [Math.min(...attemptsAtRecovery), Math.max(...attemptsAtRecovery)];
    figure('refused: attempts per recipient before the server came up (min..max)', `${fewest}..${most}`);
    figure('refused: ms from server up to send completed', Date.now() - upAt);

    for (const e of emails) expect({ e, n: server.acceptedBy(e).length }).toEqual({ e, n: 1 });
    expect(server.accepted).toHaveLength(20);
    expect(await sendRow(id)).toMatchObject({ status: 3, triggered: 20, delivered: 20, bounces: 0 });
    expect((await deliveryRows(id)).every((r) => r.status === 'sent' && r.last_error === null)).toBe(true);
    await expectSentEqualsAccepted(id, [server]);
  });

  it('4xx answers are retried with backoff and delivered later', async () => {
    const REFUSALS = 3;
    const server = await startSmtpSink({
      rcpt: (address, seen) =>
        address === 'later@tempfail.test' && seen <= REFUSALS ? { code: 451, message: 'Try again later' } : 'accept',
    });
    running.servers.push(server);
    const mailer = startWorker(server.url);
    const id = await createSend(['later@tempfail.test', 'fine@tempfail.test']);

    // Between the refusals and the delivery it is queued again, with the server's answer.
    const later = () => db('deliveries').where({ single_send_id: id, email: 'later@tempfail.test' });
    await waitFor('the first 451', () => mailer.attemptsFor('later@tempfail.test').length >= 1, { timeoutMs: 5000 });
    await waitFor('the 451 recorded as a retry', async () => (await later().where({ status: 'queued' }).first()) !== undefined, {
      timeoutMs: 5000,
      describe: async () => JSON.stringify(await deliveryRows(id)),
    });
    const queued = await later().first();
    expect(queued.last_error).toMatch(/451|Try again later/);
    expect(queued.sent_at).toBeNull();

    await waitForStatus(id, 3, 10_000);
    const tries = mailer.attemptsFor('later@tempfail.test');
    expect(tries.map((t) => t.ok)).toEqual([...Array(REFUSALS).fill(false), true]);
    expect(tries.slice(0, REFUSALS).every((t) => t.permanent === false && /451/.test(t.error ?? ''))).toBe(true);
    expectBackoff(tries);
    figure('4xx: gaps between attempts (ms)', gaps(tries));
    expect(server.rcptSeen.get('later@tempfail.test')).toBe(REFUSALS + 1);
    expect(server.acceptedBy('later@tempfail.test')).toHaveLength(1);
    expect(server.acceptedBy('fine@tempfail.test')).toHaveLength(1);
    expect(await later().first()).toMatchObject({
      status: 'sent',
      attempts: REFUSALS + 1,
      last_error: null,
    });
    expect(await sendRow(id)).toMatchObject({ status: 3, triggered: 2, delivered: 2, bounces: 0 });
    await expectSentEqualsAccepted(id, [server]);
  });

  it('a 5xx answer is a bounce, counted, and never retried', async () => {
    const server = await startSmtpSink({
      rcpt: (address) => (address === 'nobody@permfail.test' ? { code: 550, message: 'No such user here' } : 'accept'),
    });
    running.servers.push(server);
    const mailer = startWorker(server.url);
    const id = await createSend(['nobody@permfail.test', 'fine@permfail.test']);
    await waitForStatus(id, 3, 10_000);
    // Several retry periods later, still one attempt: nothing was queued again.
    await sleep(RETRY_BASE_MS * 8);
    expect(server.rcptSeen.get('nobody@permfail.test')).toBe(1);
    expect(mailer.attemptsFor('nobody@permfail.test')).toHaveLength(1);
    expect(mailer.attemptsFor('nobody@permfail.test')[0]).toMatchObject({ ok: false, permanent: true });
    const bounced = await db('deliveries').where({ single_send_id: id, email: 'nobody@permfail.test' }).first();
    expect(bounced).toMatchObject({ status: 'bounced', attempts: 1, sent_at: null });
    expect(bounced.last_error).toMatch(/No such user here/);
    expect(server.acceptedBy('nobody@permfail.test')).toHaveLength(0);
    expect(await sendRow(id)).toMatchObject({ status: 3, triggered: 2, delivered: 1, bounces: 1 });
    await expectSentEqualsAccepted(id, [server]);
  });

  it('a server that hangs after DATA: the message times out, is retried, and is delivered once the server behaves', async () => {
    const HANGS = 2;
    const server = await startSmtpSink({
      data: (to, seen) => (to.includes('slow@hang.test') && seen <= HANGS ? 'hang' : 'accept'),
    });
    running.servers.push(server);
    const mailer = startWorker(server.url);
    const id = await createSend(['slow@hang.test', 'quick@hang.test']);

    // While the server holds the message without answering, it is not delivered.
    await waitFor('the first hang to time out', () => mailer.attemptsFor('slow@hang.test').length >= 1, { timeoutMs: SMTP_TIMEOUT_MS * 5 });
    expect(server.hung.get('slow@hang.test')).toBeGreaterThanOrEqual(1);
    const held = await db('deliveries').where({ single_send_id: id, email: 'slow@hang.test' }).first();
    expect(held.status).not.toBe('sent');
    expect(held.sent_at).toBeNull();
    expect((await sendRow(id)).status).toBe(2);
    await expectSentEqualsAccepted(id, [server], false);

    await waitForStatus(id, 3, 20_000);
    const tries = mailer.attemptsFor('slow@hang.test');
    expect(tries.map((t) => t.ok)).toEqual([...Array(HANGS).fill(false), true]);
    for (const t of tries.slice(0, HANGS)) {
      // Failed by SMTP_TIMEOUT_MS of silence, not sooner (how much later depends on the machine); temporary.
      expect(t.end - t.start).toBeGreaterThanOrEqual(SMTP_TIMEOUT_MS - 50);
      expect(t.permanent).toBe(false);
      expect(t.error).toMatch(/time/i);
    }
    figure('hang: duration of the timed-out attempts (ms)', tries.slice(0, HANGS).map((t) => t.end - t.start));
    expect(server.hung.get('slow@hang.test')).toBe(HANGS);
    expect(server.acceptedBy('slow@hang.test')).toHaveLength(1);
    expect(server.acceptedBy('quick@hang.test')).toHaveLength(1);
    expect(await db('deliveries').where({ single_send_id: id, email: 'slow@hang.test' }).first()).toMatchObject({
      status: 'sent',
      attempts: HANGS + 1,
    });
    expect(await sendRow(id)).toMatchObject({ status: 3, triggered: 2, delivered: 2, bounces: 0 });
    await expectSentEqualsAccepted(id, [server]);
  });
});
