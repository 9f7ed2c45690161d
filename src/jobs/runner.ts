import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { JobStateName } from '../states';
import { retryDelay } from './backoff';
import { claimJobs, dueJobs } from './claim';
import { claimPerAccount } from '../db/per-account';
import { fenceSql } from './fence';
import type { Claimed, Columns, JobTable } from './table';

/**
 * The job runner (docs/decisions.md, "Job runner"): background work other than sending —
 * notification mail, webhook batches, and every kind of job the `jobs` table holds — is claimed,
 * leased, fenced, retried and finished by this one piece of code. A kind is its handler and its
 * settings; the worker runs each kind in a loop of its own (src/worker/worker.ts).
 */
export interface JobSettings {
  /** Attempts before a job that keeps failing is given up (failed). */
  maxAttempts: number;
  /** The first retry's delay; it doubles with each attempt (src/jobs/backoff.ts). */
  retryBaseMs: number;
  /** Where the doubling stops. */
  retryMaxMs: number;
  /** How long a claimed job stays its worker's before another may take it over: longer than one attempt can take. */
  leaseMs: number;
  /** Jobs one worker process claims at once and runs side by side. */
  concurrency: number;
  /** How often the kind's idle loop looks for due jobs (default WORKER_POLL_MS). */
  pollMs?: number;
}

/** What the worker hands every handler. */
export interface JobDeps {
  db: Knex;
  config: Config;
  logger: Logger;
}

/**
 * What became of one attempt. `ok`: the job is done. Otherwise it is retried with backoff until
 * its kind's last attempt, then failed; a `permanent` failure fails it at once. `set` writes
 * columns of the job's own with the outcome (what is left to do, an answer's status …).
 */
export type JobOutcome = { ok: true; set?: Columns } | { ok: false; error: string; permanent?: boolean; set?: Columns };

export interface JobKind<Job, D extends JobDeps = JobDeps> {
  /** The kind's name: its loop's name in the worker and the logs, and its `kind` value in a table of several. */
  readonly name: string;
  readonly table: JobTable;
  settings(config: Config): JobSettings;
  /**
   * Does one attempt. A throw counts as a failed attempt (its message kept as the error). With
   * `transactional`, `deps.db` is the transaction the outcome is written in.
   */
  handle(deps: D, job: Claimed<Job>): Promise<JobOutcome>;
  /**
   * The handler's writes and the outcome commit together, and only while the claim holds (the
   * job row is locked and its attempt checked first): work done in the database happens exactly
   * once, however many workers stall, crash or race. Handlers with effects outside the database
   * (mail, HTTP) are at-least-once instead and must not hold a transaction open over them.
   */
  readonly transactional?: boolean;
  /** Runs in the outcome's transaction once the outcome applied (the claim still held), with the state it wrote. */
  recorded?(trx: Knex.Transaction, deps: D, job: Claimed<Job>, outcome: JobOutcome, state: JobStateName): Promise<void>;
}

/**
 * One round of a kind: claims up to its concurrency of due jobs and runs them side by side.
 * Returns how many were claimed (0: nothing was due).
 */
export async function runDueJobs<Job, D extends JobDeps>(kind: JobKind<Job, D>, deps: D): Promise<number> {
  const settings = kind.settings(deps.config);
  const kindName = kind.table.kindColumn ? kind.name : undefined;
  const jobs: Array<Claimed<Job>> = [];
  // On Citus one account's jobs at a time, the accounts with jobs due longest first (src/db/per-account.ts).
  await claimPerAccount(deps.db, dueJobs(kind.table, kindName), settings.concurrency, async (userId, limit) => {
    const claimed = await claimJobs<Job>(deps.db, kind.table, { kind: kindName, limit, leaseMs: settings.leaseMs, userId });
    jobs.push(...claimed);
    return claimed.length;
  });
  await Promise.all(jobs.map((job) => attempt(kind, deps, settings, job)));
  return jobs.length;
}

async function attempt<Job, D extends JobDeps>(kind: JobKind<Job, D>, deps: D, settings: JobSettings, job: Claimed<Job>): Promise<void> {
  const log = { kind: kind.name, job: job.id, attempt: job.attempts };
  // A handler that throws has failed this attempt: its error is kept and the job retried like any failure.
  const failed = (err: unknown): JobOutcome => {
    deps.logger.warn({ ...log, err }, 'job attempt failed');
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  };
  try {
    if (!kind.transactional) {
      await record(kind, deps, settings, job, await kind.handle(deps, job).catch(failed));
      return;
    }
    await deps.db.transaction(async (trx) => {
      // Locked and checked first: a worker that lost its claim does nothing, and while this one
      // holds the row no other worker can claim it (SKIP LOCKED passes it by).
      if (!(await holdClaim(trx, kind.table, job))) return;
      // The handler's writes in a savepoint: a throw undoes them, and the failure is still recorded.
      const outcome = await trx.transaction((handlerTrx) => kind.handle({ ...deps, db: handlerTrx }, job)).catch(failed);
      await record(kind, { ...deps, db: trx }, settings, job, outcome, trx);
    });
  } catch (err) {
    // The database did not take the outcome: the job is due again once its lease runs out.
    deps.logger.warn({ ...log, err }, 'job outcome not recorded; retried after its lease');
  }
}

/** Locks the claimed row when the claim still holds it. */
async function holdClaim(trx: Knex.Transaction, t: JobTable, job: Claimed<unknown>): Promise<boolean> {
  const { rows } = await trx.raw(`SELECT 1 FROM ${t.name} j WHERE j.user_id = ? AND j.id = ? AND ${fenceSql('j', t.fence, '?')} FOR UPDATE`, [
    job.user_id,
    job.id,
    job.attempts,
  ]);
  return rows.length > 0;
}

/**
 * Writes an attempt's outcome under the claim's fence: done, failed (permanent, or the last
 * attempt), or queued again after the backoff. Returns whether it applied.
 */
async function record<Job, D extends JobDeps>(
  kind: JobKind<Job, D>,
  deps: D,
  settings: JobSettings,
  job: Claimed<Job>,
  outcome: JobOutcome,
  trx?: Knex.Transaction,
): Promise<boolean> {
  const t = kind.table;
  const state: JobStateName = outcome.ok ? 'Done' : outcome.permanent || job.attempts >= settings.maxAttempts ? 'Failed' : 'Queued';
  const write = async (db: Knex | Knex.Transaction): Promise<boolean> => {
    const delay = state === 'Queued' ? retryDelay(job.attempts, { baseMs: settings.retryBaseMs, maxMs: settings.retryMaxMs }) : 0;
    const changed = await db(t.name)
      .where({ user_id: job.user_id, id: job.id })
      .whereRaw(fenceSql(t.name, t.fence, '?'), [job.attempts])
      .update({
        ...outcome.set,
        status: t.states.named[state],
        [t.lastError]: outcome.ok ? null : outcome.error.slice(0, 2000),
        next_attempt_at: db.raw("now() + ? * interval '1 millisecond'", [delay]),
        ...(t.touched ? { [t.touched]: db.fn.now() } : {}),
      });
    if (changed && kind.recorded) await kind.recorded(db as Knex.Transaction, deps, job, outcome, state);
    return changed > 0;
  };
  if (trx) return write(trx);
  return kind.recorded ? deps.db.transaction(write) : write(deps.db);
}
