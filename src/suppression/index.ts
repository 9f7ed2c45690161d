import type { Knex } from 'knex';
import { softBouncesByEmail } from '../events/reads';
import type { DropReason } from '../events/types';
import { ERASED_PREFIX, erasedHashBindings, erasedHashSql, erasureKey, type ErasureKey } from './erased';

export { ERASED_PREFIX, erasedHashBindings, erasedHashSql, erasureCheck, erasureKey, suppressErased, type ErasureKey } from './erased';

/**
 * The one answer to "may this address of this account get this message?" and the one place
 * that writes what the answer is made of: the account's global unsubscribers, and the
 * recipients of the message's unsubscribe group. Audience fan-out asks it in SQL (joins onto
 * a chunk), the automation engine for a batch, the unsubscribe page and the
 * unsubscribers/groups services write through it. Addresses compare case-insensitively.
 * Bounces, complaints and manual entries are the `suppressions` table (src/bounces/apply.ts
 * and the /suppressions API write it through `suppress`).
 */
export type SuppressionReason = Extract<DropReason, 'unsubscribed' | 'group_unsubscribed' | 'bounced' | 'complained' | 'suppressed'>;

export type SuppressionType = 'bounce' | 'complaint' | 'manual' | 'erased';
/** Which channel reported a bounce or complaint (src/bounces/apply.ts), `api` for a manual entry or an erasure, `recipient` for a recipient's own erasure. */
export type SuppressionSource = 'smtp' | 'dsn' | 'arf' | 'imap' | 'sendgrid' | 'mailgun' | 'postmark' | 'ses' | 'api' | 'recipient';

/**
 * The reason over the joins of joinsSql (see suppressionJoins). With `erased`, an erased
 * address's entry (its keyed hash, erased.ts) refuses it too: the hash is computed for a row
 * only when `sup_k.erased` says the account has erased entries. `'joined'`: the batch form's
 * `sup_e` join (suppressedAmong) found the entry. `userSql` is the account as SQL text without
 * bindings (a literal or a column).
 */
const reasonSql = (userSql: string, emailSql: string, erased: boolean | 'joined') => `CASE
    WHEN sup_s.user_id IS NOT NULL THEN CASE sup_s.type WHEN 'bounce' THEN 'bounced' WHEN 'complaint' THEN 'complained' ELSE 'suppressed' END${
      erased === 'joined'
        ? `
    WHEN sup_e.user_id IS NOT NULL THEN 'suppressed'`
        : erased
        ? `
    WHEN sup_k.erased AND EXISTS (SELECT 1 FROM suppressions sup_e WHERE sup_e.user_id = ${userSql}
      AND lower(sup_e.email) = ('${ERASED_PREFIX}' || encode(sha256(sup_k.ko || sha256(sup_k.ki || convert_to(lower(${emailSql}), 'UTF8'))), 'hex'))) THEN 'suppressed'`
        : ''
    }
    WHEN sup_g.user_id IS NOT NULL THEN 'unsubscribed'
    WHEN sup_ug.user_id IS NOT NULL THEN 'group_unsubscribed'
  END`;

/**
 * The rule over a set of rows, for the caller's query (`erased`: erasureCheck's answer for the
 * account — the key when it has erased entries, whose hashes are then compared too): `joins` are LEFT JOINs onto the row whose
 * address is `emailSql` (a column of the caller's query; they add the aliases `sup_s`, `sup_g`
 * and `sup_ug`), and `reason` is the SQL expression over them — why that address must not get a
 * message of account `userId` sent under group `groupId` ('bounced', 'complained', 'suppressed',
 * 'unsubscribed', 'group_unsubscribed'), or NULL when it may. Write `FROM rows ${joins}` and select
 * `${reason}`. The planner may hash the account's lists once per statement instead of probing
 * their indexes three times per row (audience fan-out, bench/README.md "Fan-out").
 */
export function suppressionJoins(
  db: Knex,
  userId: number,
  groupId: number | null,
  emailSql: string,
  erased: ErasureKey | undefined,
  /** The account in `reason` as SQL (the caller binds it), instead of a literal: for a statement prepared once for every account. */
  reasonUserSql?: string,
): { joins: Knex.Raw; reason: string } {
  if (!Number.isSafeInteger(userId)) throw new Error(`not an account id: ${userId}`);
  const bindings = [userId, userId, groupId ?? 0, userId, ...(erased ? [userId, ...erasedHashBindings(erased)] : [])];
  return { joins: db.raw(joinsSql('?', '?', emailSql, Boolean(erased)), bindings), reason: reasonSql(reasonUserSql ?? String(userId), emailSql, Boolean(erased)) };
}

/**
 * The rule, once: the suppressions first (a complaint is also a global unsubscribe, and the
 * dropped event should say it was a complaint), then the global list (it covers every group),
 * then the message's group. An erased address (erased.ts) is suppressed too: `sup_k` (one row
 * per statement, or per candidate for a batch of several accounts) says whether the account has
 * erased entries (the partial index suppressions_erased_index) and carries the key's HMAC pads for
 * reasonSql. Addresses compare case-insensitively. Each join finds at most one
 * row — each list is unique on (account, lower(address)) (the group's on (group, lower(address),
 * account)) — so the caller's rows are neither multiplied nor lost.
 */
