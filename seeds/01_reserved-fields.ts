import type { Knex } from 'knex';

/**
 * Reserved fields: the contact's own columns, reference data (the `fields` view shows them with
 * user_id null and is_reserved 1) with fixed ids, so a segment rule that names field 3 means `email` on every installation.
 */
export const RESERVED_FIELDS: ReadonlyArray<{ id: number; field_name: string; field_type: string }> = [
  { id: 1, field_name: 'first_name', field_type: 'text' },
  { id: 2, field_name: 'last_name', field_type: 'text' },
  { id: 3, field_name: 'email', field_type: 'text' },
  { id: 4, field_name: 'alt_email', field_type: 'text' },
  { id: 5, field_name: 'country', field_type: 'text' },
  { id: 6, field_name: 'state', field_type: 'text' },
  { id: 7, field_name: 'city', field_type: 'text' },
  { id: 8, field_name: 'address_line1', field_type: 'text' },
  { id: 9, field_name: 'address_line2', field_type: 'text' },
  { id: 10, field_name: 'state_province_region', field_type: 'text' },
  { id: 11, field_name: 'postal_code', field_type: 'text' },
];

export async function seed(knex: Knex): Promise<void> {
  await knex('reserved_fields')
    .insert(RESERVED_FIELDS.map((f) => ({ ...f })))
    .onConflict('id')
    .merge(['field_name', 'field_type']);
}
