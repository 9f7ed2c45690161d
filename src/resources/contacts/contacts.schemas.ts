import { z } from 'zod';
import { email, id, MAX_INT, optionalEmail, optionalText, text, toNumber } from '../../http/fields';
import { ImportStatus } from '../../states';
import { intId, timestamp } from '../shared/schemas';

const address = {
  state: optionalText(255),
  city: optionalText(255),
  address_line1: optionalText(255),
  address_line2: optionalText(255),
  state_province_region: optionalText(255),
  postal_code: optionalText(255),
};

/** Custom values come as `custom_field[<name>]` (or a top-level `<name>`): checked by type in the service. */
const customValues = z
  .record(z.string(), z.union([z.string(), z.number()]).transform(String))
  .optional()
  .meta({ description: 'custom field values keyed by field name: custom_field[<name>]=value' });

export const addContactBody = z.looseObject({
  contact_type_id: id(),
  first_name: optionalText(255),
  last_name: optionalText(255),
  email: email(),
  alt_email: optionalEmail(),
  country: id().meta({ description: 'a country id from /get/country-state-city' }),
  ...address,
  custom_field: customValues,
});
export type AddContactInput = z.infer<typeof addContactBody>;

/**
 * An optional id of the record to read from (`?contact_type_id=`, `?segment_id=`). A value that
 * cannot be an id (not a positive 32-bit integer) becomes 0, which names no record: the lookup
 * then answers the route's not found, as an id parameter does (docs/decisions.md, "HTTP
 * conventions": Ids).
 */
const lookupId = () =>
  z.preprocess((raw) => {
    const v = Array.isArray(raw) ? raw[0] : raw;
    if (v === undefined || v === null) return v;
    const n = toNumber(v);
    return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_INT ? n : 0;
  }, z.number().int().optional());

export const contactSearchQuery = z.object({
  q: text(255, 3).meta({
    description: 'part of an address, a first name or a last name (case-insensitive; at least 3 characters, so every search is answered from the trigram index)',
  }),
  contact_type_id: lookupId().meta({ description: 'only this contact type’s contacts' }),
});

export const contactExportQuery = z.object({
  contact_type_id: lookupId().meta({ description: 'export this contact type’s contacts (or segment_id)' }),
  segment_id: lookupId().meta({ description: 'export this segment’s members (or contact_type_id)' }),
});


const customFieldValue = z.strictObject({ field_name: z.string(), field_value: z.string().nullable() });

const contactBase = {
  id: intId(),
  user_id: intId(),
  contact_type_id: intId(),
  first_name: z.string(),
  last_name: z.string(),
  email: z.string(),
  alt_email: z.string().nullable(),
  country: z.string(),
  state: z.string(),
  city: z.string(),
  address_line1: z.string(),
  address_line2: z.string(),
  state_province_region: z.string(),
  postal_code: z.string(),
  custom_field: z.record(z.string(), customFieldValue).nullable(),
  deleted_at: timestamp().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
  fullname: z.string(),
};

export const contactTypeObject = z.strictObject({
  id: intId(),
  user_id: intId(),
  name: z.string(),
  deleted_at: timestamp().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
});

/** In the list: `country` is the country's name, plus the `contact_type` object. */
export const contactListRecord = z.strictObject({ ...contactBase, contact_type: contactTypeObject });
/** In the detail: `country` is the country id as a string. */
export const contactDetailRecord = z.strictObject(contactBase);

/** A CSV import; while `running`, `rows_read` and `bytes_read` (of `file_bytes`) grow about once a second. */
export const importRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  contact_type_id: intId(),
  file_name: z.string(),
  status: z.enum(ImportStatus),
  file_bytes: z.number().int(),
  bytes_read: z.number().int(),
  rows_read: z.number().int(),
  inserted: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  skipped: z.number().int(),
  reasons: z.array(z.strictObject({ row: z.number().int(), reason: z.string() })),
  ignored_columns: z.array(z.string()),
  error: z.string().nullable(),
  duration_ms: z.number().int().nullable(),
  created_at: timestamp(),
  finished_at: timestamp().nullable(),
});
