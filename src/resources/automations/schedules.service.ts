import type { Knex } from 'knex';
import { isUtr, newUtr } from '../../http/fields';
import type { Config } from '../../config';
import type { Ctx } from '../../context';
import { AppError, invalid, notFound2, type FieldErrors } from '../../http/errors';
import { findVerifiedSender, senderIdMessages } from '../senders/senders.service';
import { findAutomation } from './automations.service';
import type { CreateScheduleInput, ScheduleFields } from './automations.schemas';
import { checkDesignSource, isUsableTemplate } from '../shared/design-rules';
import { scoped } from '../shared/crud';

const COLUMNS = [
  'id',
  'user_id',
  'automation_id',
  'sender_id',
  'subject',
  'waiting_period',
  'waiting_type',
  'utr',
  'template_id',
  'preview_img',
  'template_json',
  'template_html',
  'created_at',
  'updated_at',
];

/** The automation's emails in the order they go out, with their design and preview addresses. */
export async function listSchedules(ctx: Ctx, config: Config, utr: string) {
  const a = await findAutomation(ctx, utr, notFound2);
  const rows = (await scoped(ctx, 'automation_schedules')
    .where({ automation_id: a.id })
    .whereNull('deleted_at')
    .orderBy('id')
    .select(COLUMNS)) as Array<Record<string, unknown> & { utr: string; preview_img: string }>;
  return rows.map((r) => ({
    ...r,
    design_url: `${config.publicUrl}/design/${r.utr}`,
    image: `${config.publicUrl}/images/${encodeURIComponent(r.preview_img)}`,
  }));
}

/**
 * The rules an email's fields follow beyond their form (the sender live and verified, the
 * design known, one design source, a wait of at least 1 unless instant), into `errors`. The
 * sender is held FOR SHARE until the caller's transaction commits: a concurrent delete of it
 * waits, then sees this email.
 */
async function checkSchedule(ctx: Ctx, trx: Knex.Transaction, input: ScheduleFields, errors: FieldErrors): Promise<void> {
  const sender = await findVerifiedSender(ctx, input.sender_id, { db: trx, lock: true });
  if (sender === 'missing' || sender === 'unverified') errors.sender_id = [senderIdMessages[sender]];
  const template = await isUsableTemplate(ctx, trx, input.template_id);
  if (!template) errors.template_id = ['The selected template id is invalid.'];
  checkDesignSource(input, errors);
  if (input.waiting_type !== 'instantly' && input.waiting_period < 1) {
    errors.waiting_period = ['The waiting period must be at least 1.'];
  }
}

const scheduleColumns = (input: ScheduleFields) => ({
  sender_id: input.sender_id,
  subject: input.subject,
  waiting_period: input.waiting_period,
  waiting_type: input.waiting_type,
  template_id: input.template_id,
  preview_img: input.preview_img,
  template_json: input.template_json ?? null,
  template_html: input.template_html ?? null,
});

/** Adds an email at the end of the automation (VAL on the automation utr, sender, template). */
export async function createSchedule(ctx: Ctx, input: CreateScheduleInput): Promise<string> {
  const utr = newUtr();
  await ctx.db.transaction(async (trx) => {
    const errors: FieldErrors = {};
    const automation = await findAutomation(ctx, input.utr, notFound2).catch((err: unknown) => {
      if (err instanceof AppError && err.status === 404) return undefined;
      throw err;
    });
    if (!automation) errors.utr = ['The selected utr is invalid.'];
    await checkSchedule(ctx, trx, input, errors);
    if (Object.keys(errors).length || !automation) throw invalid(errors);
    await trx('automation_schedules').insert({ user_id: ctx.userId, automation_id: automation.id, utr, ...scheduleColumns(input) });
  });
  return utr;
}

/**
 * Changes an email in place (its place in the sequence, its utr and its counters stay). Every
 * field of create but the automation's utr is given again. Contacts already waiting for it keep
 * the due time they were given when they reached it; the new wait applies to those who reach
 * it later. NF2: not an email of a live (not deleted) automation of the account.
 */
export async function updateSchedule(ctx: Ctx, utr: string, input: ScheduleFields): Promise<void> {
  if (!isUtr(utr)) throw notFound2();
  await ctx.db.transaction(async (trx) => {
    const row = (await trx('automation_schedules as s')
      .where('s.user_id', ctx.userId)
      .where('s.utr', utr.toLowerCase())
      .whereNull('s.deleted_at')
      .whereExists(trx('automations as a').whereRaw('a.id = s.automation_id').where('a.user_id', ctx.userId).whereNull('a.deleted_at'))
      .forUpdate()
      .first('s.id')) as { id: number } | undefined;
    if (!row) throw notFound2();
    const errors: FieldErrors = {};
    await checkSchedule(ctx, trx, input, errors);
    if (Object.keys(errors).length) throw invalid(errors);
    await trx('automation_schedules')
      .where({ user_id: ctx.userId, id: row.id })
      .update({ ...scheduleColumns(input), updated_at: trx.fn.now() });
  });
}

/**
 * Removes an email (soft: messages already sent keep their links). Contacts waiting for it
 * move on to the next email when their time comes (see the engine).
 */
export async function deleteSchedule(ctx: Ctx, utr: string): Promise<void> {
  if (!isUtr(utr)) throw notFound2();
  const changed = await ctx
    .db('automation_schedules as s')
    .where('s.user_id', ctx.userId)
    .where('s.utr', utr.toLowerCase())
    .whereNull('s.deleted_at')
    .whereExists(ctx.db('automations as a').whereRaw('a.id = s.automation_id').where('a.user_id', ctx.userId).whereNull('a.deleted_at'))
    .update({ deleted_at: ctx.db.fn.now(), updated_at: ctx.db.fn.now() });
  if (!changed) throw notFound2();
}
