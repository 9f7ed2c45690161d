import type { Knex } from 'knex';
import type { z } from 'zod';
import type { Ctx } from '../../context';
import { secret } from '../../db/secrets';
import { senderAddress } from '../../mail/sender-address';
import { toDatetime } from '../../db/types';
import { invalid, notFound2, refused, type FieldErrors } from '../../http/errors';
import { isUtr, MAX_INT, newUtr } from '../../http/fields';
import { listRows, type Paging } from '../../http/pagination';
import { recipientToken } from '../../recipient-token';
import { DeliveryStatus, deliveryStatus, ScheduleType, SendStatus, sendStatus } from '../../states';
import { lockKeysWith, scoped } from '../shared/crud';
import { findSender, findVerifiedSender, senderIdMessages } from '../senders/senders.service';
import { validate } from '../../http/validate';
import { RECIPIENT_REF, singleSendBody, singleSendRecord, type SingleSendInput, type SingleSendSaveInput } from './single-sends.schemas';
import { checkDesignSource, isUsableTemplate } from '../shared/design-rules';
import { abSettingsFields, copyAbTest, readAbPlans, saveAbTest } from '../../ab/store';
import { resolveAbInput } from './ab-input';
import { decideByHand, lockTest } from '../../ab/decision';
import { wakeWorkers } from '../../jobs/wake';
import { cancelRowsOf, OPENED_ROWS_OF_SEND } from '../../deliveries/rows';
import { holdQueuedRowsOf, releaseQueuedRowsOf } from '../../deliveries/pause';
import type { AudienceRef } from '../../contacts/audience-ref';
import { deleteSends, insertSend, liveSends, lockLiveSends, updateSend } from '../../single-sends/rows';

export const NOT_UPDATABLE = 'Single send can not be updated once sending has started';


type SingleSendRecord = z.output<typeof singleSendRecord>;

/**
 * The columns a send's owner sets: create and update write them (resolveInput), a duplicate
 * copies them. Listed once here; the spec's record is `singleSendRecord` (single-sends.schemas.ts).
 */
const SETTABLE = [
  // what is sent
  'single_send_name', 'subject', 'preheader', 'template_id', 'template_json', 'template_html',
  // who sends it
  'sender_id', 'from_sender', 'reply_to', 'sender_name', 'sender_address', 'unsubscribe_group_id',
  // to whom, and when
  'recipient_id', 'exclude_specific_recipient_id', 'schedule_type', 'schedule_date', 'schedule_time',
] as const;
type SettableColumns = Record<(typeof SETTABLE)[number], unknown>;

/** A row of `single_sends` as read: the record's columns, unscheduled date and time and `sent_at` as stored. */
export type SingleSendRow = Omit<SingleSendRecord, 'schedule_date' | 'schedule_time' | 'sent_at' | 'unique_open_token'> & {
  schedule_date: string | null;
  schedule_time: string | null;
  sent_at: string | null;
  /** When the send was paused (POST /single/send/pause); null while it is not. Not in the spec's record. */
  paused_at?: Date | null;
  /** Who opened: [address, delivery id, stored token of a row older than signed tokens]. */
  opened?: Array<[string, number, string | null]> | null;
  unique_open_token?: Record<string, string>;
};

/**
 * `unique_open_token`: recipient key (the address, lower-cased) → open token, only for the
 * recipients who opened; one indexed subquery per listed send (deliveries_opened_index),
 * never the whole audience. Tokens are signed here from the rows' keys (src/recipient-token.ts).
 */
function withOpenTokens(ctx: Ctx, q: Knex.QueryBuilder): Knex.QueryBuilder {
  return q.select(
    's.*',
    // d.user_id given as a value, not as s.user_id: Citus routes a correlated subquery by its own filter.
    ctx.db.raw(OPENED_ROWS_OF_SEND, [ctx.userId]),
  );
}

