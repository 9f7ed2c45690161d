/**
 * Database faults (issue 6): PostgreSQL stopped and started again under API load, and under a
 * worker in the middle of a send. Runs on a PostgreSQL cluster of this file's own (embedded,
 * lib-db/database.ts), so stopping it disturbs no other test file. The app and the worker are
 * never restarted: they must ride out the outage by themselves.
 *
 * Why a worker may send some messages twice here: it claims SEND_BATCH_SIZE rows (a lease),
 * sends them, then writes their outcomes in one transaction. When PostgreSQL goes away during
 * the batch, the SMTP server still accepts the messages but the outcomes cannot be written;
 * once the lease has run out the rows are queued again and go out a second time (same
 * Message-ID). A worker process has one batch claimed at a time, so the copies are bounded by
 * SEND_BATCH_SIZE, and they are exactly that batch's recipients.
 */
import os from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import type { Knex } from 'knex';
import request from 'supertest';
import { createApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import { createDb } from '../../src/db/knex';
import { smtpMailer } from '../../src/mail/mailer';
import { Worker } from '../../src/worker/worker';
import { createLogger } from '../../src/logger';
import { api, makeAccount, type TestAccount } from '../helpers/app';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { memoryMailer } from '../helpers/mail';
import { prepare, startCluster, type RestartableCluster } from './lib-db/database';
import { figure, printFigures } from './lib-db/figures';
import { captureLog } from './lib-db/log';
import { createSend } from '../helpers/sends';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp';
import { patient, sleep, waitFor } from '../helpers/wait';
import { TEST_MASTER_KEY } from '../helpers/master-key';

/** No request may take longer than this during an outage (connections give up after 5 s). */
const MAX_LATENCY_MS = 7000;
/** Recipient rows a worker claims at once: the most it can have in flight when the database goes. */
const SEND_BATCH_SIZE = 100;
/** Messages in flight at once: a half-batch's last ones may still be with the SMTP server when the next half's first go out. */
const SEND_CONCURRENCY = 10;

let cluster: RestartableCluster;
let db: Knex;
let config: Config;
let app: Express;
let a: TestAccount;
let worker: Worker | undefined;
let sink: SmtpSink | undefined;
let knexWarnings = 0;

beforeAll(async () => {
  // knex prints every failed connection attempt and every broken connection with console.log
  // (not through pino): a line per request during the outage. Kept out of the test output,
  // counted for the report.
  const print = console.log.bind(console);
  jest.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    if (typeof args[0] === 'string' && /^(Acquire connection error|Connection Error)/.test(args[0])) knexWarnings += 1;
    else print(...args);
  });
  cluster = await startCluster();
  config = loadConfig({
    DATABASE_URL: cluster.url,
    LOG_LEVEL: 'silent',
    DATA_DIR: path.join(os.tmpdir(), `herald-test-${process.pid}`),
    HERALD_MASTER_KEY: TEST_MASTER_KEY,
    PUBLIC_URL: 'http://herald.test',
    RATE_LIMIT_PER_MINUTE: '0',
    SEND_BATCH_SIZE: String(SEND_BATCH_SIZE),
    SEND_CONCURRENCY: String(SEND_CONCURRENCY),
    // ~5 s for 2,000 messages, so the database can be stopped in the middle of the send.
    SEND_RATE: '400',
    // A claimed batch whose outcomes were lost with the database is queued again after this.
    // Short, so the test does not wait long, but longer than sending a batch takes on a loaded
    // machine: a lease that ran out mid-batch would let a claim take live rows over and send
    // them again (a third copy), which is not what this test is about (TEST_PATIENCE).
    SEND_LEASE_MS: String(patient(2000)),
    RETRY_BASE_MS: '100',
    WORKER_POLL_MS: '50',
  });
  // As `herald serve` makes it: statement timeout, 5 s connect and acquire timeouts.
  db = createDb({ url: cluster.url, poolMax: 4, queryTimeoutMs: config.dbQueryTimeoutMs });
  await prepare(db);
  app = createApp({ config, db, logger: createLogger('silent'), mailer: memoryMailer() });
  a = await makeAccount(db, 'Database faults');
}, patient(60_000));

afterAll(async () => {
  figure('knex connection warnings printed to stdout (console.log)', knexWarnings);
  printFigures('Database fault figures');
  await worker?.stop();
  await sink?.close();
  await db?.destroy();
  await cluster?.destroy();
}, patient(30_000));

interface Call {
  kind: 'GET' | 'POST';
  name?: string;
  start: number;
  end: number;
  status: number;
  contentType: string;
  body: { status?: string; errors?: unknown };
  retryAfter?: string;
}

/**
 * `clients` loops of authenticated requests (a list read and a write, alternately) until
 * stop() is called; every answer is kept with its timing.
 */
