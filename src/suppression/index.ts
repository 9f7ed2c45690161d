import type { Knex } from 'knex';
import type { DropReason } from '../events/types';

/**
 * The one answer to "may this address of this account get this message?" and the one place
 * that writes what the answer is made of: the account's global unsubscribers, and the
 * recipients of the message's unsubscribe group. Audience fan-out asks it in SQL (an
 * expression over a chunk), the automation engine for a batch, the unsubscribe page and the
 * unsubscribers/groups services write through it. Addresses compare case-insensitively.
 * (Bounces and complaints join here when Herald learns of them: issue "Deliverability".)
 */
export type SuppressionReason = Extract<DropReason, 'unsubscribed' | 'group_unsubscribed'>;

/**
 * A SQL expression: why the address `emailSql` (a column of the caller's query) must not get a
 * message of account `userId` sent under group `groupId` — 'unsubscribed' (global list),
 * 'group_unsubscribed' — or NULL when it may. Index lookups on (user_id, lower(email)).
 */
export function suppressionReasonSql(db: Knex, userId: number, groupId: number | null, emailSql: string): Knex.Raw {
  return db.raw(reasonSql('?', '?', emailSql), [userId, groupId ?? 0, userId]);
}

/** The rule, once: the global list first (it covers every group), then the message's group. */
function reasonSql(userSql: string, groupSql: string, emailSql: string): string {
  return `CASE
      WHEN EXISTS (SELECT 1 FROM global_unsubscribers g WHERE g.user_id = ${userSql} AND lower(g.email_address) = lower(${emailSql}))
        THEN 'unsubscribed'
      WHEN EXISTS (SELECT 1 FROM unsubscribe_group_recipients ug
                   WHERE ug.unsubscribe_groups_id = ${groupSql} AND ug.user_id = ${userSql} AND lower(ug.email_address) = lower(${emailSql}))
        THEN 'group_unsubscribed'
    END`;
}

export interface Candidate {
  userId: number;
  email: string;
  groupId: number | null;
}

/** The same answer for a batch of candidates (the automation engine's due steps): index → reason, refused ones only. */
export async function suppressedAmong(db: Knex, candidates: Candidate[]): Promise<Map<number, SuppressionReason>> {
  const refused = new Map<number, SuppressionReason>();
  if (candidates.length === 0) return refused;
  const { rows } = await db.raw(
    `SELECT v.n, ${reasonSql('v.user_id', 'v.group_id', 'v.email')} AS reason
     FROM json_to_recordset(?::json) AS v(n integer, user_id integer, email text, group_id integer)`,
    [JSON.stringify(candidates.map((c, n) => ({ n, user_id: c.userId, email: c.email, group_id: c.groupId ?? 0 })))],
  );
  for (const r of rows as Array<{ n: number; reason: SuppressionReason | null }>) if (r.reason) refused.set(r.n, r.reason);
  return refused;
}

/**
 * Adds addresses to the account's global list (in the order given, so the last is the newest);
 * those already there, in any case, are skipped. Returns how many were added.
 */
export async function unsubscribeGlobally(db: Knex, userId: number, emails: string[], groupId: number | null = null): Promise<number> {
  const r = await db.raw(
    `INSERT INTO global_unsubscribers (user_id, unsubscribe_groups_id, email_address)
     SELECT ?, ?, a.email FROM unnest(?::text[]) WITH ORDINALITY AS a(email, n) ORDER BY a.n
     ON CONFLICT (user_id, lower(email_address)) DO NOTHING`,
    [userId, groupId, emails],
  );
  return r.rowCount ?? 0;
}

export async function resubscribeGlobally(db: Knex, userId: number, email: string): Promise<void> {
  await db('global_unsubscribers').where('user_id', userId).whereRaw('lower(email_address) = lower(?)', [email]).delete();
}

/** Adds addresses to a group's unsubscribers (the caller has checked the group is the account's). Returns how many were added. */
export async function unsubscribeFromGroup(db: Knex, userId: number, groupId: number, emails: string[]): Promise<number> {
  const r = await db.raw(
    `INSERT INTO unsubscribe_group_recipients (user_id, unsubscribe_groups_id, email_address)
     SELECT ?, ?, a.email FROM unnest(?::text[]) WITH ORDINALITY AS a(email, n) ORDER BY a.n
     ON CONFLICT (unsubscribe_groups_id, lower(email_address), user_id) DO NOTHING`,
    [userId, groupId, emails],
  );
  return r.rowCount ?? 0;
}

export async function resubscribeToGroup(db: Knex, userId: number, groupId: number, email: string): Promise<void> {
  await db('unsubscribe_group_recipients')
    .where({ user_id: userId, unsubscribe_groups_id: groupId })
    .whereRaw('lower(email_address) = lower(?)', [email])
    .delete();
}
