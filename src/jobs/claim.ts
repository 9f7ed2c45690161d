import type { Knex } from 'knex';
import type { Claimed, JobTable } from './table';

/**
 * The job runner's claim: the one statement that takes due jobs of every account, for every
 * job table (recipient rows have their own, benchmarked claim in src/delivery/queue.ts). Work
 * that must take cross-account claims apart (a distributed database: docs/scaling.md) changes
 * this function and that one, nothing else.
 *
 * Due jobs, oldest `next_attempt_at` first, are locked with `FOR UPDATE SKIP LOCKED` (two
 * workers never take the same job, and neither waits for the other) and claimed: an attempt is
 * counted and `next_attempt_at` moved to the end of the lease, so a job whose worker died is
 * due again, in the same index walk as queued ones, once its lease runs out. The status stays
 * queued; the attempt number names the claim (src/jobs/fence.ts).
 */
export function claimSql(t: JobTable, withKind: boolean): string {
  const conditions = [`j.status = ${t.states.sql.Queued}`, 'j.next_attempt_at <= now()'];
  if (withKind) {
    if (!t.kindColumn) throw new Error(`claim: ${t.name} holds one kind of job`);
    conditions.push(`j.${t.kindColumn} = :kind`);
  }
  if (t.claimable) conditions.push(t.claimable);
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
    WHERE j.user_id = due.user_id AND j.id = due.id
    RETURNING j.user_id, j.id, j.${t.attempts} AS attempts, ${t.returning}`;
}

/** Claims up to `limit` due jobs of `t` (of one kind, in a table of several) for `leaseMs`. */
export async function claimJobs<Row>(
  db: Knex,
  t: JobTable,
  opts: { kind?: string; limit: number; leaseMs: number },
): Promise<Array<Claimed<Row>>> {
  const bindings: Record<string, string | number> = { limit: opts.limit, leaseMs: opts.leaseMs };
  if (t.kindColumn && opts.kind !== undefined) bindings.kind = opts.kind;
  const { rows } = await db.raw(claimSql(t, 'kind' in bindings), bindings);
  return rows as Array<Claimed<Row>>;
}