function joinsSql(userSql: string, groupSql: string, emailSql: string, erased: boolean): string {
  return `LEFT JOIN suppressions sup_s ON sup_s.user_id = ${userSql} AND lower(sup_s.email) = lower(${emailSql})
    LEFT JOIN global_unsubscribers sup_g ON sup_g.user_id = ${userSql} AND lower(sup_g.email_address) = lower(${emailSql})
    LEFT JOIN unsubscribe_group_recipients sup_ug
      ON sup_ug.unsubscribe_groups_id = ${groupSql} AND sup_ug.user_id = ${userSql} AND lower(sup_ug.email_address) = lower(${emailSql})${
        erased
          ? `
    CROSS JOIN LATERAL (
      SELECT EXISTS (SELECT 1 FROM suppressions x WHERE x.user_id = ${userSql} AND x.type = 'erased') AS erased, ?::bytea AS ko, ?::bytea AS ki
    ) sup_k`
          : ''
      }`;
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
    // The erased entries by a plain join on the account, hashing every candidate: a batch spans
    // accounts, and Citus plans a join of the recordset with the distributed tables only when each
    // is joined on the account — the single-account form's per-statement check (sup_k, a lateral
    // subquery) is refused there. A batch is the automation engine's due steps: hundreds, not a
    // send's audience, so the hash of each (≈ 18 µs) is no cost worth a second statement.
    `SELECT v.n, ${reasonSql('v.user_id', 'v.email', 'joined')} AS reason
     FROM json_to_recordset(?::json) AS v(n integer, user_id integer, email text, group_id integer)
     ${joinsSql('v.user_id', 'v.group_id', 'v.email', false)}
     LEFT JOIN suppressions sup_e ON sup_e.user_id = v.user_id AND sup_e.type = 'erased' AND lower(sup_e.email) = ${erasedHashSql('v.email')}`,
    [JSON.stringify(candidates.map((c, n) => ({ n, user_id: c.userId, email: c.email, group_id: c.groupId ?? 0 }))), ...erasedHashBindings(await erasureKey(db))],
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

export interface Suppression {
  userId: number;
  email: string;
  type: SuppressionType;
  reason: string;
  diagnostic: string;
  source: SuppressionSource;
  deliveryId?: number | null;
  singleSendId?: number | null;
  automationId?: number | null;
  /** The kept report (bounce_reports.id), if any. */
  reportId?: number | null;
}

/**
 * Adds suppressions; an address already suppressed (in any case, of any type) keeps its first
 * entry. Returns how many were added.
 */
/**
 * The soft-bounce rule's count: how many `bounced` events of kind soft each address had within
 * `days` (this transaction's own included), keyed `<account>:<lower-cased address>`. Whatever
 * reported them — a DSN, a provider, or Herald's own send giving up on 4xx answers — counts.
 */
export async function softBounceCounts(db: Knex, days: number, addresses: Array<{ userId: number; email: string }>): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const byAccount = new Map<number, Set<string>>();
  for (const a of addresses) byAccount.set(a.userId, (byAccount.get(a.userId) ?? new Set()).add(a.email.toLowerCase()));
  // One statement per account (a batch rarely spans many): on Citus each reads one node.
  for (const [userId, emails] of [...byAccount].sort((x, y) => x[0] - y[0])) {
    const rows = await softBouncesByEmail(db, userId, [...emails], days);
    for (const email of emails) counts.set(`${userId}:${email}`, 0);
    for (const r of rows) counts.set(`${userId}:${r.email}`, r.n);
  }
  return counts;
}

export async function suppress(db: Knex, rows: Suppression[]): Promise<number> {
  if (rows.length === 0) return 0;
  const r = await db.raw(
    `INSERT INTO suppressions (user_id, email, type, reason, diagnostic, source, delivery_id, single_send_id, automation_id, report_id)
     SELECT v.user_id, v.email, v.type, v.reason, v.diagnostic, v.source, v.delivery_id, v.single_send_id, v.automation_id, v.report_id
     FROM json_to_recordset(?::json) AS v(user_id integer, email text, type text, reason text, diagnostic text, source text,
       delivery_id bigint, single_send_id integer, automation_id integer, report_id bigint, n bigint)
     ORDER BY v.n
     ON CONFLICT (user_id, lower(email)) DO NOTHING`,
    [
      JSON.stringify(
        rows.map((x, n) => ({
          n,
          user_id: x.userId,
          email: x.email,
          type: x.type,
          reason: x.reason.slice(0, 1000),
          diagnostic: x.diagnostic.slice(0, 2000),
          source: x.source,
          delivery_id: x.deliveryId ?? null,
          single_send_id: x.singleSendId ?? null,
          automation_id: x.automationId ?? null,
          report_id: x.reportId ?? null,
        })),
      ),
    ],
  );
  return r.rowCount ?? 0;
}

/**
 * Lifts the account's suppressions of these addresses (any case), an erased address's entry
 * included (named by its address or by its `erased:` value); others are ignored. Returns how many went.
 */
export async function liftSuppressions(db: Knex, userId: number, emails: string[]): Promise<number> {
  const key = await erasureKey(db);
  return db('suppressions')
    .where('user_id', userId)
    .where((w) =>
      w
        .whereRaw('lower(email) = ANY (?::text[])', [emails.map((e) => e.toLowerCase())])
        .orWhereRaw(`lower(email) IN (SELECT ${erasedHashSql('a')} FROM unnest(?::text[]) a)`, [...erasedHashBindings(key), emails]),
    )
    .delete();
}
