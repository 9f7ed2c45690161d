import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../src/config';
import { dnsFor } from '../../src/dns';
import { createLogger } from '../../src/logger';
import { MailError, type Mailer, type OutgoingMail } from '../../src/mail/mailer';
import { createMailer } from '../../src/routes/create-mailer';
import { sendSystemMail } from '../../src/mail/system-mail';
import { Worker } from '../../src/worker/worker';
import { claimBatch, recordOutcomes } from '../../src/deliveries/queue';
import { makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { startDnsServer, type DnsServer } from '../helpers/dns';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { TEST_MASTER_KEY } from '../helpers/master-key';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { isolatedUrl } from '../setup/isolated';
import { bulkContacts, createSend, deliveryStatuses } from '../faults/lib/campaign';

/**
 * The routing runtime (src/routes/router.ts) against real SMTP servers on loopback: the weighted
 * choice, quotas held across two "processes" (two routed mailers on one database), failover to
 * another relay with the failed one probed back, throttling and block texts that defer and never
 * bounce, the system stream, and — through the worker — a deferral that gives its attempt back and
 * keeps the send from completing. D's routes-*.test.ts files are the end-to-end tests.
 */
const { app, db } = setupApp({}, 'routes_core');
const url = isolatedUrl(testDatabaseUrl(), 'routes_core');
const logger = createLogger('silent');

let dns: DnsServer;
const sinks: SmtpSink[] = [];
const mailers: Mailer[] = [];
let a: TestAccount;

beforeAll(async () => {
  dns = await startDnsServer();
  a = await makeAccount(db, 'Routes core');
});

afterAll(async () => {
  for (const m of mailers) await m.close();
  for (const s of sinks) await s.close();
  await dns.close();
});

async function sink(opts: Parameters<typeof startSmtpSink>[0] = {}): Promise<SmtpSink> {
  const s = await startSmtpSink({ keepMessages: false, ...opts });
  sinks.push(s);
  return s;
}

function configWith(routes: object[], env: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'silent',
    DATA_DIR: path.join(os.tmpdir(), `herald-test-${process.pid}`),
    PUBLIC_URL: 'http://herald.test',
    HERALD_MASTER_KEY: TEST_MASTER_KEY,
    DNS_SERVERS: dns.servers,
    SMTP_ROUTES: JSON.stringify(routes),
    ...env,
  });
}

function routed(routes: object[], env: Record<string, string> = {}): { mailer: Mailer; config: Config } {
  const config = configWith(routes, env);
  const mailer = createMailer(config, { db, logger, dns: dnsFor(config) });
  mailers.push(mailer);
  return { mailer, config };
}

let seq = 0;
const mail = (to: string, more: Partial<OutgoingMail> = {}): OutgoingMail => ({
  from: 'news@acme.test',
  to,
  raw: `From: news@acme.test\r\nTo: ${to}\r\nSubject: ${++seq}\r\nMessage-ID: <m${seq}@acme.test>\r\n\r\nHello\r\n`,
  userId: a.id,
  ...more,
});

/** What send() came to: the route, or the MailError. */
async function outcome(m: Mailer, message: OutgoingMail): Promise<{ route?: string; error?: MailError }> {
  try {
    const r = await m.send(message);
    return { route: r?.route };
  } catch (err) {
    return { error: err as MailError };
  }
}

const state = (name: string) => db('route_state').where({ name }).first();

test('messages split by weight among the routes, and send() names the route', async () => {
  const [heavy, light] = [await sink(), await sink()];
  const { mailer } = routed([
    { name: 'w-heavy', url: heavy.url, weight: 3 },
    { name: 'w-light', url: light.url, weight: 1 },
  ]);
  const n = 400;
  const routes: Record<string, number> = {};
  for (let i = 0; i < n; i += 20) {
    const batch = await Promise.all(Array.from({ length: 20 }, (_, j) => mailer.send(mail(`w${i + j}@example.test`))));
    for (const r of batch) routes[r!.route!] = (routes[r!.route!] ?? 0) + 1;
  }
  expect(routes['w-heavy'] + routes['w-light']).toBe(n);
  expect(heavy.accepted).toHaveLength(routes['w-heavy']);
  expect(light.accepted).toHaveLength(routes['w-light']);
  // 3:1 of 400: 300 expected, σ ≈ 8.7; five σ either side.
  expect(Math.abs(routes['w-heavy'] - 300)).toBeLessThan(44);
});

