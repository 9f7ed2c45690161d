import { z } from 'zod';
import { emailList } from '../../http/fields';
import { intId, timestamp } from '../shared/schemas';

export const saveUnsubscribersBody = z.object({
  email_address: emailList().meta({
    description: 'comma-separated addresses (`;` and whitespace separate too); duplicates are ignored',
    example: 'a@example.com, b@example.org',
  }),
});

export const unsubscriberRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  unsubscribe_groups_id: intId()
    .nullable()
    .meta({ description: 'the group of the email the address unsubscribed from; null when added by the API' }),
  email_address: z.string(),
  created_at: timestamp(),
  updated_at: timestamp(),
});
