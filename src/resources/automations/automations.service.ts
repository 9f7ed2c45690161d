import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { toDatetime } from '../../db/types';
import { isUtr, MAX_INT, newUtr } from '../../http/fields';
import { invalid, notFound1, notFound2, refused, type FieldErrors, type NotFound } from '../../http/errors';
import { listRows, type Listed, type Paging } from '../../http/pagination';
import { recordAccountEvent } from '../../events/account-events';
import {
  AutomationStatus,
  automationStatus,
  AutomationType,
  DeliveryStatus,
  deliveryStatus,
  ExitCriteria,
  ProgressState,
  progressState,
} from '../../states';
import { liveRows, lockByKeys, scoped } from '../shared/crud';
import { TARGET, type CreateAutomationInput } from './automations.schemas';
import { wakeWorkers } from '../../jobs/wake';
import { cancelRowsOf } from '../../deliveries/rows';

const AUTOMATIONS = 'automations as a';

export const LIVE_REFUSED = 'Unsubscribe group require to live automation';
export const PAUSE_REFUSED = 'Only a live automation can be paused';

export interface AutomationRow {
  id: number;
  user_id: number;
  utr: string;
  automation_for: number;
  automation_for_table: 'contacts_' | 'segments_';
  automation_name: string;
  exit_criteria: ExitCriteria;
  unsubscribe_group_id: number | null;
  automation_type: AutomationType;
  status: AutomationStatus;
  live_at: string | null;
  first_live_at: string | null;
  total_triggered: number;
  total_delivered: number;
  total_unique_opens: number;
  total_opens: number;
  total_bounces: number;
  total_unsubscribe: number;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
  automation_schedule_count?: number;
}

