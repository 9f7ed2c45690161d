/**
 * SQL of the CSV import's hot path (see import.service.ts for the flow).
 *
 * Staging rows are COPY'd in file order; `row_no` is the CSV line, so "the last row wins"
 * for an address that appears twice and skipped rows can be reported by line.
 */
export const STAGING_COLUMNS = [
  'row_no integer NOT NULL',
  'email text NOT NULL',
  'alt_email text',
  'country_id integer',
  'first_name text',
  'last_name text',
  'state text',
  'city text',
  'address_line1 text',
  'address_line2 text',
  'state_province_region text',
  'postal_code text',
  'custom jsonb',
].join(', ');

const TEXT = ['first_name', 'last_name', 'state', 'city', 'address_line1', 'address_line2', 'state_province_region', 'postal_code'];

/**
 * One statement for the whole file: keep the last row per address (DISTINCT ON), insert in
 * unique-key order, update existing contacts of the type. Why sorted: inserting in
 * lower(email) order walks the unique index left to right instead of touching a random
 * leaf page per row, which measured faster than file order on a million rows. A blank cell
 * leaves an existing value alone (staging NULL → '' on insert, kept on update); custom values
 * merge key by key. `xmax = 0` tells an inserted row from an updated one. $1 user, $2 type.
 */
export const UPSERT_STAGED_CONTACTS = (staging: string) => `
WITH last_rows AS (
  SELECT DISTINCT ON (lower(email)) *
  FROM ${staging}
  ORDER BY lower(email), row_no DESC
), written AS (
  INSERT INTO contacts AS c (user_id, contact_type_id, email, alt_email, country_id, ${TEXT.join(', ')}, custom_fields)
  SELECT $1, $2, email, alt_email, country_id, ${TEXT.map((t) => `coalesce(${t}, '')`).join(', ')}, coalesce(custom, '{}'::jsonb)
  FROM last_rows
  ON CONFLICT (contact_type_id, lower(email)) WHERE deleted_at IS NULL DO UPDATE SET
    email = EXCLUDED.email,
    alt_email = coalesce(EXCLUDED.alt_email, c.alt_email),
    country_id = coalesce(EXCLUDED.country_id, c.country_id),
    ${TEXT.map((t) => `${t} = CASE WHEN EXCLUDED.${t} = '' THEN c.${t} ELSE EXCLUDED.${t} END`).join(',\n    ')},
    custom_fields = c.custom_fields || EXCLUDED.custom_fields,
    updated_at = now()
  RETURNING (xmax = 0) AS inserted
)
SELECT
  count(*) FILTER (WHERE inserted)::int AS inserted,
  count(*) FILTER (WHERE NOT inserted)::int AS updated
FROM written`;