test('a route without caps counts its messages too (GET /routes shows every route\'s hour and day), written in the background, not per message', async () => {
  const relay = await sink();
  const routes = [{ name: 'u-uncapped', url: relay.url }];
  const first = routed(routes).mailer;
  const second = routed(routes).mailer;
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? first : second).send(mail(`u${i}@example.test`))));
  expect(results.every((r) => r!.route === 'u-uncapped')).toBe(true);
  const used = async () =>
    Object.fromEntries(
      ((await db('route_usage').where({ route: 'u-uncapped' }).select('period', 'used')) as Array<{ period: string; used: number }>).map((u) => [u.period, u.used]),
    );
  // Counted in the process until the next refresh of the shared state (or close): both processes' ten then.
  await first.close();
  await second.close();
  expect(await used()).toEqual({ hour: 10, day: 10 });
});

test('max_per_hour holds across two processes on one database, and the one over it is deferred with its reason', async () => {
  const relay = await sink();
  const routes = [{ name: 'q-hourly', url: relay.url, max_per_hour: 7 }];
  const first = routed(routes).mailer;
  const second = routed(routes).mailer;
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => outcome(i % 2 ? first : second, mail(`q${i}@example.test`))));
  const sent = results.filter((r) => r.route === 'q-hourly');
  const deferred = results.filter((r) => r.error);
  expect(sent).toHaveLength(7);
  expect(relay.accepted).toHaveLength(7);
  for (const { error } of deferred) {
    expect(error).toBeInstanceOf(MailError);
    expect(error!.permanent).toBe(false);
    expect(error!.reason).toBe('quota');
    // The next hour.
    expect(error!.deferUntil!.getTime()).toBe(Math.floor(Date.now() / 3600_000) * 3600_000 + 3600_000);
  }
  // Neither has room until the next hour.
  expect(await first.room!('marketing')).toEqual(new Date(Math.floor(Date.now() / 3600_000) * 3600_000 + 3600_000));
  const usage = await db('route_usage').where({ route: 'q-hourly', period: 'hour' }).first();
  expect(usage.used).toBe(7);
});

test('a relay that refuses connections goes down after ROUTE_DOWN_AFTER; its messages go to the other at once; a probe brings it back', async () => {
  const flaky = await sink();
  const steady = await sink();
  const port = flaky.port;
  await flaky.close();
  const { mailer } = routed(
    [
      { name: 'f-flaky', url: `smtp://127.0.0.1:${port}`, weight: 1 },
      { name: 'f-steady', url: steady.url, weight: 1 },
    ],
    { ROUTE_DOWN_AFTER: '2', ROUTE_PROBE_SECONDS: '1' },
  );
  const results = [];
  for (let i = 0; i < 20; i++) results.push(await outcome(mailer, mail(`f${i}@example.test`)));
  expect(results.filter((r) => r.error)).toEqual([]);
  expect(results.every((r) => r.route === 'f-steady')).toBe(true);
  expect(steady.accepted).toHaveLength(20);
  const down = await state('f-flaky');
  expect(down).toMatchObject({ status: 'down', consecutive_failures: 2 });
  expect(down.down_since).not.toBeNull();
  expect(down.last_error).toMatch(/ECONNREFUSED|connect/i);

  // The relay returns on its port: a probe (within ROUTE_PROBE_SECONDS) brings it back up.
  const back = await sink({ port });
  await waitFor('f-flaky probed back up', async () => {
    await mailer.room!('marketing');
    const s = await state('f-flaky');
    return s.status === 'up' ? s : undefined;
  });
  expect((await state('f-flaky')).recovered_at).not.toBeNull();
  const after = [];
  for (let i = 0; i < 60; i++) after.push(await mailer.send(mail(`f-back${i}@example.test`)));
  // Half its weight for five minutes: about a third of the messages, some at least.
  expect(back.accepted.length).toBeGreaterThan(5);
  expect(back.accepted.length).toBeLessThan(45);
});

