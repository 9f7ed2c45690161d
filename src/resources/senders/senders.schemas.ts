import { z } from 'zod';
import { email, id, optionalText, text } from '../../http/fields';
import { SenderVerification } from '../../states';
import { datetime, intId, oneOf, timestamp } from '../shared/schemas';

/** The form of save, and of update (which adds `sender_id`): the spec's required set. */
export const senderBody = z.object({
  from_name: text(255).meta({ description: 'the name recipients see', example: 'Acme News' }),
  from_email: email().meta({ description: 'the From address; a verification mail goes here', example: 'news@acme.example' }),
  reply_to_email: email().meta({ example: 'support@acme.example' }),
  country_id: id().meta({ description: 'a country id from /get/country-state-city' }),
  state_id: id().optional().meta({ description: 'a state of that country' }),
  city_id: id().optional().meta({ description: 'a city of that state (or country)' }),
  zip_code: optionalText(40),
  company_address: text(255),
  company_address2: optionalText(255),
  nickname: text(255).meta({ description: 'a name for this sender inside the account' }),
});
export type SenderInput = z.infer<typeof senderBody>;

/** The record (`message.senders[]`, `message.sender`); the verification token never leaves the database. */
export const senderRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  from_name: z.string(),
  from_email: z.string(),
  reply_to_email: z.string(),
  country_id: intId(),
  state_id: intId().nullable(),
  city_id: intId().nullable(),
  zip_code: z.string(),
  company_address: z.string(),
  company_address2: z.string(),
  nickname: z.string(),
  is_verified: oneOf(SenderVerification).meta({ description: '1 once the link in the verification mail was opened' }),
  utr: z
    .string()
    .regex(/^[0-9a-f]{16}$/)
    .meta({ description: '16 hexadecimal characters', example: '9f86d081884c7d65' }),
  send_at: datetime().nullable().meta({ description: 'when the last verification mail went out; null if none did' }),
  created_at: timestamp(),
  updated_at: timestamp(),
  deleted_at: timestamp().nullable(),
});
export type SenderRecord = z.infer<typeof senderRecord>;
