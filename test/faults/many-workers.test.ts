/**
 * Many workers (issue 6): three `herald worker` processes on one database share a
 * 10,000-recipient send without sending anything twice; SEND_RATE holds as a total across
 * them with SEND_RATE_SCOPE=global and per process otherwise; and two `herald serve`
 * processes (WORKER=0) serve the same account at once.
 *
 * Each worker sends to its own port of the sink, so the sink tells which worker sent what.
 * The lease is long (2 min): a row is then never taken over by another worker, so every row
 * must have been claimed exactly once (`attempts` = 1) — a row claimed twice (no SKIP LOCKED,
 * no row lock) shows up there and as a duplicate in the sink.
 */
import { makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { isolatedUrl } from '../setup/isolated';
import { freePort } from '../helpers/net';
import { bulkContacts, createSend, deliveryStatuses, few, minus, NONE, report, waitForCompleted } from './lib/campaign';
import { heraldEnv, requireBuilt, startServe, startWorker, useChildren, type Proc } from './lib/processes';
import { startSink, type Sink } from './lib/sink';

requireBuilt();
useChildren();

const { app, db } = setupApp({}, 'workers');
const databaseUrl = isolatedUrl(testDatabaseUrl(), 'workers');
const WORKERS = 3;
/** Each scenario takes 3–15 s alone; the bounded waits inside fail first, with a message. */
const SCENARIO_MS = 120_000;

let sink: Sink;
let a: TestAccount;
let sender: number;
let group: number;

beforeAll(async () => {
  sink = await startSink(WORKERS);
  a = await makeAccount(db, 'Workers');
  sender = await makeSender(db, a);
  group = await makeGroup(db, a, 'News');
});

/** Three workers, worker i sending to the sink's port i; resolves once all are polling. */
async function startWorkers(env: Record<string, string>): Promise<Proc[]> {
  const workers = Array.from({ length: WORKERS }, (_, i) =>
    startWorker(`worker-${i + 1}`, heraldEnv(databaseUrl, { SMTP_URL: sink.urls[i], SEND_LEASE_MS: '120000', ...env })),
  );
  await Promise.all(workers.map((w) => w.ready));
  return workers;
}

/** SIGTERM to all, each must exit 0. */
async function stopWorkers(workers: Proc[]): Promise<void> {
  const exits = await Promise.all(workers.map((w) => w.signalAndWait('SIGTERM', 15_000)));
  expect(exits.map((e) => e.code)).toEqual(workers.map(() => 0));
}

describe('three worker processes and one 10,000-recipient send', () => {
  it('serve every recipient exactly once, share the work, and complete the send', async () => {
    const N = 10_000;
    const list = await makeContactType(db, a, 'Shared send');
    const audience = await bulkContacts(db, a, list, N, 'w', 'workers.test');
    const workers = await startWorkers({ SEND_BATCH_SIZE: '100' });
    const started = Date.now();
    const send = await createSend(app, db, a, { sender, group, list, name: 'Shared send' });
    await waitForCompleted(db, send.id, 50_000);
    const elapsedMs = Date.now() - started;
    await sink.sync();

    const mine = (m: { to: string }) => m.to.endsWith('@workers.test');
    const counts = sink.counts(mine);
    const duplicates = [...counts].filter(([, n]) => n > 1);
    expect({ duplicates: duplicates.length, examples: duplicates.slice(0, 5) }).toEqual({ duplicates: 0, examples: [] });
    expect(few(minus(audience, new Set(counts.keys())))).toEqual(NONE);
    expect(sink.accepted.filter(mine)).toHaveLength(N);
    // No row was ever claimed twice.
    const attempts = await db('deliveries').where({ single_send_id: send.id }).groupBy('attempts').select('attempts', db.raw('count(*)::int AS n'));
    expect(attempts).toEqual([{ attempts: 1, n: N }]);
    expect(await deliveryStatuses(db, { single_send_id: send.id })).toEqual({ sent: N });
    expect(await db('single_sends').where({ id: send.id }).first('status', 'triggered', 'delivered', 'bounces')).toEqual({
      status: 3,
      triggered: N,
      delivered: N,
      bounces: 0,
    });
    // The work was shared: every worker sent part of it.
    const perWorker = Array.from({ length: WORKERS }, (_, i) => sink.accepted.filter((m) => mine(m) && m.listener === i).length);
    for (const n of perWorker) expect(n).toBeGreaterThan(0);

    await stopWorkers(workers);
    report('many-workers 10k send', { recipients: N, workers: WORKERS, batch: 100, elapsedMs, perWorker, duplicates: duplicates.length });
  }, SCENARIO_MS);
});

describe('SEND_RATE across three worker processes', () => {
  const N = 2_000;
  const RATE = 200;

  /** Sends N messages with the three workers; returns the sink-side span and per-worker counts. */
  async function timedSend(scope: 'global' | 'process', domain: string) {
    const list = await makeContactType(db, a, `Rate ${scope}`);
    await bulkContacts(db, a, list, N, 'r', domain);
    const workers = await startWorkers({ SEND_RATE: String(RATE), SEND_RATE_SCOPE: scope, SEND_BATCH_SIZE: '50' });
    const send = await createSend(app, db, a, { sender, group, list, name: `Rate ${scope}` });
    await waitForCompleted(db, send.id, 40_000);
    await sink.sync();
    await stopWorkers(workers);
    const got = sink.accepted.filter((m) => m.to.endsWith(`@${domain}`));
    expect(got).toHaveLength(N);
    expect(new Set(got.map((m) => m.to)).size).toBe(N);
    const times = got.map((m) => m.at);
    const spanMs = Math.max(...times) - Math.min(...times);
    const perWorker = Array.from({ length: WORKERS }, (_, i) => got.filter((m) => m.listener === i).length);
    return { spanMs, rate: Math.round((N / spanMs) * 1000), perWorker };
  }

  it('SEND_RATE_SCOPE=global: the three together stay at SEND_RATE (a budget held in PostgreSQL)', async () => {
    const r = await timedSend('global', 'rate-global.test');
    report('many-workers SEND_RATE=200 global', { messages: N, ...r });
    // At 200/s, 2,000 messages take 10 s; the bucket's one-second burst (200) and the tokens
    // the workers hold locally (≤ 3 × 20) allow 8.7 s. Three unthrottled-by-each-other
    // workers (3 × 200/s) would take about 3 s.
    expect(r.spanMs).toBeGreaterThanOrEqual((N / RATE) * 1000 * 0.9);
    // …and the budget is not starved either (2×: slack for a machine busy with other tests).
    expect(r.spanMs).toBeLessThan((N / RATE) * 1000 * 2);
    for (const n of r.perWorker) expect(n).toBeGreaterThan(0);
  }, SCENARIO_MS);

  it('SEND_RATE_SCOPE=process: each worker has its own SEND_RATE, together well above it', async () => {
    const r = await timedSend('process', 'rate-process.test');
    report('many-workers SEND_RATE=200 process', { messages: N, ...r });
    expect(r.rate).toBeGreaterThanOrEqual(RATE * 1.8);
    for (const n of r.perWorker) expect(n).toBeGreaterThan(0);
  }, SCENARIO_MS);
});

describe('two API processes serving one account', () => {
  it('take 200 concurrent contact adds, every address added exactly once', async () => {
    const ports = [await freePort(), await freePort()];
    const servers = ports.map((port, i) => startServe(`serve-${i + 1}`, heraldEnv(databaseUrl, { PORT: String(port), WORKER: '0' })));
    await Promise.all(servers.map((s) => s.ready));
    const list = await makeContactType(db, a, 'Two APIs');
    const country = (await db('countries').where({ iso_code: 'GB' }).first('id')).id as number;
    // 100 addresses, each sent to both processes at once (the second time in upper case).
    const adds = Array.from({ length: 100 }, (_, i) => [`api${i}@two.test`, `API${i}@TWO.TEST`]).flatMap(([lower, upper], i) => [
      { server: servers[i % 2], email: lower, key: lower },
      { server: servers[(i + 1) % 2], email: upper, key: lower },
    ]);
    const started = Date.now();
    const results = await Promise.all(
      adds.map(async ({ server, email, key }) => {
        const res = await fetch(`${server.url}/contacts/add`, {
          method: 'POST',
          headers: { ...a.headers, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ contact_type_id: String(list), email, first_name: 'Two', country: String(country) }),
        });
        return { key, status: res.status, body: (await res.json()) as { status: string; message?: unknown; errors?: unknown } };
      }),
    );
    const elapsedMs = Date.now() - started;
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    for (const r of ok) expect(r.body).toEqual({ status: 'success', message: 'Contact Added Successfully' });
    for (const r of refused) expect(r).toEqual({ key: r.key, status: 422, body: { status: 'failed', errors: { email: ['The email has already been taken.'] } } });
    // Exactly one of each pair won.
    expect(new Set(ok.map((r) => r.key)).size).toBe(100);
    expect(ok).toHaveLength(100);
    const stored = await db('contacts').where({ contact_type_id: list }).whereNull('deleted_at').count('* as n').first();
    expect(Number(stored?.n)).toBe(100);
    // Both processes see the same account and the same contacts.
    for (const s of servers) {
      const res = await fetch(`${s.url}/contacts/list?page=1&per_page=1000`, { headers: a.headers });
      const body = (await res.json()) as { message: { contacts: Array<{ contact_type_id: number }> } };
      expect(body.message.contacts.filter((c) => c.contact_type_id === list)).toHaveLength(100);
    }
    const exits = await Promise.all(servers.map((s) => s.signalAndWait('SIGTERM', 15_000)));
    expect(exits.map((e) => e.code)).toEqual([0, 0]);
    report('many-workers two API processes', { requests: adds.length, added: ok.length, refusedAsDuplicate: refused.length, elapsedMs });
  }, SCENARIO_MS);
});