test('a connection lost after the body went out is half-sent: retried as before (an attempt used, never moved at once to another route), and a failure of the route', async () => {
  const [hanging, other] = [await sink({ data: () => 'hang' }), await sink()];
  const { mailer } = routed(
    [
      { name: 'h-hangs', url: hanging.url, weight: 1_000_000 },
      { name: 'h-other', url: other.url, weight: 1 },
    ],
    { SMTP_TIMEOUT_MS: '1000' },
  );
  const r = await outcome(mailer, mail('half@example.test'));
  // The body reached the relay, which never answered: it may have been delivered, so no second route now.
  expect(hanging.hung.get('half@example.test')).toBe(1);
  expect(other.accepted).toHaveLength(0);
  expect(r.error).toBeInstanceOf(MailError);
  expect(r.error!.permanent).toBe(false);
  expect(r.error!.deferUntil).toBeUndefined();
  expect(r.error!.route).toBe('h-hangs');
  expect((await state('h-hangs')).consecutive_failures).toBe(1);
});

test('a route with no other to turn to defers (down), without an attempt and without a bounce', async () => {
  const gone = await sink();
  const port = gone.port;
  await gone.close();
  const { mailer } = routed([{ name: 'd-alone', url: `smtp://127.0.0.1:${port}` }], { ROUTE_DOWN_AFTER: '1', ROUTE_PROBE_SECONDS: '60' });
  const r = await outcome(mailer, mail('d1@example.test'));
  expect(r.error).toMatchObject({ permanent: false, reason: 'down', route: 'd-alone' });
  expect(r.error!.deferUntil!.getTime()).toBeGreaterThan(Date.now() + 30_000);
  // Down now: the next one is not even tried, and the Sender would wait (room) until the probe.
  const r2 = await outcome(mailer, mail('d2@example.test'));
  expect(r2.error).toMatchObject({ reason: 'down' });
  expect(await mailer.room!('marketing')).toBeInstanceOf(Date);
  expect(await mailer.room!('system')).toBeInstanceOf(Date);
});

test('a throttling text throttles the route and defers the message; retried, everything goes', async () => {
  let n = 0;
  const relay = await sink({
    rcpt: () => (++n % 2 === 0 ? { code: 454, message: '4.7.0 Throttling failure: Maximum sending rate exceeded.' } : 'accept'),
  });
  const { mailer } = routed([{ name: 't-ses', url: relay.url, max_per_second: 20 }]);
  const pending = Array.from({ length: 6 }, (_, i) => `t${i}@example.test`);
  const deferrals: MailError[] = [];
  for (let round = 0; pending.length && round < 30; round++) {
    const to = pending.shift()!;
    const r = await outcome(mailer, mail(to));
    if (r.error) {
      deferrals.push(r.error);
      pending.push(to);
    }
  }
  expect(pending).toEqual([]);
  expect(relay.accepted).toHaveLength(6);
  expect(deferrals.length).toBeGreaterThan(0);
  for (const e of deferrals) {
    expect(e).toMatchObject({ permanent: false, reason: 'throttled', route: 't-ses' });
    expect(e.message).toMatch(/Throttling/);
  }
  const s = await state('t-ses');
  expect(s.status).toBe('throttled');
  // Half of max_per_second.
  expect(s.throttled_rate).toBe(10);
});

test('a block text blocks the route for that provider: the message is deferred, never bounced, route.blocked is recorded once', async () => {
  const relay = await sink({
    rcpt: (address) =>
      address.endsWith('@blocked-provider.test')
        ? { code: 550, message: '5.7.1 Service unavailable; Client host [203.0.113.7] blocked using Spamhaus' }
        : 'accept',
  });
  const { mailer } = routed([{ name: 'b-only', url: relay.url }]);
  const first = await outcome(mailer, mail('one@blocked-provider.test'));
  expect(first.error).toMatchObject({ permanent: false, reason: 'blocked', route: 'b-only' });
  const block = await db('route_blocks').where({ route: 'b-only' }).first();
  // No MX: the domain is its own provider.
  expect(block).toMatchObject({ provider: 'blocked-provider.test' });
  expect(block.last_error).toMatch(/Spamhaus/);
  // Another recipient of the provider: not tried on the route at all.
  const second = await outcome(mailer, mail('two@blocked-provider.test'));
  expect(second.error).toMatchObject({ reason: 'blocked' });
  expect(relay.rcptSeen.get('two@blocked-provider.test')).toBeUndefined();
  // Another provider still goes.
  expect(await mailer.send(mail('three@fine.test'))).toEqual({ route: 'b-only' });
  const events = await db('events').where({ user_id: a.id, type: 'route.blocked' });
  expect(events).toHaveLength(1);
  expect(events[0].data).toMatchObject({ route: 'b-only', provider: 'blocked-provider.test' });
  expect(await db('suppressions').where({ user_id: a.id })).toHaveLength(0);
});

