import type { Knex } from 'knex';
import { ofOneAccount } from '../db/per-account';
import { rowsByKeys } from '../deliveries/rows';
import type { MessageEvent } from '../events/types';
import { counterOwners, OWNERS, sourceOfRow, type MessageSource, type SourceColumns } from '../sources';
import type { Counter } from './counters';

/**
 * Each email of an automation keeps the counters of its own messages (`automation_schedules`,
 * EMAIL_COLUMNS), beside its automation's, so a sequence's emails can be compared (GET
 * /reports/automation). Written here for write.ts, from the same events and in the same
 * transaction; read by read.ts `readEmailCounters`.
 */
export const EMAILS = 'automation_schedules';

/**
 * The counters an email keeps (migration 202612090200). Not `deferred`, `dropped` or the bounce
 * kinds: no page compares emails by them, and a dropped message never had an email's row.
 */
export const EMAIL_COUNTERS = ['triggered', 'delivered', 'unique_opens', 'opens', 'bounces', 'unsubscribes', 'unique_clicks', 'total_clicks', 'complaints'] as const satisfies readonly Counter[];
export type EmailCounter = (typeof EMAIL_COUNTERS)[number];
export type EmailCounts = Record<EmailCounter, number>;
/** Their columns are named as a single send's are (the spec's names, Herald's own for the rest). */
export const EMAIL_COLUMNS = Object.fromEntries(EMAIL_COUNTERS.map((c) => [c, OWNERS.single_send.counters[c]])) as Record<EmailCounter, string>;
const isEmailCounter = (c: Counter): c is EmailCounter => (EMAIL_COUNTERS as readonly Counter[]).includes(c);

/** The email record whose own counters a source's messages move too; a single send's are its owner's alone. */
export function emailOf(source: MessageSource | undefined): number | undefined {
  switch (source?.kind) {
    case 'automation_email':
      return source.scheduleId;
    case 'single_send':
    case 'ab_variation':
    case undefined:
      return undefined;
  }
}

export interface EmailAdd {
  user_id: number;
  /** The email's id (`automation_schedules.id`). */
  id: number;
  counts: Partial<EmailCounts>;
}

/** Adds counts to emails, in key order so that two transactions take their row locks in one order. */
export async function addToEmails(trx: Knex.Transaction, adds: EmailAdd[]): Promise<void> {
  const perEmail = new Map<string, { user_id: number; id: number } & EmailCounts>();
  for (const a of adds) {
    const key = `${a.user_id}:${a.id}`;
    const row = perEmail.get(key) ?? { user_id: a.user_id, id: a.id, ...(Object.fromEntries(EMAIL_COUNTERS.map((c) => [c, 0])) as EmailCounts) };
    for (const c of EMAIL_COUNTERS) row[c] += a.counts[c] ?? 0;
    perEmail.set(key, row);
  }
  const rows = [...perEmail.values()].filter((r) => EMAIL_COUNTERS.some((c) => r[c] > 0)).sort((a, b) => a.user_id - b.user_id || a.id - b.id);
  if (rows.length === 0) return;
  await trx.raw(
    `UPDATE ${EMAILS} s SET ${EMAIL_COUNTERS.map((c) => `${EMAIL_COLUMNS[c]} = s.${EMAIL_COLUMNS[c]} + v.${c}`).join(', ')}
     FROM json_to_recordset(?::json) AS v(user_id integer, id integer, ${EMAIL_COUNTERS.map((c) => `${c} integer`).join(', ')})
     WHERE s.id = v.id AND s.user_id = v.user_id${ofOneAccount('s', rows.map((r) => r.user_id))}`,
    [JSON.stringify(rows)],
  );
}

/** Only an automation's messages come from emails of their own (src/sources `automation_email`). */
const mayHaveEmail = (e: MessageEvent) => e.deliveryId !== null && counterOwners(e).some((o) => o.kind === 'automation');

/**
 * What recorded events moved, added to their emails too. An event names its recipient row, not
 * the email, so the rows say which source (email) each message was made from: one lookup per
 * batch, and none for a batch without automation messages.
 */
export async function countEmailEvents(trx: Knex.Transaction, moved: Array<{ event: MessageEvent; counters: Counter[] }>): Promise<void> {
  const theirs = moved.filter((m) => mayHaveEmail(m.event) && m.counters.some(isEmailCounter));
  if (theirs.length === 0) return;
  const keys = [...new Map(theirs.map((m) => [`${m.event.userId}:${m.event.deliveryId}`, { id: m.event.deliveryId, user_id: m.event.userId }])).values()];
  const rows = await rowsByKeys<SourceColumns & { id: string | number; user_id: number }>(trx, keys, ['id', 'user_id', 'single_send_id', 'automation_id', 'automation_schedule_id']);
  const emailOfRow = new Map(rows.map((r) => [`${r.user_id}:${Number(r.id)}`, emailOf(sourceOfRow(r))]));
  const adds: EmailAdd[] = [];
  for (const { event, counters } of theirs) {
    const id = emailOfRow.get(`${event.userId}:${event.deliveryId}`);
    if (id === undefined) continue;
    const counts: Partial<EmailCounts> = {};
    for (const c of counters.filter(isEmailCounter)) counts[c] = (counts[c] ?? 0) + 1;
    adds.push({ user_id: event.userId, id, counts });
  }
  await addToEmails(trx, adds);
}
