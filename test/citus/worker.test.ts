/**
 * The delivery worker on the cluster (`npm run test:citus`): `herald worker` processes, compiled,
 * against a Citus database whose accounts live on both worker nodes. Several accounts send at
 * once through two worker processes; then a worker is SIGKILLed in the middle of a send. The
 * bounds are those of test/faults on one PostgreSQL: every message exactly once, none to a
 * suppressed address, and after a kill duplicates only among the rows the dead worker had in
 * flight (at most SEND_BATCH_SIZE).
 */
import type { Knex } from 'knex';
import { makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { patient, waitFor } from '../helpers/wait';
import { isolatedUrl } from '../setup/isolated';
import { addressesIn, bulkContacts, createSend, deliveryStatuses, few, minus, NONE, report, waitForCompleted, waitForWorkerSessionsGone } from '../faults/lib/campaign';
import { heraldEnv, requireBuilt, startWorker, useChildren } from '../faults/lib/processes';
import { startSink, type Sink } from '../faults/lib/sink';

requireBuilt();
useChildren();

const { app, db } = setupApp({}, 'workers');
const BATCH = 50;
const SCENARIO_MS = patient(180_000);

let sink: Sink;
let env: Record<string, string>;

interface Sending {
  account: TestAccount;
  sender: number;
  group: number;
  node: number;
}

/** The worker node (port) holding an account's shard, from Citus's catalog. */
async function nodeOf(knex: Knex, userId: number): Promise<number> {
  const { rows } = await knex.raw(
    `SELECT nodeport FROM citus_shards WHERE table_name = 'deliveries'::regclass AND shardid = get_shard_id_for_distribution_column('deliveries', ?::int)`,
    [userId],
  );
  return (rows as Array<{ nodeport: number }>)[0].nodeport;
}

/** `perNode` new accounts on each worker node (accounts until both have as many), each with a sender and a group. */
async function accountsOnBothNodes(perNode: number): Promise<Sending[]> {
  const { rows } = await db.raw('SELECT node_port FROM citus_get_active_worker_nodes() ORDER BY 1');
  const nodes = (rows as Array<{ node_port: number }>).map((r) => r.node_port);
  const picked = new Map<number, Sending[]>(nodes.map((n) => [n, []]));
  for (let i = 0; i < 60 && [...picked.values()].some((l) => l.length < perNode); i++) {
    const account = await makeAccount(db, 'Cluster');
    const node = await nodeOf(db, account.id);
    if (picked.get(node)!.length >= perNode) continue;
    picked.get(node)!.push({ account, node, sender: await makeSender(db, account), group: await makeGroup(db, account, 'News') });
  }
  const all = [...picked.values()].flat();
  expect(all.length).toBe(perNode * nodes.length);
  return all;
}

beforeAll(async () => {
  sink = await startSink(2);
  env = heraldEnv(isolatedUrl(testDatabaseUrl(), 'workers'), { SMTP_URL: sink.urls[0], SEND_BATCH_SIZE: String(BATCH), SEND_CONCURRENCY: '20' });
});

describe('several accounts on both worker nodes, sending at once through two worker processes', () => {
  it('every recipient gets exactly one message, no suppressed address gets any, and both processes send', async () => {
    const accounts = await accountsOnBothNodes(2);
    // The accounts' rows are on both nodes, read from Citus's catalog (pg_dist_placement through citus_shards).
    expect(new Set(accounts.map((s) => s.node)).size).toBe(2);
    const workers = [startWorker('citus-worker-1', env), startWorker('citus-worker-2', { ...env, SMTP_URL: sink.urls[1] })];
    await Promise.all(workers.map((w) => w.ready));
    const started = Date.now();
    const expected = new Set<string>();
    const suppressed = new Set<string>();
    const sends: Array<{ id: number; account: TestAccount }> = [];
    for (const [i, s] of accounts.entries()) {
      const domain = `acct${i}.cluster.test`;
      const list = await makeContactType(db, s.account, `List ${i}`);
      const audience = await bulkContacts(db, s.account, list, 1500, 'r', domain);
      // Every 50th address is suppressed (bounce) or globally unsubscribed: none of them may get mail.
      const blocked = audience.filter((_, n) => n % 50 === 0);
      for (const [n, email] of blocked.entries()) {
        if (n % 2) await db('suppressions').insert({ user_id: s.account.id, email, type: 'bounce', reason: 'test', source: 'api' });
        else await db('global_unsubscribers').insert({ user_id: s.account.id, email_address: email });
        suppressed.add(email);
      }
      for (const email of audience) if (!suppressed.has(email)) expected.add(email);
      sends.push({ account: s.account, ...(await createSend(app, db, s.account, { sender: s.sender, group: s.group, list, name: `Cluster ${i}` })) });
    }
    for (const send of sends) await waitForCompleted(db, send.id, 120_000);
    await sink.sync();
    const counts = sink.counts((m) => m.to.endsWith('.cluster.test'));
    expect(few(minus(expected, new Set(counts.keys())))).toEqual(NONE);
    expect([...counts].filter(([, n]) => n > 1).map(([to]) => to)).toEqual([]);
    expect(few([...counts.keys()].filter((to) => suppressed.has(to)))).toEqual(NONE);
    expect(counts.size).toBe(expected.size);
    // Both worker processes sent (each has a sink listener of its own), and every account's statistics agree.
    const perListener = [0, 1].map((l) => sink.accepted.filter((m) => m.listener === l && m.to.endsWith('.cluster.test')).length);
    expect(perListener.every((n) => n > 0)).toBe(true);
    for (const send of sends) {
      const row = await db('single_sends').where({ id: send.id, user_id: send.account.id }).first('status', 'triggered', 'delivered');
      expect(row).toEqual({ status: 3, triggered: 1500 - 30, delivered: 1500 - 30 });
    }
    for (const w of workers) expect((await w.signalAndWait('SIGTERM', 15_000)).code).toBe(0);
    report('citus: two workers, four accounts on two nodes', { messages: counts.size, suppressed: suppressed.size, perListener, ms: Date.now() - started });
  }, SCENARIO_MS);
});

describe('a worker SIGKILLed in the middle of a send on the cluster', () => {
  it('is finished by a new worker: everyone served, duplicates only from the dead worker’s batch in flight', async () => {
    const [s] = await accountsOnBothNodes(1);
    const recipients = 3000;
    const list = await makeContactType(db, s.account, 'Crash');
    const audience = await bulkContacts(db, s.account, list, recipients, 'k', 'crash.cluster');
    const first = startWorker('citus-worker-3', env);
    await first.ready;
    const killAt = recipients * 0.3 + BATCH / 2;
    await sink.setDelay(60_000, killAt);
    const send = await createSend(app, db, s.account, { sender: s.sender, group: s.group, list, name: 'Crash' });
    const where = { single_send_id: send.id };
    const fromCrash = () => sink.accepted.filter((m) => m.to.endsWith('@crash.cluster')).length;
    await waitFor('30 % of the send to reach the sink', async () => fromCrash() >= killAt, {
      timeoutMs: 60_000,
      intervalMs: 5,
      describe: async () => `sink has ${fromCrash()}; rows ${JSON.stringify(await deliveryStatuses(db, where))}\n${first.output()}`,
    });
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    await waitForWorkerSessionsGone(db);
    await sink.sync();
    const inFlight = new Set(await addressesIn(db, where, 'sending'));
    expect(inFlight.size).toBeGreaterThan(0);
    expect(inFlight.size).toBeLessThanOrEqual(BATCH);
    await sink.setDelay(0);
    const second = startWorker('citus-worker-4', env);
    await second.ready;
    await waitForCompleted(db, send.id, 90_000);
    await sink.sync();
    const counts = sink.counts((m) => m.to.endsWith('@crash.cluster'));
    const duplicates = [...counts].filter(([, n]) => n > 1).map(([to]) => to);
    expect(few(minus(audience, new Set(counts.keys())))).toEqual(NONE);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
    expect(few(minus(duplicates, inFlight))).toEqual(NONE);
    expect(await deliveryStatuses(db, where)).toEqual({ sent: recipients });
    expect((await second.signalAndWait('SIGTERM', 15_000)).code).toBe(0);
    report('citus: worker killed mid-send', { recipients, batch: BATCH, inFlight: inFlight.size, duplicates: duplicates.length });
  }, SCENARIO_MS);
});