async function signOpenTokens(ctx: Ctx, rows: SingleSendRow[]): Promise<SingleSendRow[]> {
  if (!rows.some((r) => r.opened?.length)) return rows;
  const key = await secret(ctx.db, 'tracking');
  return rows.map((r) => ({
    ...r,
    unique_open_token: Object.fromEntries(
      (r.opened ?? []).map(([email, id, legacy]) => [email, legacy ?? recipientToken(key, { deliveryId: id, userId: r.user_id })]),
    ),
  }));
}

const RECORD_KEYS = Object.keys(singleSendRecord.shape) as Array<keyof SingleSendRecord>;

/** The spec's record, its fields in the spec's order: unscheduled date and time read as zeros, `sent_at` as `<datetime>`. */
export function toRecord(row: SingleSendRow): SingleSendRecord {
  const record: SingleSendRecord = {
    ...row,
    schedule_date: row.schedule_date ?? '0000-00-00',
    schedule_time: row.schedule_time ?? '00:00:00',
    unique_open_token: row.unique_open_token ?? {},
    sent_at: toDatetime(row.sent_at),
  };
  return Object.fromEntries(RECORD_KEYS.map((k) => [k, record[k]])) as SingleSendRecord;
}

/** The records of `rows`, each A/B send's with its A/B settings (the `ab_*` fields create and update take). */
async function toResponses(ctx: Ctx, rows: SingleSendRow[]) {
  const plans = await readAbPlans(ctx.db, ctx.userId, rows.map((r) => r.id));
  return (await signOpenTokens(ctx, rows)).map((r) => {
    const plan = plans.get(r.id);
    return plan ? { ...toRecord(r), ...abSettingsFields(plan) } : toRecord(r);
  });
}

export async function listSingleSends(ctx: Ctx, paging?: Paging) {
  const listed = await listRows<SingleSendRow>(withOpenTokens(ctx, liveSends(ctx.db, ctx.userId)).orderBy('s.id', 'desc'), liveSends(ctx.db, ctx.userId), paging);
  return { ...listed, rows: await toResponses(ctx, listed.rows) };
}

/** A live send of the account by utr; anything that is not one answers NF2. */
export async function findByUtr(ctx: Ctx, utr: string, db: Knex = ctx.db, lock = false): Promise<SingleSendRow> {
  if (!isUtr(utr)) throw notFound2();
  const q = liveSends(db, ctx.userId).where('s.utr', utr.toLowerCase()).first('s.*');
  if (lock) q.forUpdate();
  const row = (await q) as SingleSendRow | undefined;
  if (!row) throw notFound2();
  return row;
}

export async function getSingleSend(ctx: Ctx, utr: string) {
  if (!isUtr(utr)) throw notFound2();
  const row = (await withOpenTokens(ctx, liveSends(ctx.db, ctx.userId)).where('s.utr', utr.toLowerCase()).first()) as SingleSendRow | undefined;
  if (!row) throw notFound2();
  return (await toResponses(ctx, [row]))[0];
}

function parseRefs(values: string[] | undefined, field: string, errors: FieldErrors): AudienceRef[] {
  const out: AudienceRef[] = [];
  const seen = new Set<string>();
  (values ?? []).forEach((v, i) => {
    const m = RECIPIENT_REF.exec(v);
    if (!m) {
      errors[`${field}.${i}`] = [`The ${field.replace(/_/g, ' ')}.${i} must be contacts_<id> or segments_<id>.`];
      return;
    }
    if (!seen.has(v)) out.push({ id: String(Number(m[2])), table: `${m[1]}_` as AudienceRef['table'] });
    seen.add(v);
  });
  return out;
}

