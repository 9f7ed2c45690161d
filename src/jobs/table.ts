import type { Knex } from 'knex';
import { jobStatus, type JobStateName, type Machine } from '../states';
import type { Fence } from './fence';

/**
 * A table the job runner claims from (docs/decisions.md, "Job runner"). Every job table has the
 * same few columns — `user_id` and `id` (its primary key), `status` (queued, done, failed under
 * the table's own words), an attempt counter, `next_attempt_at` (when the job is due; while it
 * is claimed, the end of the lease) and a last-error column — and whatever else its jobs carry.
 */
export interface JobTable {
  readonly name: string;
  /** The table's state machine (src/states.ts) under the names every job table shares. */
  readonly states: Machine<JobStateName, string>;
  /** The attempt counter column. */
  readonly attempts: string;
  /** The column that names a job's kind, in a table of several kinds. */
  readonly kindColumn?: string;
  /** What a claimed job carries besides user_id, id and attempts: SQL over the claimed row `j`. */
  readonly returning: string;
  /**
   * A condition a due job must also meet to be claimed: SQL over the row `j`, constants only,
   * naming the job's account as `account` (`j.user_id`, or on Citus the claim's account as a
   * value, so every table in the claim is named with it: src/jobs/claim.ts).
   */
  readonly claimable?: (account: string) => string;
  /** A column every write sets to now() (the claim, the outcome), when the table keeps one. */
  readonly touched?: string;
  readonly lastError: string;
  /** The claim's fence (src/jobs/fence.ts): claimed jobs stay queued, named by their attempt. */
  readonly fence: Fence;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** A job table, checked once when its module loads: names that go into SQL text are plain identifiers. */
export function jobTable(t: Omit<JobTable, 'fence'>): JobTable {
  for (const name of [t.name, t.attempts, t.kindColumn, t.touched, t.lastError]) {
    if (name !== undefined && !IDENTIFIER.test(name)) throw new Error(`job table: ${JSON.stringify(name)} is not a plain identifier`);
  }
  // The runner's moves (a retry, and each final state) must be moves the machine allows.
  const { Queued, Done, Failed } = t.states.named;
  for (const to of [Queued, Done, Failed]) t.states.move(Queued, to);
  return { ...t, fence: { claimedSql: t.states.sql.Queued, attempts: t.attempts } };
}

/** A claimed job: its key, the attempt its claim counted, and the columns its table returns. */
export type Claimed<Row> = Row & { user_id: number; id: number; attempts: number };

/** Columns a job's outcome writes besides the runner's own (a raw expression where it must be). */
export type Columns = Record<string, Knex.Value | Knex.Raw>;

/** The generic table of job kinds that need no table of their own (src/jobs/kind.ts). */
export const JOBS = jobTable({
  name: 'jobs',
  states: jobStatus,
  attempts: 'attempts',
  kindColumn: 'kind',
  returning: 'j.kind, j.key, j.payload',
  touched: 'updated_at',
  lastError: 'last_error',
});