/** The spec's record: `unsubscribe_group_id` as a string of digits, `live_at` as `<datetime>`. */
function toRecord(row: AutomationRow) {
  const record = {
    id: row.id,
    user_id: row.user_id,
    automation_for: row.automation_for,
    automation_for_table: row.automation_for_table,
    automation_name: row.automation_name,
    exit_criteria: row.exit_criteria,
    unsubscribe_group_id: row.unsubscribe_group_id === null ? '' : String(row.unsubscribe_group_id),
    automation_type: row.automation_type,
    utr: row.utr,
    status: row.status,
    live_at: toDatetime(row.live_at),
    total_triggered: row.total_triggered,
    total_delivered: row.total_delivered,
    total_unique_opens: row.total_unique_opens,
    total_opens: row.total_opens,
    total_bounces: row.total_bounces,
    total_unsubscribe: row.total_unsubscribe,
    deleted_at: row.deleted_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
  return row.automation_schedule_count === undefined ? record : { ...record, automation_schedule_count: row.automation_schedule_count };
}

export async function listAutomations(ctx: Ctx, paging?: Paging): Promise<Listed<ReturnType<typeof toRecord>>> {
  // s.user_id named, not only implied by a.id: on Citus a correlated subquery is routed by its own account filter.
  const count = ctx.db.raw(
    '(SELECT count(*)::int FROM automation_schedules s WHERE s.automation_id = a.id AND s.user_id = ? AND s.deleted_at IS NULL) AS automation_schedule_count',
    [ctx.userId],
  );
  const listed = await listRows<AutomationRow>(liveRows(ctx, AUTOMATIONS).select('a.*', count).orderBy('a.id', 'desc'), liveRows(ctx, AUTOMATIONS), paging);
  return { ...listed, rows: listed.rows.map(toRecord) };
}

export async function findAutomation(ctx: Ctx, utr: string, notFound: NotFound, db: Knex = ctx.db, lock = false): Promise<AutomationRow> {
  if (!isUtr(utr)) throw notFound();
  const q = liveRows(ctx, AUTOMATIONS, db).where('a.utr', utr.toLowerCase()).first('a.*');
  if (lock) q.forUpdate();
  const row = (await q) as AutomationRow | undefined;
  if (!row) throw notFound();
  return row;
}

export async function getAutomation(ctx: Ctx, utr: string) {
  return toRecord(await findAutomation(ctx, utr, notFound1));
}

/** `contacts_<id>` | `segments_<id>` naming a live contact type or segment of the account. */
export async function resolveTarget(ctx: Ctx, value: string | undefined, errors: FieldErrors, db: Knex = ctx.db) {
  const m = TARGET.exec(value ?? '');
  if (!m) {
    errors.automation_for = [value ? 'The automation for must be contacts_<id> or segments_<id>.' : 'The automation for field is required.'];
    return undefined;
  }
  const table = `${m[1]}_` as 'contacts_' | 'segments_';
  const id = Number(m[2]);
  // Beyond PostgreSQL's integer range it cannot name a record (and must not reach the query).
  const source = m[1] === 'contacts' ? 'contact_types' : 'segments';
  const found = id > MAX_INT ? undefined : await scoped(ctx, source, db).where({ id }).whereNull('deleted_at').first('id');
  if (!found) {
    errors.automation_for = ['The selected automation for is invalid.'];
    return undefined;
  }
  return { id, table };
}

async function liveGroup(ctx: Ctx, id: number | null, db: Knex = ctx.db): Promise<boolean> {
  if (!id) return false;
  return Boolean(await scoped(ctx, 'unsubscribe_groups', db).where({ id }).whereNull('deleted_at').first('id'));
}

export async function createAutomation(ctx: Ctx, input: CreateAutomationInput): Promise<string> {
  const errors: FieldErrors = {};
  const target = await resolveTarget(ctx, input.automation_for, errors);
  if (!(await liveGroup(ctx, input.unsubscribe_group_id))) {
    errors.unsubscribe_group_id = ['The selected unsubscribe group id is invalid.'];
  }
  if (Object.keys(errors).length || !target) throw invalid(errors);
  const utr = newUtr();
  await ctx.db('automations').insert({
    user_id: ctx.userId,
    utr,
    automation_for: target.id,
    automation_for_table: target.table,
    automation_name: input.automation_name,
    exit_criteria: input.exit_criteria ?? ExitCriteria.OnUnsubscribe,
    unsubscribe_group_id: input.unsubscribe_group_id,
    automation_type: input.type === 'welcome' ? AutomationType.Welcome : AutomationType.Custom,
    status: AutomationStatus.Draft,
  });
  return utr;
}

/** A draft copy with the same emails under new utrs; statistics start at zero. */
export async function duplicateAutomation(ctx: Ctx, utr: string): Promise<string> {
  const copy = newUtr();
  await ctx.db.transaction(async (trx) => {
    const a = await findAutomation(ctx, utr, notFound2, trx);
    const [row] = await trx('automations')
      .insert({
        user_id: ctx.userId,
        utr: copy,
        automation_for: a.automation_for,
        automation_for_table: a.automation_for_table,
        automation_name: `${a.automation_name} (copy)`.slice(0, 255),
        exit_criteria: a.exit_criteria,
        unsubscribe_group_id: a.unsubscribe_group_id,
        automation_type: a.automation_type,
        status: AutomationStatus.Draft,
      })
      .returning('id');
    const schedules = await scoped(ctx, 'automation_schedules', trx).where({ automation_id: a.id }).whereNull('deleted_at').orderBy('id');
    for (const s of schedules) {
      await trx('automation_schedules').insert({
        user_id: ctx.userId,
        automation_id: row.id,
        sender_id: s.sender_id,
        subject: s.subject,
        waiting_period: s.waiting_period,
        waiting_type: s.waiting_type,
        utr: newUtr(),
        template_id: s.template_id,
        preview_img: s.preview_img,
        template_json: s.template_json,
        template_html: s.template_html,
      });
    }
  });
  return copy;
}

/**
 * Live, from draft or paused. Refused without a live unsubscribe group (spec), without an
 * email to send, or when its target is gone. The first go-live of a welcome automation sets the target's
 * current members aside: only contacts that join afterwards enter (the engine does it).
 */
export async function setLive(ctx: Ctx, utr: string): Promise<void> {
  const wentLive = await ctx.db.transaction(async (trx) => {
    const row = await findAutomation(ctx, utr, notFound2, trx, true);
    if (!(await liveGroup(ctx, row.unsubscribe_group_id, trx))) throw refused(LIVE_REFUSED);
    const errors: FieldErrors = {};
    await resolveTarget(ctx, `${row.automation_for_table}${row.automation_for}`, errors, trx);
    if (errors.automation_for) throw refused('The automation’s contact type or segment no longer exists.');
    const emails = await scoped(ctx, 'automation_schedules', trx).where({ automation_id: row.id }).whereNull('deleted_at').first('id');
    if (!emails) throw refused('Add at least one email before setting the automation live.');
    if (row.status === AutomationStatus.Live) return false; // live already: nothing changes
    if (!automationStatus.canMove(row.status, AutomationStatus.Live)) throw refused('The automation cannot be set live from its current status.');
    // Two statements, not coalesce(first_live_at, now()): Citus takes no non-immutable function inside COALESCE in an UPDATE.
    await scoped(ctx, 'automations', trx).where({ id: row.id }).whereNull('first_live_at').update({ first_live_at: trx.fn.now() });
    await scoped(ctx, 'automations', trx)
      .where({ id: row.id })
      .update({ status: AutomationStatus.Live, live_at: trx.fn.now(), entry_key: null, updated_at: trx.fn.now() });
    // In the same transaction: the change and its event are both there or neither is.
    const facts = { automation: row.automation_name, utr: row.utr };
    await recordAccountEvent({ db: trx }, ctx.userId, 'automation.live', `Automation “${row.automation_name}” is live`, facts, { automationId: row.id });
    return true;
  });
  // Its entry scan need not wait for a worker's poll.
  if (wentLive) await wakeWorkers(ctx.db, 'housekeeping');
}

/** Paused: nothing is sent; due emails wait until it is live again. */
export async function pause(ctx: Ctx, utr: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = await findAutomation(ctx, utr, notFound2, trx, true);
    if (!automationStatus.canMove(row.status, AutomationStatus.Paused)) throw refused(PAUSE_REFUSED);
    await scoped(ctx, 'automations', trx).where({ id: row.id }).update({ status: AutomationStatus.Paused, updated_at: trx.fn.now() });
    const facts = { automation: row.automation_name, utr: row.utr };
    await recordAccountEvent({ db: trx }, ctx.userId, 'automation.paused', `Automation “${row.automation_name}” paused`, facts, { automationId: row.id });
  });
}

