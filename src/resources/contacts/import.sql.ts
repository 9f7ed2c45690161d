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

/** What an existing contact becomes when a staged row matches it (EXCLUDED = the staged row). */
const UPDATED_VALUES: Array<[string, string]> = [
  ['email', 'EXCLUDED.email'],
  ['alt_email', 'coalesce(EXCLUDED.alt_email, c.alt_email)'],
  ['country_id', 'coalesce(EXCLUDED.country_id, c.country_id)'],
  ...TEXT.map((t): [string, string] => [t, `CASE WHEN EXCLUDED.${t} = '' THEN c.${t} ELSE EXCLUDED.${t} END`]),
  ['custom_fields', 'c.custom_fields || EXCLUDED.custom_fields'],
];

/**
 * One statement for the whole file: keep the last row per address (DISTINCT ON), insert in
 * unique-key order, update existing contacts of the type. Why sorted: inserting in
 * lower(email) order walks the unique index left to right instead of touching a random
 * leaf page per row; for a new contact type every insert lands on the rightmost leaf, which
 * btree caches (no descent at all). Measured on a million rows: 4.7 s sorted vs 6.1 s in
 * file order. A blank cell leaves an existing value alone (staging NULL → '' on insert, kept
 * on update); custom values merge key by key. $1 user, $2 type.
 *
 * A matched contact whose values would not change is not rewritten (the DO UPDATE's WHERE):
 * re-importing a list mostly repeats what is stored, and an UPDATE writes a new row version
 * and new entries in every index even when nothing changed. Measured on the benchmark's
 * million rows imported a second time: 54.5 s rewriting every row, 20.7 s skipping them
 * (bench/README.md). Such rows still count as `updated` (matched an existing contact), so the counts stay
 * "inserted + updated = distinct addresses of the file"; their `updated_at` stays as it was.
 * `xmax = 0` tells an inserted row from an updated one.
 *
 * `collate` is `COLLATE "C"` when the database's own collation already orders by code point
 * (C, POSIX, C.UTF-8; see CODE_POINT_COLLATIONS): the same order, but PostgreSQL compares bytes
 * (memcmp with abbreviated keys) instead of calling strcoll, which took the sort of a million
 * addresses from 2.0 s to 1.6 s. Which row DISTINCT ON keeps cannot change: equality under
 * every deterministic collation is byte equality.
 */
export const UPSERT_STAGED_CONTACTS = (staging: string, collate = '') => `
WITH last_rows AS (
  SELECT DISTINCT ON (lower(email) ${collate}) *
  FROM ${staging}
  ORDER BY lower(email) ${collate}, row_no DESC
), written AS (
  INSERT INTO contacts AS c (user_id, contact_type_id, email, alt_email, country_id, ${TEXT.join(', ')}, custom_fields)
  SELECT $1, $2, email, alt_email, country_id, ${TEXT.map((t) => `coalesce(${t}, '')`).join(', ')}, coalesce(custom, '{}'::jsonb)
  FROM last_rows
  ON CONFLICT (contact_type_id, lower(email), user_id) WHERE deleted_at IS NULL DO UPDATE SET
    ${UPDATED_VALUES.map(([col, value]) => `${col} = ${value}`).join(',\n    ')},
    updated_at = now()
  WHERE (${UPDATED_VALUES.map(([col]) => `c.${col}`).join(', ')})
    IS DISTINCT FROM (${UPDATED_VALUES.map(([, value]) => value).join(', ')})
  RETURNING (xmax = 0) AS inserted
)
SELECT
  count(*) FILTER (WHERE inserted)::int AS inserted,
  (SELECT count(*) FROM last_rows)::int - count(*) FILTER (WHERE inserted)::int AS updated
FROM written`;

/** Database collations whose order is code-point order, i.e. byte order of UTF-8. */
export const CODE_POINT_COLLATIONS = `SELECT datcollate IN ('C', 'POSIX', 'C.UTF-8', 'C.utf8') AS code_point
FROM pg_database WHERE datname = current_database()`;

/**
 * Whether the upsert may run without per-row foreign-key triggers (see import.service.ts,
 * skipForeignKeyTriggers). True only when this role may set session_replication_role and
 * every trigger on contacts is a foreign-key trigger of the three references the import
 * locks itself (user_id → accounts, contact_type_id → contact_types, country_id → countries)
 * or of tables referencing contacts (whose checks only fire when a contact id changes, which
 * the upsert never does). Any other trigger or reference added later turns the shortcut off.
 */
export const FK_TRIGGERS_SKIPPABLE = (canSetReplicationRole: string) => `
SELECT (${canSetReplicationRole})
  AND NOT EXISTS (
    SELECT 1 FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
    WHERE t.tgrelid = 'contacts'::regclass AND p.proname NOT LIKE 'RI\\_FKey\\_%'
  )
  AND NOT EXISTS (
    SELECT 1 FROM pg_constraint k
    WHERE k.conrelid = 'contacts'::regclass AND k.contype = 'f'
      AND (cardinality(k.conkey) <> 1 OR (
        SELECT a.attname || '>' || k.confrelid::regclass::text
        FROM pg_attribute a WHERE a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
      ) NOT IN ('user_id>accounts', 'contact_type_id>contact_types', 'country_id>countries'))
  ) AS skippable`;

/**
 * What the skipped foreign-key triggers would have done, once per referenced row instead of
 * once per contact: lock the account, the contact type and every country used against
 * deletion until commit (FOR KEY SHARE, as the triggers do) and count what exists.
 * $1 user, $2 type, $3 country ids.
 */
export const LOCK_REFERENCES = `
SELECT (SELECT count(*) FROM (SELECT 1 FROM accounts WHERE id = $1 FOR KEY SHARE) a)
     + (SELECT count(*) FROM (SELECT 1 FROM contact_types WHERE id = $2 FOR KEY SHARE) t)
     + (SELECT count(*) FROM (SELECT 1 FROM countries WHERE id = ANY($3::int[]) FOR KEY SHARE) c) AS found`;

/** Whether the contact type has a live contact (answered from contacts_type_email_unique). $1 type. */
export const TYPE_HAS_CONTACTS = `SELECT EXISTS (
  SELECT 1 FROM contacts WHERE contact_type_id = $1 AND deleted_at IS NULL
) AS has_contacts`;

/**
 * The fast path of an import into a contact type without contacts: nothing can be updated,
 * so rows go straight into contacts as the upsert would insert them (blank text '', no custom
 * values '{}'), in one COPY that runs while the file is still being parsed, with no staging
 * table, sort or second pass. An address given twice hits the unique index and sends the
 * import back to the staged upsert (see import.service.ts).
 */
export const COPY_INTO_CONTACTS = `COPY contacts (user_id, contact_type_id, email, alt_email, country_id, ${TEXT.join(', ')}, custom_fields) FROM STDIN`;
