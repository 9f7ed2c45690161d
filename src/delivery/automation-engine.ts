import type { Knex } from 'knex';
import type { Config } from '../config';
import { recordMessageEvents } from '../events/record';
import type { MessageEvent } from '../events/types';
import type { Logger } from '../logger';
import { sourceOfRow, type SourceColumns } from '../sources';
import { countQueued } from '../statistics';
import { suppressedAmong, type SuppressionReason } from '../suppression';
import { loadRuleFields, matchingContacts, storedRules, type SegmentRow } from '../contacts/segments.sql';
import { claimPerAccount, ofAccount, ofOneAccount, whereOfAccount } from '../db/per-account';
import { queueAutomationEmails } from '../deliveries/rows';
import { AutomationStatus, AutomationType, ExitCriteria, ProgressState, progressState } from '../states';

/**
 * Automations run in the delivery worker, in two set-based steps per round:
 *  1. entry: live automations whose target changed since their last scan take in its
 *     members (custom: everyone; welcome: only contacts that joined after go-live) as
 *     progress rows, one `INSERT … SELECT … ON CONFLICT DO NOTHING` per automation;
 *  2. due steps: progress rows whose next email is due (live automations only, so a paused
 *     one holds them) are claimed with SKIP LOCKED; each becomes a recipient row in
 *     `deliveries` (unique per email and address: one row each) and moves to the next email.
 * Sending, tracking and unsubscribing are the single sends' pipeline.
 */
export interface EngineDeps {
  config: Config;
  db: Knex;
  logger: Logger;
}

const SCAN_INTERVAL_MS = 2000;
const DUE_BATCH = 500;

interface ScheduleStep {
  id: number;
  waiting_period: number;
  waiting_type: 'instantly' | 'days' | 'hours';
}

/** The wait before an email, in seconds (`instantly` = none). */
export function waitSeconds(s: ScheduleStep): number {
  if (s.waiting_type === 'instantly') return 0;
  return s.waiting_period * (s.waiting_type === 'days' ? 86_400 : 3600);
}

const { sql: P } = progressState;
/** Contacts no longer in the target leave an automation that exits on removal (exit_criteria). */
const REMOVED = progressState.move(ProgressState.Active, ProgressState.Exited);

interface AutomationTarget {
  id: number;
  user_id: number;
  automation_for: number;
  automation_for_table: 'contacts_' | 'segments_';
  automation_type: AutomationType;
  exit_criteria: ExitCriteria;
  first_live_at: string;
  entry_key: string | null;
  entry_scanned_at: string | null;
}

/** The target's members (alias `c`) and the version key they were read at. */
async function membersOf(db: Knex, a: AutomationTarget): Promise<{ members: Knex.QueryBuilder; key: string } | undefined> {
  if (a.automation_for_table === 'contacts_') {
    const type = await db('contact_types').where({ id: a.automation_for, user_id: a.user_id }).whereNull('deleted_at').first('contacts_version');
    if (!type) return undefined;
    const members = db('contacts as c').where({ 'c.user_id': a.user_id, 'c.contact_type_id': a.automation_for }).whereNull('c.deleted_at');
    return { members, key: `c${type.contacts_version}` };
  }
  const seg = (await db('segments').where({ id: a.automation_for, user_id: a.user_id }).whereNull('deleted_at').first()) as SegmentRow | undefined;
  if (!seg) return undefined;
  const rules = storedRules(seg, await loadRuleFields({ userId: a.user_id, db }));
  const type = await db('contact_types').where({ id: seg.contact_type_id, user_id: a.user_id }).first('contacts_version');
  if (!rules || !type) return undefined;
  return { members: matchingContacts(db, seg, rules), key: `s${type.contacts_version}:${seg.revision}` };
}

async function firstStep(db: Knex, a: { id: number; user_id: number }): Promise<ScheduleStep | undefined> {
  return (await db('automation_schedules').where({ automation_id: a.id, user_id: a.user_id }).whereNull('deleted_at').orderBy('id').first(
    'id',
    'waiting_period',
    'waiting_type',
  )) as ScheduleStep | undefined;
}

