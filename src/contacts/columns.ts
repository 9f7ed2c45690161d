/**
 * src/contacts: what both the API (src/resources) and the sending (src/delivery) know of a
 * contact — its reserved columns (here), the fields a rule may name (fields.ts), segment rules
 * (segment-rules.ts) and segment membership as SQL (segments.sql.ts) — below both of them.
 *
 * A contact's reserved columns, named once: the CSV import, the sample CSV, the contact
 * service, the segment rules and the renderer's placeholders all list them from here.
 */

/** The postal address, stored as text ('' when blank). */
export const ADDRESS_COLUMNS = ['state', 'city', 'address_line1', 'address_line2', 'state_province_region', 'postal_code'] as const;

/** Columns stored as free text ('' when blank): names and the address, in the order contacts list them. */
export const TEXT_COLUMNS = ['first_name', 'last_name', ...ADDRESS_COLUMNS] as const;

/** Every reserved column, in the order a CSV header lists them (the spec's reserved fields). */
export const RESERVED_COLUMNS = ['first_name', 'last_name', 'email', 'alt_email', 'country', ...ADDRESS_COLUMNS] as const;
