/**
 * An A/B test's decision is one transaction (src/ab/decision.ts): the winner, the release of the
 * held rest of the audience to it, the frozen results and the `single_send.ab_decided` event. A
 * `herald worker` SIGKILLed in the middle of the release leaves none of it: every held row still
 * held, the test still testing. The next workers (two, racing) decide once and release every
 * held row once: every recipient gets exactly one message, none is left held.
 *
 * The kill must land inside the release, not before or after it: the test holds a row lock on
 * one held row, so the release's UPDATE (which has already written the rows before it) waits on
 * it; the worker's session is seen waiting on that lock, and then the worker is killed.
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

describe('a worker SIGKILLed in the middle of releasing an A/B send’s held rows to the winner', () => {
  it('releases nothing; the next workers decide once and every recipient gets exactly one message', async () => {
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

    // One held row locked by the test: the release will wait on it, halfway through its UPDATE.
    const blocker = await db.transaction();
    const [locked] = await blocker('deliveries').where({ ...where, status: 'held' }).orderBy('id', 'desc').limit(1).forUpdate().pluck('id');
    try {
      await db('jobs').where({ id: job.id, user_id: a.id }).update({ next_attempt_at: db.fn.now() });
      await waitFor(
        'the worker’s release to wait on the locked row',
        async () =>
          Number(
            (
              await db.raw(
                `SELECT count(*) AS n FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = 'herald-worker' AND wait_event_type = 'Lock' AND query ILIKE 'update "deliveries"%'`,
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
    expect(locked).toBeDefined();

    // Nothing of the decision happened.
    expect(await deliveryStatuses(db, where)).toEqual({ sent: testSize, held });
    expect(await db('ab_tests').where(where).first('status', 'winner')).toEqual({ status: 'testing', winner: null });
    expect(await db('events').where({ ...where, type: 'single_send.ab_decided' })).toHaveLength(0);

    // The job's lease (minutes) is what hands it to another worker; here its end is brought forward.
    await db('jobs').where({ id: job.id, user_id: a.id }).update({ next_attempt_at: db.fn.now() });
    const second = startWorker('ab-worker-2', env);
    const third = startWorker('ab-worker-3', env);
    await Promise.all([second.ready, third.ready]);
    await waitForCompleted(db, send.id, patient(90_000));
    await sink.sync();

    const counts = sink.counts((m) => m.to.endsWith('@ab-crash.test'));
    expect(few(minus(audience, new Set(counts.keys())))).toEqual(NONE);
    expect(few([...counts].filter(([, n]) => n > 1).map(([to]) => to))).toEqual(NONE);
    expect(await deliveryStatuses(db, where)).toEqual({ sent: RECIPIENTS });
    expect(await db('events').where({ ...where, type: 'single_send.ab_decided' })).toHaveLength(1);
    const decided = await db('ab_tests').where(where).first('status', 'decided_by');
    expect(decided.status).toBe('decided');
    expect(await db('deliveries').where({ ...where, ab_phase: 2 }).count<{ n: number }[]>({ n: '*' })).toEqual([{ n: held }]);

    await Promise.all([second.signalAndWait('SIGTERM', 15_000), third.signalAndWait('SIGTERM', 15_000)]);
    report('A/B release crash', { recipients: RECIPIENTS, testSize, held, decidedBy: decided.decided_by, messages: [...counts.values()].reduce((s, n) => s + n, 0) });
  }, patient(240_000));
});
