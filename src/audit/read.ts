import type { Knex } from 'knex';
import { listRows, type Listed, type Paging } from '../http/pagination';
import { KEYS_LABEL } from './record';

/**
 * Reading the audit log (GET /audit-log and the dashboard's Activity page): one account's
 * entries, newest first, filtered by who, what and since when. Every statement names the
 * account (`user_id`), so it is one shard's on Citus.
 */
export interface AuditRecord {
  id: number;
  at: string;
  /** The user who acted (null: the API keys, the CLI, or a user removed since — the label stays). */
  actor_user_id: number | null;
  /** The user's email as it was then, "API keys" or "operator (CLI)". */
  actor: string;
  via: 'api' | 'dashboard' | 'cli';
  address: string | null;
  action: string;
  object_kind: string | null;
  object_id: string | null;
  summary: string;
}

/** Who: a user by id, a user by email (also one removed since: the entries keep the address), or the API keys. */
export type AuditWho = { memberId: number } | { email: string } | { keys: true };

export interface AuditFilter {
  who?: AuditWho;
  /** An exact action (`user.invited`), or a kind's prefix ending with a dot (`single_send.`). */
  action?: string;
  /** Entries at or after this time (ISO 8601). */
  since?: string;
}

/** Entries shown when no page is asked for: the newest. */
export const DEFAULT_ENTRIES = 100;

const COLUMNS = ['id', 'at', 'member_id', 'actor', 'via', 'address', 'action', 'object_kind', 'object_id', 'summary'];

function filtered(db: Knex, userId: number, filter: AuditFilter): Knex.QueryBuilder {
  const q = db('audit_log').where('audit_log.user_id', userId);
  const who = filter.who;
  if (who && 'memberId' in who) q.where('member_id', who.memberId);
  else if (who && 'email' in who) q.whereNotNull('member_id').whereRaw('lower(actor) = ?', [who.email.trim().toLowerCase()]);
  else if (who && 'keys' in who) q.whereNull('member_id').where('actor', KEYS_LABEL);
  if (filter.action?.endsWith('.')) q.whereRaw('starts_with(action, ?)', [filter.action]);
  else if (filter.action) q.where('action', filter.action);
  if (filter.since) q.where('at', '>=', filter.since);
  return q;
}

/** One account's entries, newest first (the newest DEFAULT_ENTRIES unless a page is asked for). */
export async function listAudit(db: Knex, userId: number, filter: AuditFilter = {}, paging?: Paging): Promise<Listed<AuditRecord>> {
  const base = filtered(db, userId, filter);
  const query = base.clone().select(COLUMNS).orderBy([{ column: 'at', order: 'desc' }, { column: 'id', order: 'desc' }]);
  const listed = await listRows<Record<string, unknown>>(paging ? query : query.limit(DEFAULT_ENTRIES), base, paging);
  return { ...listed, rows: listed.rows.map(toRecord) };
}

function toRecord(r: Record<string, unknown>): AuditRecord {
  return {
    id: Number(r.id),
    at: r.at as string,
    actor_user_id: (r.member_id as number | null) ?? null,
    actor: r.actor as string,
    via: r.via as AuditRecord['via'],
    address: (r.address as string | null) ?? null,
    action: r.action as string,
    object_kind: (r.object_kind as string | null) ?? null,
    object_id: (r.object_id as string | null) ?? null,
    summary: r.summary as string,
  };
}