test('a block on one route sends that provider through another at once', async () => {
  const blocking = await sink({
    rcpt: (address) => (address.endsWith('@strict.test') ? { code: 550, message: '5.7.606 Access denied, banned sending IP [203.0.113.7].' } : 'accept'),
  });
  const other = await sink();
  const { mailer } = routed([
    { name: 'b2-blocking', url: blocking.url, weight: 1000 },
    { name: 'b2-other', url: other.url, weight: 1 },
  ]);
  expect(await mailer.send(mail('x@strict.test'))).toEqual({ route: 'b2-other' });
  expect(other.acceptedBy('x@strict.test')).toHaveLength(1);
});

test('system mail goes through the route carrying the system stream', async () => {
  const marketing = await sink({ keepMessages: true });
  const system = await sink({ keepMessages: true });
  const { mailer, config } = routed([
    { name: 's-marketing', url: marketing.url, streams: ['marketing'] },
    { name: 's-system', url: system.url, streams: ['system'] },
  ]);
  await sendSystemMail({ config, db, logger, mailer }, { to: { email: 'owner@example.test' }, subject: 'Verify', html: '<p>Hi</p>' });
  expect(system.acceptedBy('owner@example.test')).toHaveLength(1);
  expect(marketing.accepted).toHaveLength(0);
  expect(await mailer.send(mail('reader@example.test'))).toEqual({ route: 's-marketing' });
});

test('credentials never reach route_state.last_error', async () => {
  const gone = await sink();
  const port = gone.port;
  await gone.close();
  const { mailer } = routed([{ name: 'c-secret', url: `smtp://apiuser:s3cr3t-pa55@127.0.0.1:${port}` }], { ROUTE_DOWN_AFTER: '1' });
  await outcome(mailer, mail('c@example.test'));
  const s = await state('c-secret');
  expect(s.last_error).toBeTruthy();
  expect(s.last_error).not.toMatch(/s3cr3t|apiuser/);
});

