import { z } from 'zod';
import { flag, id, longText, optionalList, list, text, optionalText } from '../../http/fields';
import { ScheduleType, SendStatus } from '../../states';
import { datetime, intId, oneOf, timestamp } from '../shared/schemas';

/** `contacts_<contact type id>` or `segments_<segment id>`. */
export const RECIPIENT_REF = /^(contacts|segments)_(\d{1,10})$/;

const ref = z.union([z.string(), z.number()]).transform(String);

/** Fields shared by create and update (spec table "Fields shared by create and update"). */
export const singleSendBody = z.object({
  template_id: id().meta({ description: 'a template id; 1 selects the blank Custom design' }),
  template_json: longText().meta({ description: 'editor JSON of the design (kept for the editor); excludes template_html' }),
  template_html: longText().meta({ description: 'the design’s HTML with ((placeholders)); excludes template_json' }),
  sender_id: id(),
  unsubscribe_group_id: id(),
  single_send_name: text(255),
  subject: text(255),
  preheader: text(255),
  recipient_id: list(ref, 100).meta({ description: 'contacts_<contact type id> or segments_<segment id>' }),
  exclude_specific_recipient_id: optionalList(ref, 100),
  schedule_type: flag(),
  schedule_date: optionalText(10).meta({ description: 'YYYY-MM-DD (UTC), with schedule_type 1' }),
  schedule_time: optionalText(8).meta({ description: 'HH:MM or HH:MM:SS (UTC), with schedule_type 1' }),
});
export type SingleSendInput = z.infer<typeof singleSendBody>;

const recipientRef = z.strictObject({ id: z.string(), table: z.string() });

export const singleSendRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  template_id: intId(),
  sender_id: intId(),
  unsubscribe_group_id: intId(),
  recipient_id: z.array(recipientRef),
  exclude_specific_recipient_id: z.array(recipientRef),
  single_send_name: z.string(),
  subject: z.string(),
  preheader: z.string(),
  from_sender: z.string(),
  reply_to: z.string(),
  sender_name: z.string().nullable(),
  sender_address: z.string().nullable(),
  schedule_type: oneOf(ScheduleType),
  schedule_date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  schedule_time: z.string().regex(/^\d{2}:\d{2}:\d{2}$/),
  status: oneOf(SendStatus),
  utr: z.uuid(),
  template_json: z.string().nullable(),
  template_html: z.string().nullable(),
  triggered: z.number().int(),
  delivered: z.number().int(),
  unique_opens: z.number().int(),
  total_opens: z.number().int(),
  bounces: z.number().int(),
  unsubscribes: z.number().int(),
  unique_open_token: z.record(z.string(), z.string()),
  sent_at: datetime().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
});
