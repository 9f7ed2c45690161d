import type { Knex } from 'knex';
import type { DueWork } from '../db/per-account';
import type { Claimed, JobTable } from './table';

/**
 * The job runner's claim: the one statement that takes due jobs of every account, for every
 * job table (recipient rows have their own, benchmarked claim in src/deliveries/queue.ts). On
 * Citus, which runs `FOR UPDATE` only within one shard, the same statement takes one account's
 * jobs (`byAccount`: the account as a value for every table in it); the runner goes through the
 * accounts with due jobs (src/db/per-account.ts, `dueJobs` below).
 *
 * Due jobs, oldest `next_attempt_at` first, are locked with `FOR UPDATE SKIP LOCKED` (two
 * workers never take the same job, and neither waits for the other) and claimed: an attempt is
 * counted and `next_attempt_at` moved to the end of the lease, so a job whose worker died is
 * due again, in the same index walk as queued ones, once its lease runs out. The status stays
 * queued; the attempt number names the claim (src/jobs/fence.ts).
 */
export function claimSql(t: JobTable, withKind: boolean, byAccount = false): string {
  const conditions = dueConditions(t, withKind ? ':kind' : undefined, byAccount ? ':userId' : 'j.user_id');
  if (byAccount) conditions.push('j.user_id = :userId');
  return `
    UPDATE ${t.name} j
    SET ${t.attempts} = j.${t.attempts} + 1, next_attempt_at = now() + :leaseMs * interval '1 millisecond'${t.touched ? `, ${t.touched} = now()` : ''}
    FROM (
      SELECT j.user_id, j.id FROM ${t.name} j
      WHERE ${conditions.join(' AND ')}
      ORDER BY j.next_attempt_at
      LIMIT :limit
      FOR UPDATE SKIP LOCKED
    ) due
    WHERE j.user_id = due.user_id AND j.id = due.id${byAccount ? ' AND j.user_id = :userId' : ''}
    RETURNING j.user_id, j.id, j.${t.attempts} AS attempts, ${t.returning}`;
}

/** What makes a job of `t` (alias `j`) due; `account` is how its `claimable` names the job's account. */
function dueConditions(t: JobTable, kindParam: string | undefined, account: string): string[] {
  const conditions = [`j.status = ${t.states.sql.Queued}`, 'j.next_attempt_at <= now()'];
  if (kindParam) {
    if (!t.kindColumn) throw new Error(`claim: ${t.name} holds one kind of job`);
    conditions.push(`j.${t.kindColumn} = ${kindParam}`);
  }
  if (t.claimable) conditions.push(t.claimable(account));
  return conditions;
}

/** The due jobs of `t` (of one kind, in a table of several), for the list of accounts with due work on Citus. */
export function dueJobs(t: JobTable, kind?: string): DueWork {
  const withKind = Boolean(t.kindColumn && kind !== undefined);
  return {
    from: `${t.name} j`,
    where: dueConditions(t, withKind ? '?' : undefined, 'j.user_id').join(' AND '),
    bindings: withKind ? [kind!] : [],
    account: 'j.user_id',
    due: 'j.next_attempt_at',
  };
}

/** Claims up to `limit` due jobs of `t` (of one kind, in a table of several) for `leaseMs`; of one account with `userId`. */
export async function claimJobs<Row>(
  db: Knex,
  t: JobTable,
  opts: { kind?: string; limit: number; leaseMs: number; userId?: number },
): Promise<Array<Claimed<Row>>> {
  const bindings: Record<string, string | number> = { limit: opts.limit, leaseMs: opts.leaseMs };
  if (t.kindColumn && opts.kind !== undefined) bindings.kind = opts.kind;
  if (opts.userId !== undefined) bindings.userId = opts.userId;
  const { rows } = await db.raw(claimSql(t, 'kind' in bindings, opts.userId !== undefined), bindings);
  return rows as Array<Claimed<Row>>;
}
