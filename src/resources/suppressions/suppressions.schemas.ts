import { z } from 'zod';
import { emailList } from '../../http/fields';
import { intId, timestamp } from '../shared/schemas';

export const SUPPRESSION_TYPES = ['bounce', 'complaint', 'manual'] as const;
export const SUPPRESSION_SOURCES = ['smtp', 'dsn', 'arf', 'imap', 'sendgrid', 'mailgun', 'postmark', 'ses', 'api'] as const;

export const listSuppressionsQuery = z.object({
  type: z
    .string()
    .refine((v) => (SUPPRESSION_TYPES as readonly string[]).includes(v), { message: 'The selected :attribute is invalid.' })
    .optional()
    .meta({ description: SUPPRESSION_TYPES.join(' | ') }),
  email: z.string().max(254).optional().meta({ description: 'one address, case-insensitive' }),
});
export type ListSuppressionsQuery = z.output<typeof listSuppressionsQuery>;

export const emailsBody = z.object({
  emails: emailList().meta({ description: 'comma-separated addresses (`;` and whitespace separate too)', example: 'a@example.com, b@example.org' }),
});

export const suppressionRecord = z.strictObject({
  id: intId(),
  email: z.string(),
  type: z.enum(SUPPRESSION_TYPES),
  reason: z.string(),
  diagnostic: z.string(),
  source: z.enum(SUPPRESSION_SOURCES),
  single_send_utr: z.string().nullable(),
  automation_utr: z.string().nullable(),
  created_at: timestamp(),
  has_message: z.union([z.literal(0), z.literal(1)]).meta({ description: '1 when the report is kept (GET /suppressions/message)' }),
});

export const suppressionMessage = z.strictObject({
  raw: z.string().meta({ description: 'the bounce or complaint report as received (at most 256 KB)' }),
});