describe('through the worker', () => {
  let worker: Worker | undefined;
  let sendId: number;
  afterAll(async () => {
    await worker?.stop();
  });

  test('rows over the hourly quota wait queued with their attempt given back, deferred (quota, route), and the send does not complete', async () => {
    const relay = await sink();
    const { mailer, config } = routed([{ name: 'k-hourly', url: relay.url, max_per_hour: 4 }], { SEND_BATCH_SIZE: '20', SEND_CONCURRENCY: '2' });
    const sender = await makeSender(db, a);
    const group = await makeGroup(db, a, 'Core');
    const list = await makeContactType(db, a, 'Core');
    await bulkContacts(db, a, list, 10, 'k-', 'example.test');
    const send = await createSend(app, db, a, { sender, group, list, name: 'Core quota' });
    worker = new Worker({ config, db, logger, mailer });
    worker.start();
    await waitFor('4 delivered and 6 deferred', async () => {
      const s = await deliveryStatuses(db, { single_send_id: send.id, user_id: a.id });
      return s.sent === 4 && s.queued === 6 ? s : undefined;
    });
    expect(relay.accepted).toHaveLength(4);
    const queued = await db('deliveries').where({ single_send_id: send.id, user_id: a.id, status: 'queued' });
    const nextHour = Math.floor(Date.now() / 3600_000) * 3600_000 + 3600_000;
    for (const row of queued) {
      expect(row.attempts).toBe(0);
      expect(new Date(row.next_attempt_at).getTime()).toBe(nextHour);
    }
    const deferred = await db('events').where({ user_id: a.id, single_send_id: send.id, type: 'deferred' });
    expect(deferred.length).toBeGreaterThan(0);
    for (const e of deferred) expect(e.data).toMatchObject({ route: 'k-hourly', reason: 'quota' });
    const delivered = await db('events').where({ user_id: a.id, single_send_id: send.id, type: 'delivered' });
    expect(delivered).toHaveLength(4);
    for (const e of delivered) expect(e.data).toMatchObject({ route: 'k-hourly' });
    expect(await db('events').where({ user_id: a.id, single_send_id: send.id, type: 'bounced' })).toHaveLength(0);
    // Housekeeping has had its rounds: the send waits for its rows, it is not completed.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await db('single_sends').where({ id: send.id, user_id: a.id }).first()).status).not.toBe(3);
    sendId = send.id;
  });

  test('a row deferred by the routes for more than 5 days after it was written ends failed, soft, with nothing suppressed', async () => {
    await worker!.stop();
    worker = undefined;
    const one = await db('deliveries').where({ single_send_id: sendId, user_id: a.id, status: 'queued' }).first('id');
    const [old] = await db('deliveries')
      .where({ id: one.id, user_id: a.id })
      .update({ created_at: db.raw(`now() - interval '6 days'`), next_attempt_at: db.raw('now()') })
      .returning(['id', 'email']);
    await db('deliveries').where({ single_send_id: sendId, user_id: a.id, status: 'queued' }).whereNot({ id: old.id }).update({ next_attempt_at: db.raw('now()') });
    const rows = await claimBatch(db, 20, 60_000, a.id);
    expect(rows.length).toBeGreaterThan(1);
    const retryAt = new Date(Date.now() + 3600_000);
    await recordOutcomes(
      db,
      rows,
      rows.map(() => ({ status: 'queued' as const, error: '550 5.7.1 blocked using Spamhaus', code: 550, retryAt, route: 'k-hourly', reason: 'blocked' as const })),
      { softBounceLimit: 1, softBounceDays: 30 },
    );
    const after = await db('deliveries').where({ id: old.id, user_id: a.id }).first();
    expect(after).toMatchObject({ status: 'failed', last_error: '550 5.7.1 blocked using Spamhaus' });
    const others = await db('deliveries').whereIn('id', rows.map((r) => r.id).filter((id) => Number(id) !== Number(old.id))).where({ user_id: a.id });
    for (const o of others) expect(o).toMatchObject({ status: 'queued', attempts: 0 });
    const [event] = await db('events').where({ user_id: a.id, delivery_id: old.id, type: 'bounced' });
    expect(event.data).toMatchObject({ kind: 'soft', route: 'k-hourly', smtp_code: null });
    expect(await db('suppressions').where({ user_id: a.id })).toHaveLength(0);
  });
});

test('warm-up: on day 0 (the schedule starts today) the route takes its cap an hour, the next waits (warmup) until the next hour', async () => {
  const relay = await sink();
  const today = new Date().toISOString().slice(0, 10);
  const { mailer } = routed([{ name: 'wu-new', url: relay.url, warmup: { start: today, schedule: [3, 6] } }]);
  const results = [];
  for (let i = 0; i < 5; i++) results.push(await outcome(mailer, mail(`wu${i}@example.test`)));
  expect(results.filter((r) => r.route === 'wu-new')).toHaveLength(3);
  const nextHour = new Date(Math.floor(Date.now() / 3600_000) * 3600_000 + 3600_000);
  for (const r of results.slice(3)) expect(r.error).toMatchObject({ reason: 'warmup', deferUntil: nextHour, route: 'wu-new' });
  expect(await mailer.room!('marketing')).toEqual(nextHour);
  // Past the schedule's end the route is warm: no cap.
  const warm = routed([{ name: 'wu-warm', url: relay.url, warmup: { start: '2020-01-01', schedule: [1] } }]).mailer;
  for (let i = 0; i < 4; i++) expect(await warm.send(mail(`warm${i}@example.test`))).toEqual({ route: 'wu-warm' });
});