/** Every ref names a live contact type or segment of the account; else VAL on its index. */
async function checkRefsExist(ctx: Ctx, db: Knex, refs: AudienceRef[], values: string[], field: string, errors: FieldErrors) {
  const ids = (table: string) => refs.filter((r) => r.table === table && Number(r.id) <= MAX_INT).map((r) => Number(r.id));
  const types = await scoped(ctx, 'contact_types', db).whereIn('id', ids('contacts_')).whereNull('deleted_at').pluck('id');
  const segments = await scoped(ctx, 'segments', db).whereIn('id', ids('segments_')).whereNull('deleted_at').pluck('id');
  const found = new Set([...types.map((i: number) => `contacts_${i}`), ...segments.map((i: number) => `segments_${i}`)]);
  values.forEach((v, i) => {
    const m = RECIPIENT_REF.exec(v);
    if (m && !found.has(`${m[1]}_${Number(m[2])}`)) errors[`${field}.${i}`] = [`The selected ${field.replace(/_/g, ' ')}.${i} is invalid.`];
  });
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME = /^(\d{2}):(\d{2})(?::(\d{2}))?$/;

/** ScheduleType.At: a real date and time (UTC), in the future unless `future` is false (a draft's); returns the instant. */
function checkSchedule(input: SingleSendSaveInput, errors: FieldErrors, future = true): { date: string | null; time: string | null; due: Date } {
  if (input.schedule_type !== ScheduleType.At) return { date: null, time: null, due: new Date() };
  if (!input.schedule_date) errors.schedule_date = ['The schedule date field is required when schedule type is 1.'];
  if (!input.schedule_time) errors.schedule_time = ['The schedule time field is required when schedule type is 1.'];
  const d = DATE.exec(input.schedule_date ?? '');
  const t = TIME.exec(input.schedule_time ?? '');
  if (input.schedule_date && !d) errors.schedule_date = ['The schedule date does not match the format Y-m-d.'];
  if (input.schedule_time && !t) errors.schedule_time = ['The schedule time does not match the format H:i:s.'];
  if (!d || !t) return { date: null, time: null, due: new Date() };
  const [y, mo, da] = d.slice(1).map(Number);
  const [h, mi, s] = [Number(t[1]), Number(t[2]), Number(t[3] ?? 0)];
  const due = new Date(Date.UTC(y, mo - 1, da, h, mi, s));
  if (due.getUTCMonth() !== mo - 1 || due.getUTCDate() !== da || h > 23 || mi > 59 || s > 59) {
    errors.schedule_date = ['The schedule date is not a valid date.'];
  } else if (future && due.getTime() <= Date.now()) {
    errors.schedule_date = ['The schedule date must be a date after now.'];
  }
  const time = `${t[1]}:${t[2]}:${t[3] ?? '00'}`;
  return { date: input.schedule_date!, time, due };
}

/**
 * Everything create and update check against the database, reported together, inside the
 * caller's transaction: the sender is held FOR SHARE until it commits, so a concurrent
 * delete or un-verifying of the sender waits and then sees this send (deleteSender refuses
 * a sender that a ready or running send uses).
 */
async function resolveInput(ctx: Ctx, trx: Knex.Transaction, input: SingleSendInput) {
  const errors: FieldErrors = {};
  checkDesignSource(input, errors);
  const recipients = parseRefs(input.recipient_id, 'recipient_id', errors);
  const excluded = parseRefs(input.exclude_specific_recipient_id, 'exclude_specific_recipient_id', errors);
  const schedule = checkSchedule(input, errors);
  const template = await isUsableTemplate(ctx, trx, input.template_id);
  const sender = await findVerifiedSender(ctx, input.sender_id, { db: trx, lock: true });
  const group = await scoped(ctx, 'unsubscribe_groups', trx).where({ id: input.unsubscribe_group_id }).whereNull('deleted_at').first('id');
  await checkRefsExist(ctx, trx, recipients, input.recipient_id, 'recipient_id', errors);
  await checkRefsExist(ctx, trx, excluded, input.exclude_specific_recipient_id ?? [], 'exclude_specific_recipient_id', errors);
  const ab = await resolveAbInput(ctx, trx, input, errors);
  if (!template) errors.template_id = ['The selected template id is invalid.'];
  if (sender === 'missing' || sender === 'unverified') errors.sender_id = [senderIdMessages[sender]];
  if (!group) errors.unsubscribe_group_id = ['The selected unsubscribe group id is invalid.'];
  if (Object.keys(errors).length || typeof sender === 'string') throw invalid(errors);
  const columns = {
    template_id: input.template_id,
    sender_id: input.sender_id,
    unsubscribe_group_id: input.unsubscribe_group_id,
    recipient_id: JSON.stringify(recipients),
    exclude_specific_recipient_id: JSON.stringify(excluded),
    single_send_name: input.single_send_name,
    subject: input.subject,
    preheader: input.preheader,
    from_sender: sender.from_email as string,
    reply_to: sender.reply_to_email as string,
    sender_name: sender.from_name as string,
    sender_address: await senderAddress(trx, sender),
    schedule_type: input.schedule_type,
    schedule_date: schedule.date,
    schedule_time: schedule.time,
    template_json: input.template_json ?? null,
    template_html: input.template_html ?? null,
  } satisfies SettableColumns;
  return { columns: { ...columns, due_at: schedule.due }, ab };
}

/**
 * A draft's fields (draft=1): only the name is required (the schema's rule). Every field given is
 * checked as create checks it, except what only matters once it is sent — that the audience
 * exists and is large enough for its A/B test, that the sender is verified, that the scheduled
 * time is still ahead: scheduling checks all of it (scheduleSingleSend). A reference that is given
 * must name a record of the account (the table's foreign keys would refuse it otherwise).
 */
async function resolveDraft(ctx: Ctx, trx: Knex.Transaction, input: SingleSendSaveInput) {
  const errors: FieldErrors = {};
  checkDesignSource(input, errors);
  const recipients = parseRefs(input.recipient_id, 'recipient_id', errors);
  const excluded = parseRefs(input.exclude_specific_recipient_id, 'exclude_specific_recipient_id', errors);
  const schedule = checkSchedule(input, errors, false);
  if (input.template_id !== undefined && !(await isUsableTemplate(ctx, trx, input.template_id))) {
    errors.template_id = ['The selected template id is invalid.'];
  }
  const sender = input.sender_id === undefined ? undefined : await findSender({ ...ctx, db: trx }, input.sender_id).catch(() => null);
  if (sender === null) errors.sender_id = [senderIdMessages.missing];
  if (input.unsubscribe_group_id !== undefined && !(await scoped(ctx, 'unsubscribe_groups', trx).where({ id: input.unsubscribe_group_id }).whereNull('deleted_at').first('id'))) {
    errors.unsubscribe_group_id = ['The selected unsubscribe group id is invalid.'];
  }
  const ab = await resolveAbInput(ctx, trx, input, errors, { draft: true });
  if (Object.keys(errors).length) throw invalid(errors);
  const columns = {
    template_id: input.template_id ?? null,
    sender_id: input.sender_id ?? null,
    unsubscribe_group_id: input.unsubscribe_group_id ?? null,
    recipient_id: JSON.stringify(recipients),
    exclude_specific_recipient_id: JSON.stringify(excluded),
    single_send_name: input.single_send_name,
    subject: input.subject ?? '',
    preheader: input.preheader ?? '',
    from_sender: sender?.from_email ?? '',
    reply_to: sender?.reply_to_email ?? '',
    sender_name: sender?.from_name ?? null,
    sender_address: sender ? await senderAddress(trx, sender) : null,
    schedule_type: input.schedule_type ?? ScheduleType.Now,
    schedule_date: schedule.date,
    schedule_time: schedule.time,
    template_json: input.template_json ?? null,
    template_html: input.template_html ?? null,
  } satisfies SettableColumns;
  // A draft is never due: scheduling sets its time.
  return { columns: { ...columns, due_at: null }, ab };
}

/** What create and update save: a draft's fields (draft=1), or everything a send needs. */
async function resolveSave(ctx: Ctx, trx: Knex.Transaction, input: SingleSendSaveInput) {
  if (input.draft === 1) return { ...(await resolveDraft(ctx, trx, input)), status: SendStatus.Draft };
  // Without draft=1 the schema required every field a send needs (singleSendSaveBody).
  return { ...(await resolveInput(ctx, trx, input as SingleSendInput)), status: SendStatus.Ready };
}

/** Create → ready (the worker starts it at its time), or a draft with draft=1. */
export async function createSingleSend(ctx: Ctx, input: SingleSendSaveInput): Promise<string> {
  const utr = newUtr();
  const due = await ctx.db.transaction(async (trx) => {
    const { columns, ab, status } = await resolveSave(ctx, trx, input);
    const id = await insertSend(trx, { user_id: ctx.userId, utr, status, ...columns });
    await saveAbTest(trx, ctx.userId, id, ab);
    return columns.due_at;
  });
  await wakeIfDue(ctx, due);
  return utr;
}

/** A send due now is started by a woken worker, not at its next poll (src/jobs/wake.ts). */
async function wakeIfDue(ctx: Ctx, due: Date | null): Promise<void> {
  if (due && due.getTime() <= Date.now()) await wakeWorkers(ctx.db, 'housekeeping');
}

/**
 * Update → ready (again; a draft becomes ready), or → a draft with draft=1 (a draft stays one; a
 * ready send that has not started goes back to one); refused once sending has started.
 */
export async function updateSingleSend(ctx: Ctx, utr: string, input: SingleSendSaveInput): Promise<string> {
  await findByUtr(ctx, utr);
  const due = await ctx.db.transaction(async (trx) => {
    const row = await findByUtr(ctx, utr, trx, true);
    const { columns, ab, status } = await resolveSave(ctx, trx, input);
    if (!sendStatus.canMove(row.status, status)) throw refused(NOT_UPDATABLE);
    await updateSend(trx, ctx.userId, row.id, { ...columns, status, updated_at: trx.fn.now() });
    // A full replacement, as the spec's updates are: without A/B fields the send is an ordinary one again.
    await saveAbTest(trx, ctx.userId, row.id, ab);
    return columns.due_at;
  });
  await wakeIfDue(ctx, due);
  return utr.toLowerCase();
}

/**
 * The stored send as create's input (the spec's fields, its A/B settings), for the checks of
 * scheduling; `send_at` replaces its schedule. Empty texts and missing references are absent.
 */
function inputOfRow(row: SingleSendRow, ab: Record<string, unknown>, sendAt: { date: string; time: string } | undefined): Record<string, unknown> {
  const refs = (list: SingleSendRow['recipient_id']) => (list.length ? list.map((r) => `${r.table}${r.id}`) : undefined);
  const given = (v: unknown) => (v === null || v === '' ? undefined : v);
  return {
    template_id: given(row.template_id),
    template_json: given(row.template_json),
    template_html: given(row.template_html),
    sender_id: given(row.sender_id),
    unsubscribe_group_id: given(row.unsubscribe_group_id),
    single_send_name: row.single_send_name,
    subject: given(row.subject),
    preheader: given(row.preheader),
    recipient_id: refs(row.recipient_id),
    exclude_specific_recipient_id: refs(row.exclude_specific_recipient_id),
    ...(sendAt
      ? { schedule_type: ScheduleType.At, schedule_date: sendAt.date, schedule_time: sendAt.time }
      : { schedule_type: row.schedule_type, schedule_date: given(row.schedule_date), schedule_time: given(row.schedule_time) }),
    ...ab,
    ...(Array.isArray(ab.ab_variations)
      ? { ab_variations: ab.ab_variations.map((v: Record<string, unknown>) => Object.fromEntries(Object.entries(v).filter(([, x]) => given(x) !== undefined))) }
      : {}),
  };
}

const SEND_AT = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2})?)$/;

