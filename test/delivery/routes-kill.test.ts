import { makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { routeState, useRouting } from '../helpers/relays';
import { patient, waitFor } from '../helpers/wait';
import { isolatedUrl } from '../setup/isolated';
import {
  addressesIn,
  bulkContacts,
  createSend,
  deliveryStatuses,
  few,
  minus,
  NONE,
  waitForCompleted,
  waitForWorkerSessionsGone,
} from '../faults/lib/campaign';
import { heraldEnv, requireBuilt, startWorker, useChildren } from '../faults/lib/processes';

/**
 * Kill -9 during failover (issue 36), as test/faults/crash-safety.test.ts does it without routes:
 * a `herald worker` process sends through two routes; the primary relay stops (the route goes
 * down, its messages move to the backup), and while the backup holds the moved messages
 * unanswered the worker is SIGKILLed. A new worker finishes the send. Every recipient gets the
 * message, and the only ones who may get it twice are the rows the dead worker had claimed and not
 * recorded (status `sending` once its sessions are gone): at most SEND_BATCH_SIZE, as today —
 * moving a message to another route adds no other way to send it twice.
 */
requireBuilt();
useChildren();

const N = 1_000;
const BATCH = 50;

const rig = useRouting({
  isolated: 'routes_kill',
  db: () => db,
  relays: ['primary', 'backup'],
  routes: (r) => [
    { name: 'primary', url: r.primary.url },
    { name: 'backup', url: r.backup.url },
  ],
  worker: false,
});
const { app, db } = setupApp({}, 'routes_kill');

let a: TestAccount;
let sender: number;
let group: number;

beforeAll(async () => {
  a = await makeAccount(db, 'Kill');
  sender = await makeSender(db, a);
  group = await makeGroup(db, a, 'News');
});

describe('a worker SIGKILLed while its messages fail over to another route', () => {
  it('is finished by a new worker: everyone served, duplicates only from the dead worker’s batch in flight', async () => {
    const { primary, backup } = rig.relays;
    const env = heraldEnv(isolatedUrl(testDatabaseUrl(), 'routes_kill'), {
      ...rig.env,
      SEND_BATCH_SIZE: String(BATCH),
      SEND_CONCURRENCY: '10',
      // The primary stays down for the test (probed once a minute).
      ROUTE_PROBE_SECONDS: '60',
    });
    primary.delayMs = 5;
    const list = await makeContactType(db, a, 'Kill');
    const audience = await bulkContacts(db, a, list, N, 'k', 'kill.test');
    const where = { single_send_id: 0 };
    const first = startWorker('worker-1', env);
    await first.ready;
    const send = await createSend(app, db, a, { sender, group, list, name: 'Kill' });
    where.single_send_id = send.id;
    const total = () => primary.accepted.length + backup.accepted.length;

    await waitFor('a fifth of the send to go out', () => total() >= N / 5, { timeoutMs: 60_000, intervalMs: 5, describe: () => first.output() });
    await primary.stop();
    await waitFor('the primary route to be marked down', async () => (await routeState(db, 'primary'))?.status === 'down', {
      timeoutMs: 30_000,
      describe: async () => ({ state: await routeState(db, 'primary'), output: first.output() }),
    });
    // The backup now takes the moved messages and holds them: the worker is mid-batch.
    backup.hold();
    await waitFor('the backup to hold messages', () => backup.held() > 0, { timeoutMs: 30_000, intervalMs: 5 });
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    await waitForWorkerSessionsGone(db);
    const inFlight = new Set(await addressesIn(db, where, 'sending'));
    expect(inFlight.size).toBeLessThanOrEqual(BATCH);
    expect(inFlight.size).toBeGreaterThan(0);
    // Everything recorded as sent was accepted by a relay.
    const accepted = new Set([...primary.recipients(), ...backup.recipients()]);
    expect(few(minus(await addressesIn(db, where, 'sent'), accepted))).toEqual(NONE);
    // The held messages' connections died with the worker: not accepted (the relay never said 250).
    backup.release();

    const second = startWorker('worker-2', env);
    await second.ready;
    await waitForCompleted(db, send.id, 90_000);
    const counts = new Map<string, number>();
    for (const t of [...primary.recipients(), ...backup.recipients()].filter((x) => x.endsWith('@kill.test'))) counts.set(t, (counts.get(t) ?? 0) + 1);
    const duplicates = [...counts].filter(([, n]) => n > 1).map(([t]) => t);
    expect(few(minus(audience, new Set(counts.keys())))).toEqual(NONE);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
    expect(few(minus(duplicates, inFlight))).toEqual(NONE);
    expect(await deliveryStatuses(db, where)).toEqual({ sent: N });
    expect(await db('single_sends').where({ id: send.id }).first('status', 'delivered', 'bounces')).toEqual({ status: 3, delivered: N, bounces: 0 });
    expect(await db('suppressions').where({ user_id: a.id })).toEqual([]);
    process.stderr.write(`[routes] kill -9 during failover: in flight ${inFlight.size}, duplicates ${duplicates.length}\n`);
    expect((await second.signalAndWait('SIGTERM', 15_000)).code).toBe(0);
  }, patient(180_000));
});
