import { z } from 'zod';
import { flag, id, integer, longText, text } from '../../http/fields';
import { AutomationStatus, AutomationType, ProgressState } from '../../states';
import { datetime, intId, oneOf, timestamp } from '../shared/schemas';

export const TARGET = /^(contacts|segments)_(\d{1,10})$/;

export const createAutomationBody = z.object({
  type: z.enum(['welcome', 'custom']).meta({ description: 'welcome → automation_type 1, custom → 2' }),
  automation_for: z.string().max(40).meta({ description: 'contacts_<contact type id> or segments_<segment id>' }),
  automation_name: text(255),
  unsubscribe_group_id: id(),
  exit_criteria: flag().optional().meta({ description: '0 = leave on unsubscribe only (default), 1 = also when removed from the target' }),
});
export type CreateAutomationInput = z.infer<typeof createAutomationBody>;

export const WAITING_TYPES = ['instantly', 'days', 'hours'] as const;

export const createScheduleBody = z.object({
  utr: z.string().max(64),
  sender_id: id(),
  subject: text(255),
  waiting_period: integer(0, 100_000).meta({ description: 'hours or days after the previous email (1 for an instant email)' }),
  waiting_type: z.enum(WAITING_TYPES),
  template_id: id(),
  preview_img: text(255).meta({ description: 'preview image file name from the template list' }),
  template_json: longText(),
  template_html: longText(),
});
export type CreateScheduleInput = z.infer<typeof createScheduleBody>;

/** Herald extension, POST /automations/schedule/update: every field of create again, but the automation's utr (`utr` names the email). */
export const updateScheduleBody = createScheduleBody.omit({ utr: true });
export type ScheduleFields = z.infer<typeof updateScheduleBody>;

const stats = {
  total_triggered: z.number().int(),
  total_delivered: z.number().int(),
  total_unique_opens: z.number().int(),
  total_opens: z.number().int(),
  total_bounces: z.number().int(),
  total_unsubscribe: z.number().int(),
};

export const automationRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  automation_for: intId(),
  automation_for_table: z.enum(['contacts_', 'segments_']),
  automation_name: z.string(),
  exit_criteria: z.number().int(),
  unsubscribe_group_id: z.string().regex(/^\d*$/),
  automation_type: oneOf(AutomationType),
  utr: z.uuid(),
  status: oneOf(AutomationStatus),
  live_at: datetime().nullable(),
  ...stats,
  deleted_at: timestamp().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
});

export const automationListRecord = automationRecord.extend({ automation_schedule_count: z.number().int() });

export const scheduleRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  automation_id: intId(),
  sender_id: intId(),
  subject: z.string(),
  waiting_period: z.number().int(),
  waiting_type: z.enum(WAITING_TYPES),
  utr: z.uuid(),
  template_id: intId(),
  preview_img: z.string(),
  template_json: z.string().nullable(),
  template_html: z.string().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
  design_url: z.string(),
  image: z.string(),
});

export const automationContactRecord = z.strictObject({
  contact_id: intId(),
  email: z.string(),
  // Skipped rows (never entered) are not listed.
  state: z.enum([ProgressState.Active, ProgressState.Finished, ProgressState.Exited]),
  exit_reason: z.string().nullable(),
  entered_at: timestamp(),
  last_sent_at: timestamp().nullable(),
  next_email_utr: z.uuid().nullable(),
  next_due_at: timestamp().nullable(),
});