/**
 * POST /single/send/schedule: a draft (or a ready send not yet started, rescheduled) → ready, once
 * the stored send passes every check create makes — the same rules, in the same words, so a
 * draft that lacks its subject answers `The subject field is required.`. `sendAt` (`YYYY-MM-DD
 * HH:MM[:SS]`, UTC, in the future) replaces its schedule; without it the send's own schedule holds
 * (schedule_type 0: now). A send that has started answers VAL.
 */
export async function scheduleSingleSend(ctx: Ctx, utr: string, sendAt?: string): Promise<string> {
  await findByUtr(ctx, utr);
  let at: { date: string; time: string } | undefined;
  if (sendAt !== undefined) {
    const m = SEND_AT.exec(sendAt);
    if (!m) throw invalid({ send_at: ['The send at does not match the format Y-m-d H:i:s.'] });
    at = { date: m[1], time: m[2] };
  }
  const due = await ctx.db.transaction(async (trx) => {
    const row = await findByUtr(ctx, utr, trx, true);
    if (!sendStatus.canMove(row.status, SendStatus.Ready)) throw invalid({ utr: ['The single send has already started sending and can not be scheduled again.'] });
    const plan = (await readAbPlans(trx, ctx.userId, [row.id])).get(row.id);
    const raw = inputOfRow(row, plan ? abSettingsFields(plan) : {}, at);
    let resolved;
    try {
      resolved = await resolveInput(ctx, trx, validate(singleSendBody, raw));
    } catch (err) {
      // send_at stands for the schedule's three fields: its errors are send_at's.
      const errors = (err as { errors?: unknown }).errors;
      if (at && errors && typeof errors === 'object') {
        const e = errors as FieldErrors;
        const timing = [...(e.schedule_date ?? []), ...(e.schedule_time ?? [])].map((m) => m.replace(/schedule (date|time)/, 'send at'));
        delete e.schedule_date;
        delete e.schedule_time;
        if (timing.length) e.send_at = [...new Set(timing)];
      }
      throw err;
    }
    const { columns, ab } = resolved;
    await updateSend(trx, ctx.userId, row.id, { ...columns, status: SendStatus.Ready, updated_at: trx.fn.now() });
    await saveAbTest(trx, ctx.userId, row.id, ab);
    return columns.due_at;
  });
  await wakeIfDue(ctx, due);
  return utr.toLowerCase();
}