function apiLoad(clients: number) {
  const calls: Call[] = [];
  let stopping = false;
  const loop = async (c: number) => {
    for (let i = 0; !stopping; i += 1) {
      const start = Date.now();
      const post = i % 2 === 1;
      const name = `load ${c}-${i}`;
      const res = await (post ? api(app, a).form('/contacts-type/add', { name }) : api(app, a).get('/contacts-type'));
      calls.push({
        kind: post ? 'POST' : 'GET',
        name: post ? name : undefined,
        start,
        end: Date.now(),
        status: res.status,
        contentType: String(res.headers['content-type'] ?? ''),
        body: res.body,
        retryAfter: res.headers['retry-after'],
      });
      await sleep(25);
    }
  };
  const loops = Array.from({ length: clients }, (_, c) => loop(c));
  return {
    calls,
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

const pct = (values: number[], p: number) => {
  const s = [...values].sort((x, y) => x - y);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

describe('PostgreSQL restarted under API load', () => {
  it('answers 503 envelopes during the outage, never hangs or crashes, and recovers without a restart', async () => {
    const load = apiLoad(6);
    await sleep(1000);
    // At least a second and 11 answers before the stop (a loaded machine answers fewer in a second).
    await waitFor('11 answers before the stop', () => load.calls.length > 10, { timeoutMs: 20_000, describe: () => JSON.stringify(load.calls.slice(-5)) });

    const stopAt = Date.now();
    await cluster.stop();
    const downAt = Date.now();
    // Keep the outage for 2 s and until enough requests were made entirely while it lasted.
    await waitFor(
      '2 s of outage and 8 requests answered during it',
      () => Date.now() - downAt >= 2000 && load.calls.filter((c) => c.start >= downAt).length >= 8,
      { timeoutMs: 20_000, describe: () => JSON.stringify(load.calls.slice(-5)) },
    );
    const restartAt = Date.now();
    await cluster.start();
    const upAt = Date.now();
    const firstOk = await waitFor(
      'a 200 after PostgreSQL is back',
      () => load.calls.find((c) => c.start >= upAt && c.status === 200),
      { timeoutMs: 15_000, describe: () => JSON.stringify(load.calls.slice(-5)) },
    );
    await sleep(1000);
    await load.stop();
    const { calls } = load;

    // Every answer, whatever happened, is the JSON envelope: 200 success or 503 failed.
    for (const c of calls) {
      const seen = { call: c.kind, status: [200, 503].includes(c.status) ? 'ok' : c.status, json: c.contentType.startsWith('application/json') };
      expect(seen).toEqual({ call: c.kind, status: 'ok', json: true });
      if (c.status === 200) expect(c.body.status).toBe('success');
      else {
        expect(c.body).toEqual({ status: 'failed', errors: expect.any(String) });
        expect(c.retryAfter).toMatch(/^\d+$/);
      }
      const call = `${c.kind} ${c.status} in ${c.end - c.start} ms`;
      expect({ call, fast: c.end - c.start < MAX_LATENCY_MS }).toEqual({ call, fast: true });
    }
    // Before the stop everything worked; during the outage everything answered 503.
    const before = calls.filter((c) => c.end < stopAt);
    expect(before.length).toBeGreaterThan(10);
    expect(before.every((c) => c.status === 200)).toBe(true);
    const during = calls.filter((c) => c.start >= downAt && c.end < restartAt);
    expect(during.length).toBeGreaterThanOrEqual(8);
    expect(during.every((c) => c.status === 503)).toBe(true);
    // Once the first request succeeded again, the service stays healthy (no stale connections).
    const after = calls.filter((c) => c.start >= firstOk.end);
    expect(after.length).toBeGreaterThan(5);
    expect(after.filter((c) => c.status !== 200)).toEqual([]);
    expect((await request(app).get('/healthz')).status).toBe(200);

    // Writes the API acknowledged are there; writes refused during the outage are not.
    const names = new Set(await db('contact_types').where({ user_id: a.id }).pluck('name'));
    for (const c of calls.filter((x) => x.kind === 'POST' && x.status === 200)) expect(names).toContain(c.name);
    for (const c of during.filter((x) => x.kind === 'POST')) expect(names).not.toContain(c.name);

    const outage = calls.filter((c) => c.status === 503).map((c) => c.end - c.start);
    figure('api: requests during the test / answered 503', `${calls.length} / ${outage.length}`);
    figure('api: 503 latency ms (median / p95 / max)', `${pct(outage, 50)} / ${pct(outage, 95)} / ${Math.max(...outage)}`);
    figure('api: stop() took ms', downAt - stopAt);
    figure('api: start() took ms', upAt - restartAt);
    figure('api: first 200 after start() resolved, ms', firstOk.end - upAt);
  });
});

describe('a worker whose database vanishes mid-batch', () => {
  it('keeps its loop alive, resumes when PostgreSQL is back, and completes the send', async () => {
    const N = 2000;
    const sender = await makeSender(db, a);
    const group = await makeGroup(db, a);
    const list = await makeContactType(db, a, 'Big');
    const emails = Array.from({ length: N }, (_, i) => `r${i}@vanish.test`);
    await makeContacts(
      db,
      a,
      list,
      emails.map((email) => ({ email })),
    );
    sink = await startSmtpSink();
    const log = captureLog('warn');
    worker = new Worker({ config, db, logger: log.logger, mailer: smtpMailer(sink.url, { poolSize: 5 }) });
    const { id } = await createSend(app, db, a, { sender, group, list }, {
      template_html: '<html><body><p>Hello ((email))</p></body></html>',
      single_send_name: 'Vanishing database',
      subject: 'Hello',
      preheader: 'Hello',
    });
    const server = sink;
    worker.start();

    await waitFor('500 messages accepted', () => server.accepted.length >= 500, {
      timeoutMs: 20_000,
      describe: () => String(server.accepted.length),
    });
    const atStop = server.accepted.length;
    const stopAt = Date.now();
    await cluster.stop();
    const downAt = Date.now();

    // The worker finishes the batch it had claimed (SMTP still works), cannot record it, says so
    // and keeps looping; with no database it claims nothing more: sending stops.
    let last = { n: -1, at: 0 };
    await waitFor(
      'sending to stop (no message accepted for 1 s) and failed rounds to be logged',
      () => {
        if (server.accepted.length !== last.n) last = { n: server.accepted.length, at: Date.now() };
        return Date.now() - last.at >= 1000 && log.find('worker round failed; retrying shortly').length >= 3;
      },
      { timeoutMs: 15_000, describe: () => JSON.stringify({ accepted: server.accepted.length, log: log.lines.slice(-3) }) },
    );
    const frozen = server.accepted.length;
    await sleep(1000);
    expect(server.accepted.length).toBe(frozen);
    expect(frozen - atStop).toBeLessThanOrEqual(SEND_BATCH_SIZE);

    const restartAt = Date.now();
    await cluster.start();
    const upAt = Date.now();
    await waitFor(
      'the send to complete after PostgreSQL is back',
      async () => (await db('single_sends').where({ id }).first('status')).status === 3,
      {
        timeoutMs: 30_000,
        describe: async () =>
          JSON.stringify({
            accepted: server.accepted.length,
            rows: await db('deliveries').where({ single_send_id: id }).groupBy('status').select('status').count('* as n'),
          }),
      },
    );
    const doneAt = Date.now();
    const failedRounds = log.find('worker round failed; retrying shortly').length;
    await worker.stop(); // the loop is still alive: stop() resolves
    worker = undefined;

    // Every recipient got the message; copies only for the batch that was in flight.
    const perRecipient = new Map<string, string[]>();
    for (const m of server.accepted) perRecipient.set(m.to, [...(perRecipient.get(m.to) ?? []), m.messageId]);
    expect(emails.filter((e) => !perRecipient.has(e))).toEqual([]);
    expect(perRecipient.size).toBe(N);
    const twice = [...perRecipient.entries()].filter(([, ids]) => ids.length > 1);
    expect(twice.length).toBeLessThanOrEqual(SEND_BATCH_SIZE);
    expect(server.accepted.length - N).toBe(twice.length);
    // ... and they are the batch in flight when the database went: the worker has at most
    // SEND_BATCH_SIZE rows claimed and unrecorded, so their first copies are among the last
    // accepted before it froze — the last SEND_BATCH_SIZE, give or take the messages of the
    // recorded half before them that were still in flight when its lanes moved on (fewer than
    // SEND_CONCURRENCY) — and their second copies after PostgreSQL came back.
    const firstIndex = new Map<string, number>();
    server.accepted.forEach((m, i) => firstIndex.set(m.to, firstIndex.get(m.to) ?? i));
    for (const [to] of twice) {
      const first = firstIndex.get(to)!;
      const second = server.accepted.findIndex((m, i) => i > first && m.to === to);
      const inFlightBatch = first >= frozen - SEND_BATCH_SIZE - SEND_CONCURRENCY && first < frozen;
      expect({ to, inFlightBatch, resentAfter: second >= frozen }).toEqual({ to, inFlightBatch: true, resentAfter: true });
    }
    // A copy is the same message (same Message-ID), so the receiving side can tell.
    for (const [, ids] of twice) expect(new Set(ids).size).toBe(1);

    // Every row is sent, recorded once, with the Message-ID the server accepted; statistics exact.
    const rows = await db('deliveries').where({ single_send_id: id }).select('email', 'status', 'message_id');
    expect(rows).toHaveLength(N);
    for (const r of rows) {
      const seen = { email: r.email, status: r.status, messageId: perRecipient.get(r.email)?.[0] };
      expect(seen).toEqual({ email: r.email, status: 'sent', messageId: r.message_id });
    }
    expect(await db('single_sends').where({ id }).first('status', 'triggered', 'delivered', 'bounces')).toEqual({
      status: 3,
      triggered: N,
      delivered: N,
      bounces: 0,
    });

    figure('worker: messages accepted when stop() began / when the worker froze', `${atStop} / ${frozen}`);
    figure('worker: stop() took ms', downAt - stopAt);
    figure('worker: start() took ms', upAt - restartAt);
    figure('worker: failed rounds logged', failedRounds);
    figure('worker: first message accepted after start() resolved, ms', (server.accepted[frozen]?.at ?? NaN) - upAt);
    figure('worker: send completed ms after start() resolved', doneAt - upAt);
    figure('worker: recipients sent twice (in-flight batch)', twice.length);
  });
});
