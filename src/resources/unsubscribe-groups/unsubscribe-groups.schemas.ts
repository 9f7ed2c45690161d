import { z } from 'zod';
import { emailList, flag, id, text } from '../../http/fields';
import { flagValue, intId, timestamp } from '../shared/schemas';

export const saveGroupBody = z.object({
  group_name: text(255),
  description: text(2000),
  is_display: flag().meta({ description: '1 = shown on the unsubscribe preferences page, 0 = not shown there' }),
});
export type SaveGroupInput = z.infer<typeof saveGroupBody>;

export const manuallyAddBody = z.object({
  unsubscribe_groups_id: id().meta({ description: 'a group from /unsubscribes-groups' }),
  email_address: emailList().meta({
    description: 'comma-separated addresses (`;` and whitespace separate too); duplicates are ignored',
    example: 'a@example.com, b@example.org',
  }),
});
export type ManuallyAddInput = z.infer<typeof manuallyAddBody>;

/** The detail record (`message.unsubscribesGroup`). */
export const groupRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  rand_id: z.string().regex(/^\d+$/).meta({ description: 'string of digits', example: '4829105736' }),
  group_name: z.string(),
  description: z.string(),
  is_display: flagValue(),
  created_at: timestamp(),
  updated_at: timestamp(),
});
export type GroupRecord = z.infer<typeof groupRecord>;

/** In the list only: how many addresses the group holds. */
export const groupListRecord = groupRecord.extend({ unsubscribe_clients_count: z.number().int() });

export const groupRecipientRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  unsubscribe_groups_id: intId(),
  email_address: z.string(),
  created_at: timestamp(),
  updated_at: timestamp(),
});