/** POST /single/send/unschedule: a ready send that has not started → a draft again (kept as it is, never due); anything else answers VAL. */
export async function unscheduleSingleSend(ctx: Ctx, utr: string): Promise<string> {
  await findByUtr(ctx, utr);
  await ctx.db.transaction(async (trx) => {
    // Locked: the worker's claim of due sends skips a locked send, and sees the draft once this commits.
    const row = await findByUtr(ctx, utr, trx, true);
    if (row.status === SendStatus.Draft) throw invalid({ utr: ['The single send is not scheduled.'] });
    if (!sendStatus.canMove(row.status, SendStatus.Draft)) throw invalid({ utr: ['The single send has already started sending and can not be unscheduled.'] });
    await updateSend(trx, ctx.userId, row.id, { status: SendStatus.Draft, due_at: null, updated_at: trx.fn.now() });
  });
  return utr.toLowerCase();
}

/**
 * POST /single/send/pause: a sending single send (status 2) stops sending. In one transaction,
 * the send locked (so a fan-out chunk either finishes first and its rows are held here, or waits
 * and writes nothing while paused): `paused_at` is set and its queued rows are never due until
 * it resumes. Messages already claimed by a worker finish. An A/B send is refused: its test
 * group and the release to the winner run on their own clock (src/ab), which a pause would not stop.
 */
