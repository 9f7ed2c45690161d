import { defineJob, enqueue, type QueuedJob } from '../../src/jobs/kind';
import { runDueJobs, type JobDeps, type JobSettings, type JobOutcome } from '../../src/jobs/runner';
import type { Claimed } from '../../src/jobs/table';
import { createLogger } from '../../src/logger';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';

/**
 * The job runner (src/jobs) on the generic `jobs` table, one round at a time as the worker's
 * loops run it (runDueJobs): claim, lease, fencing, backoff, the last attempt, a permanent
 * failure, transactional kinds, SKIP LOCKED between workers. Notification mail and webhook
 * batches run on the same code (test/delivery/events.test.ts, test/delivery/webhooks.test.ts,
 * test/faults/webhook-crash.test.ts). Each test makes kinds of its own names, which no worker runs.
 */
const { db, config } = setupApp();
const deps: JobDeps = { db, config, logger: createLogger('silent') };
let a: TestAccount;
let b: TestAccount;

beforeAll(async () => {
  // One after the other: the tests order what they see by account id (a's is the smaller).
  a = await makeAccount(db, 'Jobs');
  b = await makeAccount(db, 'Other jobs');
});

const SETTINGS: JobSettings = { maxAttempts: 3, retryBaseMs: 60_000, retryMaxMs: 3_600_000, leaseMs: 60_000, concurrency: 5 };
let seq = 0;

type Handler<P> = (deps: JobDeps, job: Claimed<QueuedJob<P>>) => Promise<JobOutcome>;

function kind<P>(handle: Handler<P>, opts: { settings?: Partial<JobSettings>; transactional?: boolean } = {}) {
  return defineJob<P>({
    name: `test.runner-${process.pid}-${++seq}`,
    settings: () => ({ ...SETTINGS, ...opts.settings }),
    handle,
    transactional: opts.transactional,
  });
}

const rows = (name: string) => db('jobs').where({ kind: name }).orderBy('id').select('user_id', 'key', 'payload', 'status', 'attempts', 'last_error');

/** Milliseconds from now until the job is due (negative: overdue). */
async function dueInMs(id: number): Promise<number> {
  const { rows: r } = await db.raw('SELECT extract(epoch FROM next_attempt_at - now()) * 1000 AS ms FROM jobs WHERE id = ?', [id]);
  return Number(r[0].ms);
}

/** As if time had passed: the job is due now. */
const makeDue = (id: number) => db('jobs').where({ id }).update({ next_attempt_at: db.raw("now() - interval '1 millisecond'") });

/** A promise the test resolves when it chooses. */
function gate<T = void>() {
  let open!: (v: T) => void;
  const shut = new Promise<T>((resolve) => (open = resolve));
  return { shut, open };
}

describe('a job kind on the jobs table', () => {
  it('runs what was enqueued once, with its payload, and marks it done', async () => {
    const seen: Array<{ userId: number; payload: unknown; attempts: number }> = [];
    const k = kind<{ n: number }>(async (_d, job) => {
      seen.push({ userId: job.user_id, payload: job.payload, attempts: job.attempts });
      return { ok: true };
    });
    await enqueue(db, k, { userId: a.id, payload: { n: 1 } });
    await enqueue(db, k, { userId: b.id, payload: { n: 2 } });
    expect(await runDueJobs(k, deps)).toBe(2);
    expect(seen.sort((x, y) => x.userId - y.userId)).toEqual([
      { userId: a.id, payload: { n: 1 }, attempts: 1 },
      { userId: b.id, payload: { n: 2 }, attempts: 1 },
    ]);
    expect(await rows(k.name)).toEqual([
      { user_id: a.id, key: null, payload: { n: 1 }, status: 'done', attempts: 1, last_error: null },
      { user_id: b.id, key: null, payload: { n: 2 }, status: 'done', attempts: 1, last_error: null },
    ]);
    expect(await runDueJobs(k, deps)).toBe(0);
    expect(seen).toHaveLength(2);
  });

  it('makes a job with a key once per account and kind', async () => {
    const k = kind(async () => ({ ok: true }));
    const other = kind(async () => ({ ok: true }));
    const first = await enqueue(db, k, { userId: a.id, payload: {}, key: 'send:1' });
    expect(first).toEqual(expect.any(Number));
    expect(await enqueue(db, k, { userId: a.id, payload: { again: true }, key: 'send:1' })).toBeUndefined();
    expect(await enqueue(db, k, { userId: b.id, payload: {}, key: 'send:1' })).toEqual(expect.any(Number));
    expect(await enqueue(db, other, { userId: a.id, payload: {}, key: 'send:1' })).toEqual(expect.any(Number));
    expect((await rows(k.name)).map((r) => [r.user_id, r.key, r.payload])).toEqual([
      [a.id, 'send:1', {}],
      [b.id, 'send:1', {}],
    ]);
    // Done, the key still names it: no second job.
    await runDueJobs(k, deps);
    expect(await enqueue(db, k, { userId: a.id, payload: {}, key: 'send:1' })).toBeUndefined();
  });

  it('leaves a job alone before its time, and claims only its own kind', async () => {
    const handled: string[] = [];
    const k = kind(async (_d, job) => (handled.push(job.kind), { ok: true }));
    const other = kind(async (_d, job) => (handled.push(job.kind), { ok: true }));
    const later = (await enqueue(db, k, { userId: a.id, payload: {}, runAt: new Date(Date.now() + 3_600_000) }))!;
    await enqueue(db, other, { userId: a.id, payload: {} });
    expect(await runDueJobs(k, deps)).toBe(0);
    expect(await dueInMs(later)).toBeGreaterThan(3_500_000);
    await makeDue(later);
    expect(await runDueJobs(k, deps)).toBe(1);
    expect(handled).toEqual([k.name]);
    expect(await runDueJobs(other, deps)).toBe(1);
    expect(handled).toEqual([k.name, other.name]);
  });

  it('is enqueued in the caller’s transaction: rolled back, there is no job', async () => {
    const k = kind(async () => ({ ok: true }));
    await db
      .transaction(async (trx) => {
        await enqueue(trx, k, { userId: a.id, payload: {} });
        throw new Error('the change that called for the job failed');
      })
      .catch(() => undefined);
    expect(await rows(k.name)).toEqual([]);
  });

  it('refuses a kind name the table would refuse', () => {
    expect(() => defineJob({ name: 'Bad Name', settings: () => SETTINGS, handle: async () => ({ ok: true }) })).toThrow(/a name is/);
  });
});