/** Entry scan of one automation (in the caller's transaction, which holds its row). */
async function scanOne(trx: Knex.Transaction, a: AutomationTarget): Promise<number> {
  const target = await membersOf(trx, a);
  if (!target || target.key === a.entry_key) return 0;
  const first = await firstStep(trx, a);
  const firstScan = a.entry_scanned_at === null;
  // A welcome automation's members at go-live never enter; later joiners do.
  const state =
    a.automation_type === AutomationType.Welcome && firstScan
      ? trx.raw(`CASE WHEN c.created_at <= ? THEN ${P.Skipped} ELSE ${P.Active} END AS state`, [a.first_live_at])
      : trx.raw(`${P.Active} AS state`);
  // The first scan is the automation's first progress rows (entry_scanned_at is set in the same
  // transaction): nothing can conflict, and a plain INSERT costs half of ON CONFLICT's
  // speculative insertion (bench/README.md, "Automation").
  const result = await trx.raw(
    `INSERT INTO automation_contacts (user_id, automation_id, contact_id, email, state, next_schedule_id, next_due_at)
     SELECT ?, ?, m.id, m.email, m.state,
            CASE WHEN m.state = ${P.Active} THEN ?::integer END,
            CASE WHEN m.state = ${P.Active} THEN now() + (? * interval '1 second') END
     FROM (?) m
     ${firstScan ? '' : 'ON CONFLICT (automation_id, contact_id, user_id) DO NOTHING'}`,
    [a.user_id, a.id, first?.id ?? null, first ? waitSeconds(first) : 0, target.members.clone().select('c.id', 'c.email', state)],
  );
  if (a.exit_criteria === ExitCriteria.OnRemoval) {
    await trx.raw(
      `UPDATE automation_contacts ac SET state = ${REMOVED.toSql}, exit_reason = 'removed from target', next_schedule_id = NULL, next_due_at = NULL, updated_at = now()
       WHERE ac.automation_id = ? AND ac.user_id = ? AND ac.state IN (${REMOVED.fromSql}) AND NOT EXISTS (?)`,
      [a.id, a.user_id, target.members.clone().select(trx.raw('1')).whereRaw('c.id = ac.contact_id')],
    );
  }
  await trx('automations').where({ id: a.id, user_id: a.user_id }).update({ entry_key: target.key, entry_scanned_at: trx.fn.now() });
  return result.rowCount ?? 0;
}

/**
 * Entry scans for live automations whose target changed: a read of every account's (on Citus, of
 * every node: a read takes no lock), then each claimed with SKIP LOCKED under its account.
 */
export async function scanEntries(deps: EngineDeps): Promise<number> {
  const due = (await deps.db('automations')
    .where({ status: AutomationStatus.Live })
    .whereNull('deleted_at')
    .where((q) => q.whereNull('entry_scanned_at').orWhere('entry_scanned_at', '<', deps.db.raw(`now() - (? * interval '1 millisecond')`, [SCAN_INTERVAL_MS])).orWhereNull('entry_key'))
    .orderBy('id')
    .limit(20)
    .select('id', 'user_id')) as Array<{ id: number; user_id: number }>;
  let entered = 0;
  for (const { id, user_id: userId } of due) {
    entered += await deps.db.transaction(async (trx) => {
      const a = (await trx('automations').where({ id, user_id: userId, status: AutomationStatus.Live }).whereNull('deleted_at').forUpdate().skipLocked().first()) as
        | AutomationTarget
        | undefined;
      return a ? scanOne(trx, a) : 0;
    });
  }
  if (entered) deps.logger.info({ entered }, 'contacts entered automations');
  return entered;
}

interface DueRow {
  id: number;
  automation_id: number;
  contact_id: number;
  email: string;
  next_schedule_id: number;
  user_id: number;
  unsubscribe_group_id: number | null;
}

