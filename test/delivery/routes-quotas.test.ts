import { isCitus } from '../../src/db/citus';
import { makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { perSecond, useRouting, type RouteDoc } from '../helpers/relays';
import { patient, sleep, waitFor } from '../helpers/wait';
import { isolatedUrl } from '../setup/isolated';
import { bulkContacts, createSend, deliveryStatuses, few, minus, NONE, waitForCompleted } from '../faults/lib/campaign';
import { heraldEnv, requireBuilt, startWorker, useChildren, type Proc } from '../faults/lib/processes';

/**
 * Quotas (issue 36) held across two `herald worker` processes, measured at the relay: two
 * accounts each send at once (on Citus each worker claims one account's rows at a time, so the
 * two processes work on different shards), and the one route's `max_per_second` and
 * `max_per_hour` hold for the two processes together, because the budget is in PostgreSQL
 * (route_state's token bucket, route_usage's counters), not in either process.
 */
requireBuilt();
useChildren();

const rig = useRouting({ isolated: 'routes_quotas', db: () => db, relays: ['relay'], routes: () => [], worker: false });
const { app, db } = setupApp({}, 'routes_quotas');
const databaseUrl = isolatedUrl(testDatabaseUrl(), 'routes_quotas');
const SCENARIO_MS = patient(180_000);

const accounts: Array<{ a: TestAccount; sender: number; group: number }> = [];

beforeAll(async () => {
  // On Citus the two accounts' rows must sit on different shards (made until they do; 31 in 32 the first time).
  const shardOf = async (id: number): Promise<string | null> =>
    (await isCitus(db)) ? String((await db.raw('SELECT get_shard_id_for_distribution_column(?::regclass, ?::integer) AS shard', ['deliveries', id])).rows[0].shard) : null;
  const first = await makeAccount(db, 'Quota one');
  let second = await makeAccount(db, 'Quota two');
  for (let i = 0; i < 10 && (await shardOf(first.id)) !== null && (await shardOf(first.id)) === (await shardOf(second.id)); i += 1) {
    second = await makeAccount(db, `Quota two (${i})`);
  }
  if ((await shardOf(first.id)) !== null) expect(await shardOf(first.id)).not.toBe(await shardOf(second.id));
  for (const a of [first, second]) accounts.push({ a, sender: await makeSender(db, a), group: await makeGroup(db, a, 'News') });
});

/** Two worker processes sending through `route` only; resolves once both are polling. */
async function startWorkers(route: RouteDoc): Promise<Proc[]> {
  // A lease of a minute: held to the quota, a claimed row can wait in its worker for seconds before it goes, longer
  // than the fault tests' short lease (heraldEnv), which would let the other worker take it over and send it twice.
  const env = heraldEnv(databaseUrl, { ...rig.env, SMTP_ROUTES: JSON.stringify([route]), SEND_BATCH_SIZE: '20', SEND_CONCURRENCY: '5', SEND_LEASE_MS: '60000' });
  const workers = [startWorker('worker-1', env), startWorker('worker-2', env)];
  await Promise.all(workers.map((w) => w.ready));
  return workers;
}

async function stopWorkers(workers: Proc[]): Promise<void> {
  const exits = await Promise.all(workers.map((w) => w.signalAndWait('SIGTERM', 15_000)));
  expect(exits.map((e) => e.code)).toEqual([0, 0]);
}

/** One send per account, `perAccount` recipients each on `domain`; returns the sends and everyone's address. */
async function sendFromBoth(domain: string, perAccount: number) {
  const sends: Array<{ id: number; utr: string }> = [];
  const audience: string[] = [];
  for (const [i, { a, sender, group }] of accounts.entries()) {
    const list = await makeContactType(db, a, `Quota ${domain}`);
    audience.push(...(await bulkContacts(db, a, list, perAccount, `a${i}-`, domain)));
    sends.push(await createSend(app, db, a, { sender, group, list, name: `Quota ${domain}` }));
  }
  return { sends, audience };
}

/**
 * The token bucket's promise on the arrival times: over any stretch of them, at most `burst` more
 * than RATE allows for its duration (the largest (j − i + 1) − rate·(t_j − t_i), in O(n)).
 */
function excessOverRate(times: number[], rate: number): number {
  const sorted = [...times].sort((x, y) => x - y);
  let best = 0;
  let lowest = Infinity;
  sorted.forEach((t, j) => {
    lowest = Math.min(lowest, j - (rate * t) / 1000);
    best = Math.max(best, j - (rate * t) / 1000 - lowest + 1);
  });
  return best;
}

describe('max_per_second across two worker processes', () => {
  it('holds at the relay for both processes together', async () => {
    const RATE = 10;
    const PER_ACCOUNT = 60;
    const workers = await startWorkers({ name: 'capped', url: rig.relays.relay.url, max_per_second: RATE });
    const domain = 'per-second.test';
    const { sends, audience } = await sendFromBoth(domain, PER_ACCOUNT);
    for (const s of sends) await waitForCompleted(db, s.id, 120_000);
    await stopWorkers(workers);

    const got = rig.relays.relay.accepted.filter((m) => m.to.endsWith(`@${domain}`));
    expect(got).toHaveLength(2 * PER_ACCOUNT);
    expect(few(minus(audience, new Set(got.map((m) => m.to))))).toEqual(NONE);
    const times = got.map((m) => m.at);
    const windows = perSecond(times);
    const excess = excessOverRate(times, RATE);
    process.stderr.write(`[routes] max_per_second ${RATE}, 2 workers: per 1-s window ${JSON.stringify(windows)}, excess over the rate ${excess.toFixed(1)}\n`);
    // Per 1-second window (counted from the first arrival): at most the quota, plus one window's
    // worth of slack. A token bucket with a burst of one second's worth lets the full bucket go at
    // once and then the refill at the quota, so a window that starts when the bucket is full can
    // hold up to twice the quota; the windows are also not aligned with the bucket's seconds, and
    // the grants each process holds (a fraction of a second's worth) may land in the same window.
    // Without a shared budget (one per process) two workers would send 2 × RATE every second.
    for (const n of windows) expect(n).toBeLessThanOrEqual(2 * RATE);
    // Over the whole send: at most one second's burst plus the grants the two processes hold and
    // the messages each has in flight (SEND_CONCURRENCY) more than the quota allows for its span.
    expect(excess).toBeLessThanOrEqual(RATE + 2 * RATE + 2 * 5);
    // Both accounts were served throughout, by the two processes.
    for (const s of sends) expect(await deliveryStatuses(db, { single_send_id: s.id })).toEqual({ sent: PER_ACCOUNT });
  }, SCENARIO_MS);
});

describe('max_per_hour across two worker processes', () => {
  it('lets through exactly the hour’s quota; the rest waits, queued, no attempt used, the sends not completed', async () => {
    const HOURLY = 30;
    const PER_ACCOUNT = 25;
    const workers = await startWorkers({ name: 'hourly', url: rig.relays.relay.url, max_per_hour: HOURLY });
    const domain = 'per-hour.test';
    const { sends } = await sendFromBoth(domain, PER_ACCOUNT);
    const mine = () => rig.relays.relay.accepted.filter((m) => m.to.endsWith(`@${domain}`)).length;
    await waitFor('the hour’s quota to reach the relay', () => mine() >= HOURLY, { timeoutMs: 60_000 });
    // Whatever was still in the processes' hands has settled: rows either sent or waiting.
    await waitFor(
      'every row to be sent or waiting (none being sent)',
      async () => {
        for (const s of sends) if ((await deliveryStatuses(db, { single_send_id: s.id })).sending) return false;
        return true;
      },
      { timeoutMs: 30_000 },
    );
    await sleep(2_000);
    expect(mine()).toBe(HOURLY);
    const statuses = await Promise.all(sends.map((s) => deliveryStatuses(db, { single_send_id: s.id })));
    const sent = statuses.reduce((n, s) => n + (s.sent ?? 0), 0);
    const queued = statuses.reduce((n, s) => n + (s.queued ?? 0), 0);
    expect({ sent, queued, other: statuses.flatMap((s) => Object.keys(s)).filter((k) => k !== 'sent' && k !== 'queued') }).toEqual({
      sent: HOURLY,
      queued: 2 * PER_ACCOUNT - HOURLY,
      other: [],
    });
    // Waiting is not failing: the waiting rows used no attempt (they were never tried, or their
    // attempt was given back), and none is due before the next hour.
    const waiting = await db('deliveries')
      .whereIn(
        'single_send_id',
        sends.map((s) => s.id),
      )
      .where({ status: 'queued' })
      .select('attempts', 'next_attempt_at', 'user_id');
    for (const w of waiting) expect(w.attempts).toBe(0);
    // The waiting rows a process claimed and gave back are due at the next hour at the earliest
    // (the quota's period): each one's deferred event says why.
    const deferred = await db('events').whereIn('user_id', accounts.map((x) => x.a.id)).where({ type: 'deferred' }).whereRaw(`email LIKE ?`, [`%@${domain}`]);
    for (const e of deferred) expect(e.data).toMatchObject({ reason: 'quota', route: 'hourly' });
    // A send with a message still waiting is not completed (one whose messages all fit in the quota may be).
    for (const [i, s] of sends.entries()) {
      const { status } = await db('single_sends').where({ id: s.id }).first('status');
      if (statuses[i].queued) expect(status).not.toBe(3);
      else expect(status).toBe(3);
    }
    expect(await db('suppressions').whereIn('user_id', accounts.map((x) => x.a.id))).toEqual([]);
    await stopWorkers(workers);
  }, SCENARIO_MS);
});
