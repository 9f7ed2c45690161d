import type { Knex } from 'knex';
import type { JobDeps, JobKind, JobSettings, JobOutcome } from './runner';
import { JOBS, type Claimed } from './table';

/**
 * Job kinds of the generic `jobs` table: a kind is a name, its settings and its handler, and
 * needs no table or claim of its own (docs/decisions.md, "Job runner"):
 *
 *   export const decideWinner = defineJob<{ singleSendId: number }, WorkerDeps>({
 *     name: 'ab_decision',
 *     transactional: true,
 *     settings: (c) => ({ maxAttempts: 5, retryBaseMs: 60_000, retryMaxMs: 3600_000, leaseMs: 60_000, concurrency: 2 }),
 *     handle: async ({ db }, job) => { …decide job.payload.singleSendId with db…; return { ok: true }; },
 *   });
 *   await enqueue(trx, decideWinner, { userId, payload: { singleSendId }, runAt, key: `send:${id}` });
 *
 * and the kind added to the worker's list of loops (src/worker/worker.ts).
 */
export interface QueuedJob<P> {
  kind: string;
  key: string | null;
  payload: P;
}

export interface JobDefinition<P, D extends JobDeps> {
  /** `[a-z][a-z0-9_.-]*`, at most 64 characters (the table's CHECK). */
  name: string;
  settings(config: JobDeps['config']): JobSettings;
  handle(deps: D, job: Claimed<QueuedJob<P>>): Promise<JobOutcome>;
  transactional?: boolean;
}

const NAME = /^[a-z][a-z0-9_.-]{0,63}$/;

export function defineJob<P, D extends JobDeps = JobDeps>(def: JobDefinition<P, D>): JobKind<QueuedJob<P>, D> {
  if (!NAME.test(def.name)) throw new Error(`job kind ${JSON.stringify(def.name)}: a name is [a-z][a-z0-9_.-]*, at most 64 characters`);
  return { ...def, table: JOBS };
}

/**
 * Queues a job of `kind` for an account, due at `runAt` (at once when omitted). Pass the
 * transaction of the change that calls for the job, so that both commit or neither does. With a
 * `key`, the account has one job of this kind and key, ever (until retention purges it): another
 * enqueue of the same key changes nothing. Returns the new job's id, or undefined when the key
 * was taken.
 */
export async function enqueue<P, D extends JobDeps>(
  db: Knex,
  kind: JobKind<QueuedJob<P>, D>,
  job: { userId: number; payload: P; runAt?: Date; key?: string },
): Promise<number | undefined> {
  if (kind.table !== JOBS) throw new Error(`enqueue: ${kind.name} is not a kind of the jobs table`);
  const { rows } = await db.raw(
    `INSERT INTO jobs (user_id, kind, key, payload, next_attempt_at)
     VALUES (?, ?, ?, ?::jsonb, coalesce(?::timestamptz, now()))
     ON CONFLICT (user_id, kind, key) WHERE key IS NOT NULL DO NOTHING
     RETURNING id`,
    [job.userId, kind.name, job.key ?? null, JSON.stringify(job.payload ?? {}), job.runAt?.toISOString() ?? null],
  );
  return (rows[0]?.id as number | undefined) ?? undefined;
}