export async function pauseSingleSend(ctx: Ctx, utr: string): Promise<string> {
  await findByUtr(ctx, utr);
  await ctx.db.transaction(async (trx) => {
    const row = await findByUtr(ctx, utr, trx, true);
    if (row.status !== SendStatus.Running) throw invalid({ utr: ['Only a sending single send can be paused.'] });
    if (row.paused_at) throw invalid({ utr: ['The single send is already paused.'] });
    if ((await readAbPlans(trx, ctx.userId, [row.id])).has(row.id)) throw invalid({ utr: ['A single send with an A/B test can not be paused.'] });
    await updateSend(trx, ctx.userId, row.id, { paused_at: trx.fn.now(), updated_at: trx.fn.now() });
    await holdQueuedRowsOf(trx, ctx.userId, row.id);
  });
  return utr.toLowerCase();
}

/** POST /single/send/resume: a paused single send goes on sending — its held rows due now, its fan-out and completion as before. */
export async function resumeSingleSend(ctx: Ctx, utr: string): Promise<string> {
  await findByUtr(ctx, utr);
  await ctx.db.transaction(async (trx) => {
    const row = await findByUtr(ctx, utr, trx, true);
    if (row.status !== SendStatus.Running || !row.paused_at) throw invalid({ utr: ['Only a paused single send can be resumed.'] });
    await updateSend(trx, ctx.userId, row.id, { paused_at: null, updated_at: trx.fn.now() });
    await releaseQueuedRowsOf(trx, ctx.userId, row.id);
  });
  await wakeWorkers(ctx.db, 'housekeeping');
  return utr.toLowerCase();
}