/** Live schedules per automation, in order (of one account when `userId` is given: one node's read on Citus). */
async function stepsOf(trx: Knex, automationIds: number[], userId: number | undefined): Promise<Map<number, ScheduleStep[]>> {
  const rows = (await trx('automation_schedules')
    .whereIn('automation_id', automationIds)
    .modify((q) => whereOfAccount(q, 'user_id', userId))
    .whereNull('deleted_at')
    .orderBy('id')
    .select('id', 'automation_id', 'waiting_period', 'waiting_type')) as Array<ScheduleStep & { automation_id: number }>;
  const map = new Map<number, ScheduleStep[]>();
  for (const r of rows) map.set(r.automation_id, [...(map.get(r.automation_id) ?? []), r]);
  return map;
}

/**
 * Why a due step must not be sent: its contact was deleted, or the suppression rule
 * (src/suppression) refuses its address for the automation's group. Suppressed ones are
 * recorded as `dropped` events by the caller.
 */
async function blocked(trx: Knex, rows: DueRow[], userId: number | undefined): Promise<Map<number, { exit: string; dropped?: SuppressionReason }>> {
  const reasons = new Map<number, { exit: string; dropped?: SuppressionReason }>();
  const contacts = new Set(
    (await trx('contacts')
      .whereIn('id', rows.map((r) => r.contact_id))
      .modify((q) => whereOfAccount(q, 'user_id', userId))
      .whereNull('deleted_at')
      .pluck('id')) as number[],
  );
  const refused = await suppressedAmong(
    trx,
    rows.map((r) => ({ userId: r.user_id, email: r.email, groupId: r.unsubscribe_group_id })),
  );
  rows.forEach((r, i) => {
    const suppressed = refused.get(i);
    if (!contacts.has(r.contact_id)) reasons.set(r.id, { exit: 'contact deleted' });
    // A suppressed address (bounce, complaint, manual) exits naming it; unsubscribes as before.
    else if (suppressed) reasons.set(r.id, { exit: suppressed.endsWith('unsubscribed') ? 'unsubscribed' : suppressed, dropped: suppressed });
  });
  return reasons;
}

/** Where a due row moves: on to its next email, or out (each a move from active, checked below). */
type ProgressMove = typeof ProgressState.Active | typeof ProgressState.Finished | typeof ProgressState.Exited;
for (const to of [ProgressState.Active, ProgressState.Finished, ProgressState.Exited]) progressState.move(ProgressState.Active, to);

interface Progress {
  id: number;
  state: ProgressMove;
  exit_reason: string | null;
  next_schedule_id: number | null;
  wait_seconds: number | null;
  sent: boolean;
}

const DUE_STEPS = `ac.state = ${P.Active} AND ac.next_due_at <= now() AND a.status = ${AutomationStatus.Live} AND a.deleted_at IS NULL`;

/**
 * Queues every due email of a batch and moves each contact on; on Citus one account's at a time,
 * the accounts with steps due longest first (src/db/per-account.ts). Returns the rows handled.
 */
export async function processDueSteps(deps: EngineDeps): Promise<number> {
  const due = {
    from: 'automation_contacts ac JOIN automations a ON a.id = ac.automation_id AND a.user_id = ac.user_id',
    where: DUE_STEPS,
    account: 'ac.user_id',
    due: 'ac.next_due_at',
  };
  return claimPerAccount(deps.db, due, DUE_BATCH, (userId, limit) => processDueStepsOf(deps, userId, limit));
}

