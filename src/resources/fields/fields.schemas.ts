import { z } from 'zod';
import { RESERVED_FIELDS } from '../../../seeds/01_reserved-fields';
import { intId, timestamp } from '../shared/schemas';

export const FIELD_TYPES = ['text', 'number', 'datetime-local'] as const;

/**
 * Names a custom field may not take: the reserved fields, and the placeholders every design
 * already has (a custom `sender_name` would make ((sender_name)) ambiguous).
 */
export const RESERVED_NAMES = new Set([
  ...RESERVED_FIELDS.map((f) => f.field_name),
  'sender_name',
  'sender_address',
  'unsubscribe_preferences',
  'fullname',
  'id',
]);

export const saveCustomFieldBody = z.object({
  field_name: z
    .string()
    .max(64)
    .regex(/^[A-Za-z0-9_]+$/, { message: 'The :attribute format is invalid.' })
    .refine((v) => !RESERVED_NAMES.has(v.toLowerCase()), { message: 'The selected :attribute is invalid.' }),
  field_type: z.enum(FIELD_TYPES),
});
export type SaveCustomFieldInput = z.infer<typeof saveCustomFieldBody>;

const fieldType = z.enum(FIELD_TYPES);

export const reservedFieldRecord = z.strictObject({
  id: intId(),
  user_id: z.null(),
  field_name: z.string(),
  field_type: fieldType,
  is_reserved: z.literal(1),
  created_at: z.null(),
  updated_at: z.null(),
});

export const customFieldRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  field_name: z.string(),
  field_type: fieldType,
  is_reserved: z.literal(0),
  created_at: timestamp(),
  updated_at: timestamp(),
});