describe('retries', () => {
  it('retries a failed attempt after the backoff (base × 2^(n−1), plus up to a quarter), then gives it up after the last attempt', async () => {
    let calls = 0;
    const k = kind(async () => ({ ok: false, error: `failure ${++calls}` }));
    const id = (await enqueue(db, k, { userId: a.id, payload: {} }))!;
    expect(await runDueJobs(k, deps)).toBe(1);
    expect(await rows(k.name)).toMatchObject([{ status: 'queued', attempts: 1, last_error: 'failure 1' }]);
    const first = await dueInMs(id);
    expect(first).toBeGreaterThan(60_000 - 5_000);
    expect(first).toBeLessThanOrEqual(75_000);
    expect(await runDueJobs(k, deps)).toBe(0);

    await makeDue(id);
    expect(await runDueJobs(k, deps)).toBe(1);
    expect(await rows(k.name)).toMatchObject([{ status: 'queued', attempts: 2, last_error: 'failure 2' }]);
    const second = await dueInMs(id);
    expect(second).toBeGreaterThan(120_000 - 5_000);
    expect(second).toBeLessThanOrEqual(150_000);

    await makeDue(id);
    expect(await runDueJobs(k, deps)).toBe(1);
    expect(await rows(k.name)).toMatchObject([{ status: 'failed', attempts: 3, last_error: 'failure 3' }]);
    await makeDue(id);
    expect(await runDueJobs(k, deps)).toBe(0);
    expect(calls).toBe(3);
  });

  it('spreads the retries of jobs that failed together (jitter)', async () => {
    const k = kind(async () => ({ ok: false, error: 'down' }), { settings: { concurrency: 20 } });
    for (let i = 0; i < 20; i += 1) await enqueue(db, k, { userId: a.id, payload: { i } });
    expect(await runDueJobs(k, deps)).toBe(20);
    const { rows: due } = await db.raw('SELECT count(DISTINCT next_attempt_at)::int AS n, extract(epoch FROM max(next_attempt_at) - min(next_attempt_at)) AS spread FROM jobs WHERE kind = ?', [k.name]);
    expect(due[0].n).toBeGreaterThan(10);
    expect(Number(due[0].spread)).toBeGreaterThan(1);
    expect(Number(due[0].spread)).toBeLessThan(16);
  });

  it('fails a permanent failure at once, keeping the columns the outcome set', async () => {
    const k = kind(async () => ({ ok: false, permanent: true, error: 'no such send', set: { payload: JSON.stringify({ reason: 'gone' }) } }));
    await enqueue(db, k, { userId: a.id, payload: { send: 9 } });
    await runDueJobs(k, deps);
    expect(await rows(k.name)).toMatchObject([{ status: 'failed', attempts: 1, last_error: 'no such send', payload: { reason: 'gone' } }]);
  });

  it('counts a handler that throws as a failed attempt, with its message', async () => {
    const k = kind(async () => {
      throw new Error('the handler broke');
    });
    await enqueue(db, k, { userId: a.id, payload: {} });
    expect(await runDueJobs(k, deps)).toBe(1);
    expect(await rows(k.name)).toMatchObject([{ status: 'queued', attempts: 1, last_error: 'the handler broke' }]);
  });
});