async function processDueStepsOf(deps: EngineDeps, userId: number | undefined, limit: number): Promise<number> {
  return deps.db.transaction(async (trx) => {
    const rows = (
      await trx.raw(
        `SELECT ac.id, ac.automation_id, ac.contact_id, ac.email, ac.next_schedule_id, a.user_id, a.unsubscribe_group_id
         FROM automation_contacts ac JOIN automations a ON a.id = ac.automation_id AND a.user_id = ac.user_id
         WHERE ${DUE_STEPS}${ofAccount('ac.user_id', userId)}${ofAccount('a.user_id', userId)}
         ORDER BY ac.next_due_at LIMIT ? FOR UPDATE OF ac SKIP LOCKED`,
        [limit],
      )
    ).rows as DueRow[];
    if (rows.length === 0) return 0;
    const now = Date.now();
    const steps = await stepsOf(trx, [...new Set(rows.map((r) => r.automation_id))], userId);
    const reasons = await blocked(trx, rows, userId);
    const queue: Array<{ user_id: number; automation_id: number; schedule_id: number; contact_id: number }> = [];
    const progress: Progress[] = rows.map((r) => {
      const reason = reasons.get(r.id);
      if (reason) return { id: r.id, state: ProgressState.Exited, exit_reason: reason.exit, next_schedule_id: null, wait_seconds: null, sent: false };
      const list = steps.get(r.automation_id) ?? [];
      // The email due now; if it was removed meanwhile, the next one after it.
      const at = list.findIndex((s) => s.id >= r.next_schedule_id);
      if (at < 0) return { id: r.id, state: ProgressState.Finished, exit_reason: null, next_schedule_id: null, wait_seconds: null, sent: false };
      queue.push({ user_id: r.user_id, automation_id: r.automation_id, schedule_id: list[at].id, contact_id: r.contact_id });
      const next = list[at + 1];
      return next
        ? { id: r.id, state: ProgressState.Active, exit_reason: null, next_schedule_id: next.id, wait_seconds: waitSeconds(next), sent: true }
        : { id: r.id, state: ProgressState.Finished, exit_reason: null, next_schedule_id: null, wait_seconds: null, sent: true };
    });
    if (queue.length) {
      const queued = await queueAutomationEmails<SourceColumns & { user_id: number; automation_id: number }>(trx, queue);
      const perAutomation = new Map<number, { userId: number; n: number }>();
      for (const r of queued) perAutomation.set(r.automation_id, { userId: r.user_id, n: (perAutomation.get(r.automation_id)?.n ?? 0) + 1 });
      for (const [id, { userId: owner, n }] of perAutomation) await trx('automations').where({ id, user_id: owner }).increment('total_triggered', n);
      await countQueued(
        trx,
        queued.flatMap((r) => {
          const source = sourceOfRow(r);
          return source ? [{ userId: r.user_id, source, n: 1 }] : [];
        }),
      );
    }
    await trx.raw(
      `UPDATE automation_contacts ac SET
         state = v.state, exit_reason = v.exit_reason, next_schedule_id = v.next_schedule_id,
         next_due_at = v.next_due_at,
         last_sent_at = coalesce(v.sent_at, ac.last_sent_at),
         updated_at = now()
       FROM json_to_recordset(?::json) AS v(id bigint, state text, exit_reason text, next_schedule_id integer, next_due_at timestamptz, sent_at timestamptz)
       WHERE ac.id = v.id${ofOneAccount('ac', rows.map((r) => r.user_id))}`,
      // Times as values: Citus refuses now() inside CASE or COALESCE in an UPDATE of a distributed table.
      [JSON.stringify(progress.map((p) => ({ ...p, next_due_at: p.wait_seconds === null ? null : new Date(now + p.wait_seconds * 1000).toISOString(), sent_at: p.sent ? new Date(now).toISOString() : null })))],
    );
    // Last in the transaction: the events lock (src/events/record.ts) is held from here to commit.
    const dropped: MessageEvent[] = [];
    for (const r of rows) {
      const reason = reasons.get(r.id)?.dropped;
      if (reason) {
        dropped.push({ type: 'dropped', userId: r.user_id, deliveryId: null, singleSendId: null, automationId: r.automation_id, email: r.email, data: { reason } });
      }
    }
    await recordMessageEvents(trx, dropped);
    return rows.length;
  });
}

/** One round of the automation engine. */
export async function runAutomations(deps: EngineDeps): Promise<number> {
  return (await scanEntries(deps)) + (await processDueSteps(deps));
}
