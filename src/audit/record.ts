import type { Knex } from 'knex';
import type { Actor } from '../context';

/**
 * The audit log's one writer (issue 37; table `audit_log`, docs/decisions.md "Teams"). Every change
 * made through the API or the dashboard writes one entry: who (a user, or the API keys), from which
 * client address, the action (a fixed name, `<object kind>.<verb>`: AUDIT_ACTIONS), the object (kind
 * and id or utr) and a short summary with no secrets and no message bodies. Entries are never
 * edited or deleted through Herald; the worker deletes those older than AUDIT_RETENTION_DAYS.
 */
export interface AuditEntry {
  action: string;
  objectKind?: string | null;
  objectId?: string | number | null;
  /** A short line: names, counts, the role given. Never a secret, a body or a whole record. */
  summary?: string;
}

/** Longest summary kept (the rest is cut with an ellipsis). */
export const SUMMARY_MAX = 500;

/** Keys' label in the log. */
export const KEYS_LABEL = 'API keys';

/** The actor of the account's keys (API requests, the CLI, a dashboard session opened with the keys). */
export function keysActor(via: Actor['via'], address: string | null): Actor {
  return { memberId: null, role: 'owner', label: KEYS_LABEL, via, address };
}

export function clip(summary: string): string {
  const oneLine = summary.replace(/\s+/g, ' ').trim();
  return oneLine.length > SUMMARY_MAX ? `${oneLine.slice(0, SUMMARY_MAX - 1)}…` : oneLine;
}

/** Writes one entry for `userId`'s account (in `db`, which may be the change's own transaction). */
export async function recordAudit(db: Knex, userId: number, actor: Actor, entry: AuditEntry): Promise<void> {
  await db('audit_log').insert({
    user_id: userId,
    member_id: actor.memberId,
    actor: actor.label,
    via: actor.via,
    address: actor.address,
    action: entry.action,
    object_kind: entry.objectKind ?? null,
    object_id: entry.objectId === undefined || entry.objectId === null ? null : String(entry.objectId),
    summary: clip(entry.summary ?? ''),
  });
}