describe('claims', () => {
  it('lease a job to its worker; once the lease runs out another takes it over, and the late worker’s outcome applies to nothing', async () => {
    const late = gate<JobOutcome>();
    const started = gate();
    const k = kind<{ n: number }>(async (_d, job) => {
      if (job.attempts === 1) {
        started.open();
        return late.shut;
      }
      return { ok: true };
    });
    const id = (await enqueue(db, k, { userId: a.id, payload: { n: 1 } }))!;
    const stalled = runDueJobs(k, deps);
    await started.shut;
    // Claimed: still queued, the attempt counted, due again only when the lease ends.
    expect(await rows(k.name)).toMatchObject([{ status: 'queued', attempts: 1 }]);
    expect(await dueInMs(id)).toBeGreaterThan(50_000);
    expect(await runDueJobs(k, deps)).toBe(0);

    // The worker stalls past its lease: another claims the job (attempt 2) and finishes it.
    await makeDue(id);
    expect(await runDueJobs(k, deps)).toBe(1);
    expect(await rows(k.name)).toMatchObject([{ status: 'done', attempts: 2, last_error: null }]);

    // The stalled worker comes back with a failure: fenced off by the attempt number.
    late.open({ ok: false, error: 'too late', set: { payload: JSON.stringify({ overwritten: true }) } });
    expect(await stalled).toBe(1);
    expect(await rows(k.name)).toMatchObject([{ status: 'done', attempts: 2, last_error: null, payload: { n: 1 } }]);
  });

  it('never gives one job to two workers at once (FOR UPDATE SKIP LOCKED)', async () => {
    const calls = new Map<number, number>();
    const k = kind(
      async (_d, job) => {
        calls.set(job.id, (calls.get(job.id) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 10));
        return { ok: true };
      },
      { settings: { concurrency: 4 } },
    );
    for (let i = 0; i < 40; i += 1) await enqueue(db, k, { userId: i % 2 ? a.id : b.id, payload: { i } });
    const worker = async () => {
      let claimed = 0;
      for (let n = await runDueJobs(k, deps); n > 0; n = await runDueJobs(k, deps)) claimed += n;
      return claimed;
    };
    const perWorker = await Promise.all([worker(), worker(), worker()]);
    expect(perWorker.reduce((x, y) => x + y, 0)).toBe(40);
    expect(calls.size).toBe(40);
    expect([...calls.values()].every((n) => n === 1)).toBe(true);
    expect(new Set((await rows(k.name)).map((r) => `${r.status}/${r.attempts}`))).toEqual(new Set(['done/1']));
  });
});

describe('a transactional kind', () => {
  const followUp = () => kind(async () => ({ ok: true }));

  it('commits the handler’s writes with the outcome, and holds the job while it runs: no second worker takes it, even past its lease', async () => {
    const next = followUp();
    const inside = gate();
    const release = gate();
    let calls = 0;
    const k = kind(
      async ({ db: trx }, job) => {
        calls += 1;
        await enqueue(trx, next, { userId: job.user_id, payload: { after: job.id } });
        inside.open();
        await release.shut;
        return { ok: true };
      },
      // A lease that runs out while the handler still runs.
      { transactional: true, settings: { leaseMs: 1 } },
    );
    const id = (await enqueue(db, k, { userId: a.id, payload: {} }))!;
    const running = runDueJobs(k, deps);
    await inside.shut;
    // Not visible before the outcome commits.
    expect(await rows(next.name)).toEqual([]);
    // Overdue, but locked by the transaction of the worker that runs it: another worker passes it by.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await dueInMs(id)).toBeLessThan(0);
    expect(await runDueJobs(k, deps)).toBe(0);
    release.open();
    await running;
    expect(calls).toBe(1);
    expect(await rows(k.name)).toMatchObject([{ status: 'done', attempts: 1 }]);
    expect(await rows(next.name)).toMatchObject([{ user_id: a.id, payload: { after: id } }]);
  });

  it('undoes the writes of a handler that throws, and still counts the failed attempt', async () => {
    const next = followUp();
    const k = kind(
      async ({ db: trx }, job) => {
        await enqueue(trx, next, { userId: job.user_id, payload: {} });
        throw new Error('decision failed');
      },
      { transactional: true },
    );
    await enqueue(db, k, { userId: a.id, payload: {} });
    expect(await runDueJobs(k, deps)).toBe(1);
    expect(await rows(next.name)).toEqual([]);
    expect(await rows(k.name)).toMatchObject([{ status: 'queued', attempts: 1, last_error: 'decision failed' }]);
  });
});
