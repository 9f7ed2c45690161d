import type { Knex } from 'knex';
import type { RecipientData } from './render';

/**
 * The sample values a preview fills placeholders with when no contact is chosen (issue 34: a
 * design's preview, a send's preview without `contact_id`). One place, so every preview shows the
 * same made-up person.
 */
export const SAMPLE_SENDER = {
  fromName: 'Your Company',
  fromEmail: 'hello@example.com',
  replyTo: 'hello@example.com',
  senderAddress: '1 Sample Street, Springfield, 12345, United States',
} as const;

/** The token of a sample recipient: its unsubscribe and tracking links lead nowhere. */
export const SAMPLE_TOKEN = 'preview';

/**
 * A made-up recipient: the reserved fields filled, and each custom field (`customFields`: name by
 * id, as compileDesign takes them) showing its own name in brackets, e.g. `[plan]`.
 */
export function sampleRecipient(customFields: ReadonlyMap<string, string> = new Map()): RecipientData {
  return {
    email: 'jane.doe@example.com',
    token: SAMPLE_TOKEN,
    fields: {
      first_name: 'Jane',
      last_name: 'Doe',
      alt_email: 'jane@example.org',
      country: 'United States',
      state: 'Illinois',
      city: 'Springfield',
      address_line1: '742 Evergreen Terrace',
      address_line2: '',
      state_province_region: 'IL',
      postal_code: '62704',
    },
    custom: Object.fromEntries([...customFields].map(([id, name]) => [id, `[${name}]`])),
  };
}

/** The account's custom field names by id (as compileDesign and sampleRecipient take them). */
export async function customFieldNames(db: Knex, userId: number): Promise<Map<string, string>> {
  const rows = (await db('custom_fields').where({ user_id: userId }).select('id', 'field_name')) as Array<{ id: number; field_name: string }>;
  return new Map(rows.map((f) => [String(f.id), f.field_name]));
}
