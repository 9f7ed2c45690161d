import type { Knex } from 'knex';

/**
 * What the worker's hourly retention deletes of the teams' tables (issue 37): audit entries older
 * than AUDIT_RETENTION_DAYS, one-time links past their expiry (used or not), and failed sign-ins
 * older than a day (the per-user hold looks back 10 minutes). Plain DELETEs by time: on Citus the
 * audit log's and the links' run on every shard, the failures' on the coordinator.
 */
export async function purgeTeamRows(db: Knex, auditRetentionDays: number): Promise<{ auditEntries: number; memberTokens: number; signInFailures: number }> {
  const audit = await db.raw(`DELETE FROM audit_log WHERE at < now() - ? * interval '1 day'`, [auditRetentionDays]);
  const tokens = await db.raw(`DELETE FROM member_tokens WHERE expires_at < now()`);
  const failures = await db.raw(`DELETE FROM member_sign_in_failures WHERE failed_at < now() - interval '1 day'`);
  return { auditEntries: audit.rowCount ?? 0, memberTokens: tokens.rowCount ?? 0, signInFailures: failures.rowCount ?? 0 };
}