const STOP = progressState.move(ProgressState.Active, ProgressState.Exited);
const CANCEL = deliveryStatus.move(DeliveryStatus.Queued, DeliveryStatus.Cancelled);

/** Soft delete (ids or utrs, all or nothing); entered contacts stop and queued emails are cancelled. */
export async function deleteAutomations(ctx: Ctx, keys: string[]): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const automationIds = await lockByKeys(ctx, trx, 'automations', keys, notFound2);
    await scoped(ctx, 'automations', trx).whereIn('id', automationIds).update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
    await scoped(ctx, 'automation_contacts', trx)
      .whereIn('automation_id', automationIds)
      .whereIn('state', STOP.from)
      .update({ state: STOP.to, exit_reason: 'automation deleted', next_schedule_id: null, next_due_at: null, updated_at: trx.fn.now() });
    await cancelRowsOf(trx, ctx.userId, 'automation_id', automationIds, CANCEL);
  });
}

/** Extension: each entered contact, its next email and when, or finished/exited. */
export async function listEnteredContacts(ctx: Ctx, utr: string, paging?: Paging) {
  const a = await findAutomation(ctx, utr, notFound2);
  const base = ctx.db('automation_contacts as ac').where({ 'ac.user_id': ctx.userId, 'ac.automation_id': a.id }).whereNot('ac.state', ProgressState.Skipped);
  const q = base
    .clone()
    .leftJoin('automation_schedules as s', (j) => j.on('s.id', 'ac.next_schedule_id').andOnVal('s.user_id', ctx.userId))
    .select(
      'ac.contact_id',
      'ac.email',
      'ac.state',
      'ac.exit_reason',
      'ac.entered_at',
      'ac.last_sent_at',
      's.utr as next_email_utr',
      'ac.next_due_at',
    )
    .orderBy('ac.id', 'desc');
  return listRows(q, base, paging);
}
