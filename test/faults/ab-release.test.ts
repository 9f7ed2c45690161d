/**
 * An A/B test's decision is one transaction (src/ab/decision.ts): the winner, the test marked
 * releasing, the frozen results and the `single_send.ab_decided` event; the held rest of the
 * audience is then taken to the winner by the workers' claims (src/deliveries/queue.ts). Two kills:
 *
 * 1. A `herald worker` SIGKILLed in the middle of the decision leaves none of it: every held row
 *    still held, the test still testing, no event. The kill lands inside the decision: the test
 *    holds a lock on the test's row, which the decision locks first; the worker's session is seen
 *    waiting on that lock, and then the worker is killed.
 * 2. The next workers (two, racing) decide once; one of them is SIGKILLed while the rest goes out
 *    to the winner. Its claimed rows go out again once their lease ends — the in-flight batch, at
 *    most SEND_BATCH_SIZE messages, is what may reach a recipient twice, as for any send — and no
 *    row is left held: every recipient of the rest gets the winner.
 */
import { makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { createSend as createSendViaApi } from '../helpers/sends';
import { isolatedUrl } from '../setup/isolated';
import { bulkContacts, deliveryStatuses, few, minus, NONE, report, waitForCompleted, waitForWorkerSessionsGone } from './lib/campaign';
import { patient, waitFor } from '../helpers/wait';
import { heraldEnv, requireBuilt, startWorker, useChildren } from './lib/processes';
import { startSink, type Sink } from './lib/sink';

requireBuilt();
useChildren();

const { app, db } = setupApp({}, 'ab_faults');
const RECIPIENTS = 3000;
const TEST_SHARE = 20;

let sink: Sink;
let a: TestAccount;
let env: Record<string, string>;

beforeAll(async () => {
  sink = await startSink(1);
  a = await makeAccount(db, 'AB crash');
  env = heraldEnv(isolatedUrl(testDatabaseUrl(), 'ab_faults'), { SMTP_URL: sink.urls[0] });
});

describe('a worker SIGKILLed in the middle of an A/B send’s decision, and another while the rest goes out to the winner', () => {
  it('decides nothing; the next workers decide once, and every recipient of the rest gets the winner, none left held', async () => {
    const sender = await makeSender(db, a);
    const group = await makeGroup(db, a, 'News');
    const list = await makeContactType(db, a, 'AB crash');
    const audience = await bulkContacts(db, a, list, RECIPIENTS, 'r', 'ab-crash.test');
    const first = startWorker('ab-worker-1', env);
    await first.ready;
    const send = await createSendViaApi(app, db, a, { sender, group, list }, {
      subject: 'Subject A',
      ab_test_type: 'subject',
      'ab_variations[0][subject]': 'Subject B',
      ab_test_percentage: TEST_SHARE,
      ab_winner_criteria: 'open',
      ab_duration_minutes: 1,
    });
    const where = { single_send_id: send.id };
    const testSize = (RECIPIENTS * TEST_SHARE) / 100;
    const held = RECIPIENTS - testSize;
    const job = await waitFor('the test group to be sent and its decision queued', () =>
      db('jobs').where({ user_id: a.id, kind: 'ab_decision' }).whereRaw("(payload->>'singleSendId')::int = ?", [send.id]).first(),
    { timeoutMs: patient(60_000) });
    expect(await deliveryStatuses(db, where)).toEqual({ sent: testSize, held });

    // The test's row locked by the test: the decision waits on it.
    const blocker = await db.transaction();
    await blocker('ab_tests').where(where).forUpdate().first('status');
    try {
      await db('jobs').where({ id: job.id, user_id: a.id }).update({ next_attempt_at: db.fn.now() });
      await waitFor(
        'the worker’s decision to wait on the locked test',
        async () =>
          Number(
            (
              await db.raw(
                `SELECT count(*) AS n FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = 'herald-worker' AND wait_event_type = 'Lock' AND query ILIKE '%from "ab_tests"%for update%'`,
              )
            ).rows[0].n,
          ) > 0,
        { timeoutMs: patient(30_000), intervalMs: 20, describe: () => first.output() },
      );
      first.child.kill('SIGKILL');
      expect((await first.exited).signal).toBe('SIGKILL');
    } finally {
      await blocker.rollback();
    }
    await waitForWorkerSessionsGone(db);

    // Nothing of the decision happened.
    expect(await deliveryStatuses(db, where)).toEqual({ sent: testSize, held });
    expect(await db('ab_tests').where(where).first('status', 'winner')).toEqual({ status: 'testing', winner: null });
    expect(await db('events').where({ ...where, type: 'single_send.ab_decided' })).toHaveLength(0);

    // The job's lease (minutes) is what hands it to another worker; here its end is brought forward.
    // The sink slows down so that the rest is still going out when the second worker is killed.
    await sink.setDelay(10);
    await db('jobs').where({ id: job.id, user_id: a.id }).update({ next_attempt_at: db.fn.now() });
    const second = startWorker('ab-worker-2', env);
    const third = startWorker('ab-worker-3', env);
    await Promise.all([second.ready, third.ready]);
    await waitFor('the rest to be going out to the winner', async () => {
      const sent = await db('deliveries').where({ ...where, ab_phase: 2, status: 'sent' }).count<{ n: string }[]>({ n: '*' });
      return Number(sent[0].n) >= 200 ? true : undefined;
    }, { timeoutMs: patient(60_000), intervalMs: 20, describe: () => second.output() + third.output() });
    second.child.kill('SIGKILL');
    expect((await second.exited).signal).toBe('SIGKILL');
    const heldAtKill = Number((await db('deliveries').where({ ...where, status: 'held' }).count<{ n: string }[]>({ n: '*' }))[0].n);
    expect(heldAtKill).toBeGreaterThan(0);
    await sink.setDelay(0);
    await waitForCompleted(db, send.id, patient(90_000));
    await sink.sync();

    const counts = sink.counts((m) => m.to.endsWith('@ab-crash.test'));
    expect(few(minus(audience, new Set(counts.keys())))).toEqual(NONE);
    const twice = [...counts].filter(([, n]) => n > 1).map(([to]) => to);
    // At most the killed worker's claimed rows (SEND_BATCH_SIZE, 200 by default) went out twice; none of the test group.
    expect(twice.length).toBeLessThanOrEqual(200);
    const testGroup = new Set(await db('deliveries').where({ ...where, ab_phase: 1 }).pluck('email'));
    expect(few(twice.filter((to) => testGroup.has(to)))).toEqual(NONE);
    expect(await deliveryStatuses(db, where)).toEqual({ sent: RECIPIENTS });
    expect(await db('events').where({ ...where, type: 'single_send.ab_decided' })).toHaveLength(1);
    const decided = await db('ab_tests').where(where).first('status', 'decided_by', 'winner', 'releasing');
    expect(decided).toMatchObject({ status: 'decided', releasing: false });
    // The rest, every row of it, went to the winner.
    const winnerId = (await db('single_send_variations').where({ ...where, idx: decided.winner }).first('id')).id;
    expect(await db('deliveries').where({ ...where, ab_phase: 2 }).groupBy('ab_variation_id').select('ab_variation_id', db.raw('count(*)::int AS n'))).toEqual([
      { ab_variation_id: winnerId, n: held },
    ]);

    await third.signalAndWait('SIGTERM', 15_000);
    report('A/B release crash', {
      recipients: RECIPIENTS,
      testSize,
      held,
      heldAtKill,
      decidedBy: decided.decided_by,
      twice: twice.length,
      messages: [...counts.values()].reduce((s, n) => s + n, 0),
    });
  }, patient(240_000));
});
