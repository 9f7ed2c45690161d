import { z } from 'zod';
import { email, text } from '../../http/fields';
import { intId, timestamp } from '../shared/schemas';

export const saveNotificationBody = z.object({
  email_address: email(),
  email_owner: text(255),
});
export type SaveNotificationInput = z.infer<typeof saveNotificationBody>;

/** Spec: the owner's required message reads `The name field is required` (no period). */
export const notificationMessages = { messages: { 'email_owner.required': 'The name field is required' } };

export const notificationRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  email_address: z.string(),
  email_owner: z.string(),
  created_at: timestamp(),
  updated_at: timestamp(),
});

/** An account event (kept in `events`, mailed to the notification recipients by the worker). */
export const eventRecord = z.strictObject({
  id: intId(),
  type: z.string(),
  subject: z.string(),
  payload: z.record(z.string(), z.union([z.string(), z.number(), z.null()])),
  notified: z.number().int().meta({ description: 'how many recipients were mailed' }),
  notify_error: z.string().nullable(),
  created_at: timestamp(),
});
