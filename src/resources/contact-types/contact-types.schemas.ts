import { z } from 'zod';
import { text } from '../../http/fields';
import { intId, timestamp } from '../shared/schemas';

/** Spec limit: a contact type name has at least 2 characters. */
export const contactTypeBody = z.object({ name: text(255, 2) });
export type ContactTypeInput = z.infer<typeof contactTypeBody>;

export const contactTypeRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  name: z.string(),
  deleted_at: timestamp().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
});

/** In the list only: the number of live contacts of the type. */
export const contactTypeListRecord = contactTypeRecord.extend({ contacts_count: z.number().int() });
