/**
 * Crash safety (issue 6): a `herald worker` process is SIGKILLed in the middle of a
 * 10,000-recipient single send, and of an automation step going to 2,000 contacts; a new
 * worker finishes the job. Every recipient gets the message, and the only ones who can get it
 * twice are those the dead worker had in flight.
 *
 * The exact bound. A worker holds at most SEND_BATCH_SIZE claimed rows at a time (status
 * 'sending', with a lease `locked_until`), sends them SEND_CONCURRENCY at a time, and records
 * the outcomes of each half-batch in one statement. Killed between the SMTP server's 250 and
 * that commit, the rows it already sent are still 'sending'; when their lease runs out
 * (SEND_LEASE_MS) any worker's claim takes them over and they go out a second time. Rows
 * already recorded are never sent again, rows not yet claimed were never sent. So:
 *   duplicates ⊆ { rows in 'sending' once the dead worker's session is gone }
 *   |that set| ≤ SEND_BATCH_SIZE (one batch in flight per worker process)
 * The batch, not SEND_CONCURRENCY, is the bound: a whole batch may have been accepted by the
 * SMTP server and not yet recorded. SEND_BATCH_SIZE is set to 50 here so the bound is tight.
 */
import { makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { isolatedUrl } from '../setup/isolated';
import {
  addressesIn,
  bulkContacts,
  createSend,
  deliveryStatuses,
  liveAutomation,
  few,
  minus,
  NONE,
  report,
  waitForCompleted,
  waitForWorkerSessionsGone,
} from './lib/campaign';
import { patient, sleep, waitFor } from '../helpers/wait';
import { heraldEnv, requireBuilt, startWorker, useChildren } from './lib/processes';
import { startSink, type Sink } from './lib/sink';

requireBuilt();
useChildren();

const { app, db } = setupApp({}, 'faults');
const BATCH = 50;
const SEND_RECIPIENTS = 10_000;
const AUTOMATION_CONTACTS = 2_000;
/** Each scenario takes 10–25 s alone; the bounded waits inside fail first, with a message. */
const SCENARIO_MS = patient(120_000);

let sink: Sink;
let a: TestAccount;
let sender: number;
let group: number;
let env: Record<string, string>;

beforeAll(async () => {
  sink = await startSink(1);
  a = await makeAccount(db, 'Crash');
  sender = await makeSender(db, a);
  group = await makeGroup(db, a, 'News');
  env = heraldEnv(isolatedUrl(testDatabaseUrl(), 'faults'), {
    SMTP_URL: sink.urls[0],
    SEND_BATCH_SIZE: String(BATCH),
    SEND_CONCURRENCY: '20',
  });
});

/** Messages per recipient of one domain, and the recipients who got more than one. */
function tally(domain: string) {
  const counts = sink.counts((m) => m.to.endsWith(`@${domain}`));
  const duplicates = [...counts].filter(([, n]) => n > 1).map(([to]) => to);
  return { counts, duplicates, total: [...counts.values()].reduce((s, n) => s + n, 0) };
}

describe('a worker SIGKILLed in the middle of a 10,000-recipient single send', () => {
  it('is finished by a new worker: everyone served, duplicates only from the dead worker’s batch in flight', async () => {
    const list = await makeContactType(db, a, 'Crash send');
    const audience = await bulkContacts(db, a, list, SEND_RECIPIENTS, 'r', 'crash.test');
    const first = startWorker('worker-1', env);
    await first.ready;
    // The sink takes 30 % of the send and half a batch more, then holds every message: the
    // worker is then stuck mid-batch, half of it accepted and unrecorded, when it is killed.
    const killAt = SEND_RECIPIENTS * 0.3 + BATCH / 2;
    await sink.setDelay(60_000, killAt);
    const started = Date.now();
    const send = await createSend(app, db, a, { sender, group, list, name: 'Crash send' });
    const where = { single_send_id: send.id };

    await waitFor('30 % of the send to reach the sink', async () => sink.accepted.length >= killAt, {
      timeoutMs: 45_000,
      intervalMs: 5,
      describe: async () => `sink has ${sink.accepted.length}; rows ${JSON.stringify(await deliveryStatuses(db, where))}\n${first.output()}`,
    });
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const killedAfterMs = Date.now() - started;
    await waitForWorkerSessionsGone(db);
    await sink.sync();
    const acceptedAtKill = sink.accepted.length;
    const inFlight = new Set(await addressesIn(db, where, 'sending'));
    const atKill = await deliveryStatuses(db, where);
    // One batch in flight per worker process, never more.
    expect(inFlight.size).toBeLessThanOrEqual(BATCH);
    // Everything recorded as sent was accepted by the SMTP server (nothing marked delivered that was not).
    const sentAtKill = await addressesIn(db, where, 'sent');
    expect(few(minus(sentAtKill, new Set(sink.counts().keys())))).toEqual(NONE);
    // The scenario is the one meant: the kill landed in the middle of a batch.
    expect(inFlight.size).toBeGreaterThan(0);
    await sink.setDelay(0);

    // Restarted at once, as a supervisor would: the dead worker's rows come back when their
    // lease has run out, in the new worker's claims.
    const second = startWorker('worker-2', env);
    await second.ready;
    const restartedAfterMs = Date.now() - started;
    await waitForCompleted(db, send.id, 60_000);
    const completedAfterMs = Date.now() - started;
    await sink.sync();

    const { counts, duplicates, total } = tally('crash.test');
    expect(few(minus(audience, new Set(counts.keys())))).toEqual(NONE); // every recipient at least once
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
    expect(few(minus(duplicates, inFlight))).toEqual(NONE); // duplicates ⊆ the batch in flight at the kill
    expect(duplicates.length).toBeLessThanOrEqual(BATCH);
    expect(total).toBe(SEND_RECIPIENTS + duplicates.length);
    // Statistics equal what the sink received: one delivery per distinct recipient accepted.
    const s = await db('single_sends').where({ id: send.id }).first('status', 'triggered', 'delivered', 'bounces');
    expect(s).toEqual({ status: 3, triggered: SEND_RECIPIENTS, delivered: counts.size, bounces: 0 });
    expect(await deliveryStatuses(db, where)).toEqual({ sent: SEND_RECIPIENTS });

    const stopped = await second.signalAndWait('SIGTERM', 15_000);
    expect(stopped.code).toBe(0);
    report('crash-safety single send', {
      recipients: SEND_RECIPIENTS,
      batch: BATCH,
      killedAfterMs,
      acceptedAtKill,
      killAt,
      rowsAtKill: atKill,
      inFlightAtKill: inFlight.size,
      duplicates: duplicates.length,
      restartedAfterMs,
      completedAfterMs,
    });
  }, SCENARIO_MS);
});

describe('a worker SIGKILLed in the middle of an automation step going to 2,000 contacts', () => {
  it('is finished by a new worker: every contact exactly once, except the dead worker’s batch in flight', async () => {
    const list = await makeContactType(db, a, 'Crash automation');
    const audience = await bulkContacts(db, a, list, AUTOMATION_CONTACTS, 'c', 'crash-auto.test');
    const first = startWorker('worker-3', env);
    await first.ready;
    const killAt = AUTOMATION_CONTACTS * 0.3 + BATCH / 2;
    await sink.setDelay(60_000, killAt);
    const started = Date.now();
    const automation = await liveAutomation(app, db, a, { sender, group, list, name: 'Crash automation' });
    const where = { automation_id: automation.id };
    const fromAutomation = () => sink.accepted.filter((m) => m.to.endsWith('@crash-auto.test')).length;

    await waitFor('30 % of the automation’s emails to reach the sink', async () => fromAutomation() >= killAt, {
      timeoutMs: 45_000,
      intervalMs: 5,
      describe: async () => `sink has ${fromAutomation()}; rows ${JSON.stringify(await deliveryStatuses(db, where))}\n${first.output()}`,
    });
    first.child.kill('SIGKILL');
    await first.exited;
    const killedAfterMs = Date.now() - started;
    await waitForWorkerSessionsGone(db);
    await sink.sync();
    const inFlight = new Set(await addressesIn(db, where, 'sending'));
    const atKill = await deliveryStatuses(db, where);
    expect(inFlight.size).toBeLessThanOrEqual(BATCH);
    expect(inFlight.size).toBeGreaterThan(0);
    await sink.setDelay(0);

    // This time the restart comes after the dead worker's leases ran out: the new worker
    // takes the rows back on its first round.
    const leaseEnd = await db('deliveries').where(where).where({ status: 'sending' }).max('locked_until as t').first();
    if (leaseEnd?.t) await sleep(Math.max(0, new Date(leaseEnd.t).getTime() - Date.now() + 100));
    const second = startWorker('worker-4', env);
    await second.ready;
    const restartedAfterMs = Date.now() - started;
    await waitFor(
      'every contact of the automation to be finished with no email left to send',
      async () => {
        const open = await db('automation_contacts').where({ automation_id: automation.id }).whereNot({ state: 'finished' }).count('* as n').first();
        const rows = await deliveryStatuses(db, where);
        return Number(open?.n) === 0 && !rows.queued && !rows.sending && (rows.sent ?? 0) === AUTOMATION_CONTACTS;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 200,
        describe: async () => `rows ${JSON.stringify(await deliveryStatuses(db, where))}\n${second.output()}`,
      },
    );
    const completedAfterMs = Date.now() - started;
    await sink.sync();

    const { counts, duplicates, total } = tally('crash-auto.test');
    expect(few(minus(audience, new Set(counts.keys())))).toEqual(NONE);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
    expect(few(minus(duplicates, inFlight))).toEqual(NONE);
    expect(total).toBe(AUTOMATION_CONTACTS + duplicates.length);
    const stats = await db('automations').where({ id: automation.id }).first('total_triggered', 'total_delivered', 'total_bounces');
    expect(stats).toEqual({ total_triggered: AUTOMATION_CONTACTS, total_delivered: counts.size, total_bounces: 0 });
    expect(await deliveryStatuses(db, where)).toEqual({ sent: AUTOMATION_CONTACTS });
    // Each contact went through the step once: one recipient row per contact.
    const perContact = await db('deliveries').where(where).groupBy('contact_id').havingRaw('count(*) > 1').select('contact_id');
    expect(perContact).toEqual([]);

    expect((await second.signalAndWait('SIGTERM', 15_000)).code).toBe(0);
    report('crash-safety automation', {
      contacts: AUTOMATION_CONTACTS,
      batch: BATCH,
      killedAfterMs,
      rowsAtKill: atKill,
      inFlightAtKill: inFlight.size,
      duplicates: duplicates.length,
      restartedAfterMs,
      completedAfterMs,
    });
  }, SCENARIO_MS);
});
