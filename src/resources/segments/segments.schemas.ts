import { z } from 'zod';
import { email, id, list, optionalList, text } from '../../http/fields';
import { intId, timestamp } from '../shared/schemas';

const stringItem = z.union([z.string(), z.number()]).transform(String);

/** `POST /segment/save` and `/segment/update` (Herald's additions; the spec shows none). */
export const segmentBody = z.object({
  segment_name: text(255),
  contact_type_id: id(),
  select_field: list(stringItem, 50).meta({ description: 'field ids (reserved or custom): select_field[0], …' }),
  select_operator: list(z.string().max(40), 50).meta({
    description:
      'per field: text — is, is not, contains, does not contain, starts with, ends with, is empty, is not empty; ' +
      'number — is, is not, is greater than, is less than, is between; datetime-local — is, is before, is after, is between',
  }),
  value: optionalList(stringItem, 50).meta({ description: 'operand per rule (`low,high` for is between); value[i] pairs with select_field[i]' }),
  query_type: z
    .preprocess((v) => (typeof v === 'string' ? v.toLowerCase() : v), z.enum(['and', 'or']))
    .optional()
    .meta({ description: 'how rules combine; default and' }),
});
export type SegmentInput = z.infer<typeof segmentBody>;

export const storeRecipientBody = z.object({
  segment_id: id(),
  first_name: text(255),
  last_name: text(255),
  email: email(),
});
export type StoreRecipientInput = z.infer<typeof storeRecipientBody>;

export const segmentRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  contact_type_id: intId(),
  segment_name: z.string(),
  select_field: z.array(z.string()),
  select_operator: z.array(z.string()),
  value: z.array(z.string()),
  query_type: z.string().nullable(),
  deleted_at: timestamp().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
  segment_emails_count: z.number().int(),
});

/**
 * A member: a matching contact (`contact_id` = `id` = the contact's id) or a recipient added
 * by hand (`contact_id` null, `id` = the recipient's id, which /segment/email/delete takes).
 */
export const segmentRecipientRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  segment_id: intId(),
  contact_id: intId().nullable(),
  first_name: z.string().nullable(),
  last_name: z.string().nullable(),
  email: z.string(),
  country: z.string().nullable(),
  state: z.string().nullable(),
  city: z.string().nullable(),
  address_line1: z.string().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
  fullname: z.string(),
});
