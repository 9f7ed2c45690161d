import { TEXT_COLUMNS } from './csv-rows';

/**
 * SQL of the CSV import (csv-import.service.ts has the flow; bench/README.md the figures).
 *
 * Rows go one of two ways. A row whose address is new to the contact type goes straight into
 * `contacts` through one COPY that runs while the file is still being read. A row that names
 * a contact the type already has, or an address an earlier row named, goes to an unlogged
 * staging table; after the file is read, MERGE_STAGED writes the last row per address. When
 * the address list of the type is not loaded (a list much larger than the file), every row
 * takes the second way.
 */

const TEXT = TEXT_COLUMNS.join(', ');
const int = (n: number) => {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`);
  return n;
};

/** Columns of COPY_INTO_CONTACTS, in the order RowChecker.contactLine writes them. */
export const COPY_INTO_CONTACTS = `COPY contacts (user_id, contact_type_id, email, alt_email, country_id, ${TEXT}, custom_fields) FROM STDIN`;

/**
 * Locks the contact type against deletion until the import commits (FOR KEY SHARE, as the
 * reference checks on contacts do; a type being deleted meanwhile is waited for and then
 * found deleted). Other writers to the type's contacts are not blocked. $1 user, $2 type.
 */
export const LOCK_LIVE_TYPE = `SELECT id FROM contact_types WHERE id = $2 AND user_id = $1 AND deleted_at IS NULL FOR KEY SHARE`;

/** Live contacts of the type, counted up to $3 (answered from contacts_type_email_unique). */
export const COUNT_TYPE_CONTACTS = `SELECT count(*)::int AS n FROM (
  SELECT 1 FROM contacts WHERE contact_type_id = $2 AND user_id = $1 AND deleted_at IS NULL LIMIT $3
) c`;

/** The type's live contacts for the address set, streamed (COPY takes no parameters). */
export const COPY_TYPE_ADDRESSES = (userId: number, typeId: number) =>
  `COPY (SELECT id, email FROM contacts WHERE contact_type_id = ${int(typeId)} AND user_id = ${int(userId)} AND deleted_at IS NULL) TO STDOUT`;

/**
 * Staged rows in file order: `row_no` is the CSV line (the last row of an address wins),
 * `contact_id` the contact the row's address belonged to when the import started (NULL:
 * not known); blank cells are NULL so that the merge keeps what the contact has there.
 */
const STAGING_COLUMNS = [
  'row_no integer NOT NULL',
  'contact_id integer',
  'email text NOT NULL',
  'alt_email text',
  'country_id integer',
  ...TEXT_COLUMNS.map((c) => `${c} text`),
  'custom jsonb',
].join(', ');

/** Unlogged: nothing of it needs to survive a crash, and it writes no WAL. Dropped with the transaction's end or explicitly. */
export const CREATE_STAGING = (table: string) => `CREATE UNLOGGED TABLE ${table} (${STAGING_COLUMNS})`;
export const COPY_INTO_STAGING = (table: string) => `COPY ${table} FROM STDIN`;
export const DROP_STAGING = (table: string) => `DROP TABLE IF EXISTS ${table}`;

/**
 * What a contact becomes from its staged row `t`. A contact this import wrote itself
 * (`t.written_here`: an earlier row of the file inserted it) takes the last row as it is,
 * blank cells empty, as if the earlier rows had not been there; an existing contact keeps
 * the values of blank cells, and custom values merge key by key.
 */
const NEW_VALUES: Array<[string, string]> = [
  ['email', 't.email'],
  ['alt_email', 'CASE WHEN t.written_here THEN t.alt_email ELSE coalesce(t.alt_email, c.alt_email) END'],
  ['country_id', 'CASE WHEN t.written_here THEN t.country_id ELSE coalesce(t.country_id, c.country_id) END'],
  ...TEXT_COLUMNS.map((col): [string, string] => [col, `coalesce(t.${col}, CASE WHEN t.written_here THEN '' ELSE c.${col} END)`]),
  ['custom_fields', `CASE WHEN t.written_here THEN coalesce(t.custom, '{}') ELSE c.custom_fields || coalesce(t.custom, '{}') END`],
];

/** What an existing contact becomes when an inserted row meets it after all (an address added meanwhile). */
const MERGED_VALUES: Array<[string, string]> = [
  ['email', 'EXCLUDED.email'],
  ['alt_email', 'coalesce(EXCLUDED.alt_email, c.alt_email)'],
  ['country_id', 'coalesce(EXCLUDED.country_id, c.country_id)'],
  ...TEXT_COLUMNS.map((col): [string, string] => [col, `CASE WHEN EXCLUDED.${col} = '' THEN c.${col} ELSE EXCLUDED.${col} END`]),
  ['custom_fields', 'c.custom_fields || EXCLUDED.custom_fields'],
];

const changed = (values: Array<[string, string]>) =>
  `(${values.map(([col]) => `c.${col}`).join(', ')}) IS DISTINCT FROM (${values.map(([, v]) => v).join(', ')})`;
const assignments = (values: Array<[string, string]>) => values.map(([col, v]) => `${col} = ${v}`).join(',\n    ');
const ASCII_LOWER = (e: string) => `translate(${e}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`;

/**
 * The merge of the staged rows, one statement. $1 user, $2 type.
 *
 * - last_rows: the last row per address (DISTINCT ON lower(email), the unique index's
 *   equality, so rows the index calls one address are one here too).
 * - targets: the live contact with that address, looked up by the contact id the row
 *   brought when there is one (a primary-key probe, in id order) and by address otherwise.
 *   `written_here`: the contact's row version is this transaction's, i.e. the direct COPY
 *   inserted it from an earlier line.
 * - updated: rewrites each target whose values change, in id order (its heap pages and
 *   its primary-key entries are then visited once each, front to back: 16.0 s → 10.9 s for
 *   500,000 contacts in email order vs id order, measured with EXPLAIN ANALYZE). A contact
 *   whose values would not change is not written (an UPDATE writes a new row version and
 *   new index entries even when nothing changes).
 * - inserted: rows whose address has no contact, in the unique index's order; ON CONFLICT
 *   for an address another session added meanwhile (it is then updated like any other).
 *
 * `ambiguous` counts rows that met a contact this import wrote from a *different* spelling
 * of the address (a row read as new although PostgreSQL's lower() calls it the address of a
 * later row; see address-set.ts): the file order between them is then unknown here, and the
 * import starts over with every row staged, where the question cannot arise.
 *
 * `collate` is `COLLATE "C"` when the database's collation already orders by code point
 * (CODE_POINT_COLLATIONS): the same order, but comparing bytes instead of calling strcoll
 * (the sort of a million addresses went from 2.0 s to 1.6 s). Which row DISTINCT ON keeps
 * cannot change: equality under every deterministic collation is byte equality.
 */
export const MERGE_STAGED = (staging: string, collate: string) => `
WITH last_rows AS MATERIALIZED (
  SELECT DISTINCT ON (lower(email) ${collate}) *
  FROM ${staging}
  ORDER BY lower(email) ${collate}, row_no DESC
), targets AS MATERIALIZED (
  SELECT s.*, c.id AS target_id, c.email AS target_email, coalesce(c.xmin = pg_current_xact_id()::xid, false) AS written_here
  FROM (SELECT * FROM last_rows ORDER BY contact_id, lower(email) ${collate}) s
  LEFT JOIN LATERAL (
    (SELECT c.id, c.email, c.xmin FROM contacts c
     WHERE c.id = s.contact_id AND c.user_id = $1 AND c.contact_type_id = $2 AND c.deleted_at IS NULL AND lower(c.email) = lower(s.email))
    UNION ALL
    (SELECT c.id, c.email, c.xmin FROM contacts c
     WHERE c.contact_type_id = $2 AND lower(c.email) = lower(s.email) AND c.user_id = $1 AND c.deleted_at IS NULL)
    LIMIT 1
  ) c ON true
), updated AS (
  UPDATE contacts c SET
    ${assignments(NEW_VALUES)},
    updated_at = now()
  FROM (SELECT * FROM targets WHERE target_id IS NOT NULL ORDER BY target_id) t
  WHERE c.id = t.target_id AND c.user_id = $1 AND ${changed(NEW_VALUES)}
  RETURNING 1
), inserted AS (
  INSERT INTO contacts AS c (user_id, contact_type_id, email, alt_email, country_id, ${TEXT}, custom_fields)
  SELECT $1, $2, email, alt_email, country_id, ${TEXT_COLUMNS.map((t) => `coalesce(${t}, '')`).join(', ')}, coalesce(custom, '{}'::jsonb)
  FROM targets WHERE target_id IS NULL
  ORDER BY lower(email) ${collate}
  ON CONFLICT (contact_type_id, lower(email), user_id) WHERE deleted_at IS NULL DO UPDATE SET
    ${assignments(MERGED_VALUES)},
    updated_at = now()
  WHERE ${changed(MERGED_VALUES)}
  RETURNING (xmax = 0) AS is_new
)
SELECT
  (SELECT count(*) FROM targets)::int AS addresses,
  (SELECT count(*) FROM targets WHERE written_here)::int AS written_here,
  (SELECT count(*) FROM inserted WHERE is_new)::int AS inserted,
  (SELECT count(*) FROM updated)::int AS rewritten,
  (SELECT count(*) FROM targets WHERE written_here AND ${ASCII_LOWER('target_email')} <> ${ASCII_LOWER('email')})::int AS ambiguous`;

/** Database collations whose order is code-point order, i.e. byte order of UTF-8. */
export const CODE_POINT_COLLATIONS = `SELECT datcollate IN ('C', 'POSIX', 'C.UTF-8', 'C.utf8') AS code_point
FROM pg_database WHERE datname = current_database()`;