/** A draft copy (nothing sends it until it is scheduled or updated) with zeroed statistics. */
export async function duplicateSingleSend(ctx: Ctx, utr: string): Promise<string> {
  const row = await findByUtr(ctx, utr);
  const copy = newUtr();
  const copied = Object.fromEntries(SETTABLE.map((c) => [c, row[c]])) as SettableColumns;
  await ctx.db.transaction(async (trx) => {
    const id = await insertSend(trx, {
      ...copied,
      user_id: ctx.userId,
      utr: copy,
      status: SendStatus.Draft,
      recipient_id: JSON.stringify(row.recipient_id),
      exclude_specific_recipient_id: JSON.stringify(row.exclude_specific_recipient_id),
      single_send_name: `${row.single_send_name} (copy)`.slice(0, 255),
      due_at: null,
    });
    await copyAbTest(trx, ctx.userId, row.id, id);
  });
  return copy;
}

const CANCEL = deliveryStatus.move([DeliveryStatus.Queued, DeliveryStatus.Held], DeliveryStatus.Cancelled);

/**
 * Soft-deletes sends (ids or utrs; all or nothing) and cancels their messages not yet sent;
 * messages already with the SMTP server finish, and their links keep working.
 */
export async function deleteSingleSends(ctx: Ctx, keys: string[]): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const sendIds = await lockKeysWith(keys, notFound2, (ids, utrs) => lockLiveSends(trx, ctx.userId, ids, utrs));
    await deleteSends(trx, ctx.userId, sendIds);
    await cancelRowsOf(trx, ctx.userId, 'single_send_id', sendIds, CANCEL);
    await scoped(ctx, 'ab_tests', trx).whereIn('single_send_id', sendIds).where('releasing', true).update({ releasing: false });
  });
}

/**
 * POST /single/send/ab/winner: a person picks the winner of a send's A/B test, while it runs (the
 * test ends early) or while it waits; the held rest of the audience goes to the winner at once
 * (src/ab/decision.ts, which checks `variation` as the caller has it — the API's body, the
 * dashboard's form). NF2 for a send that is not the account's; VAL for a send that is no A/B
 * send, a test that has not started or is already decided, or a variation that names none of its own.
 */
export async function pickAbWinner(ctx: Ctx, utr: string, variation: unknown): Promise<void> {
  const row = await findByUtr(ctx, utr);
  await ctx.db.transaction(async (trx) => {
    const test = await lockTest(trx, ctx.userId, row.id);
    if (!test) throw invalid({ utr: ['The single send is not an A/B test.'] });
    await decideByHand(trx, test, variation);
  });
}
