import { TEXT_COLUMNS } from '../../contacts/columns';

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

/**
 * Columns of COPY_INTO_CONTACTS, in the order RowChecker.contactLine writes them after the
 * constant prefix (user, type, and the import that inserts the contact: its consent, src/consent).
 */
export const COPY_INTO_CONTACTS = `COPY contacts (user_id, contact_type_id, import_id, email, alt_email, country_id, ${TEXT}, custom_fields) FROM STDIN`;

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

/**
 * `lower(email)` is one of `literals` (SQL string literals, already quoted), under PostgreSQL's
 * lower() as the unique index compares. Written as an array of `lower('…')` constants, which the
 * planner folds into one constant array and looks rows up in by hash: on statistics that say
 * "one row" (a table just COPY'd into, never analysed) the planner scans the account's
 * contacts for a sample's addresses instead of probing the unique index, and an array computed
 * by a subquery was searched element by element — 7.6 s for 512 addresses among 1,000,000
 * contacts, 0.35 s hashed (EXPLAIN ANALYZE, bench:import `stale`, 2026-11-29).
 */
const emailIn = (literals: string[]) => `lower(email) = ANY (ARRAY[${literals.map((l) => `lower(${l})`).join(', ')}]::text[])`;

/** How many of the addresses `literals` (SQL string literals, already quoted) the type's live contacts have (emailIn). */
export const COUNT_KNOWN_ADDRESSES = (userId: number, typeId: number, literals: string[]) => `SELECT count(*)::int AS n FROM contacts
WHERE contact_type_id = ${int(typeId)} AND user_id = ${int(userId)} AND deleted_at IS NULL AND ${emailIn(literals)}`;

/**
 * How COUNT_TYPE_CONTACTS and COPY_TYPE_ADDRESSES read the type's contacts: in the heap's order
 * (a bitmap of the index's matches, or the whole table), never one index entry at a time. Right
 * after an import has `COPY`'d a million contacts the table's statistics still say "one row",
 * and the planner walked `contacts_type_email_unique` in address order, fetching each contact's
 * page at random: 1,000,000 heap fetches and 400,000 buffer reads each time — the count 2.3 s,
 * the addresses 5.0 s (auto_explain, bench:import `twice`, 2026-11-27). A bitmap reads each
 * page once, in order; for a count of all-visible pages it reads none. RESET: the defaults
 * again for the rest of the import's transaction.
 */
export const HEAP_ORDER = 'SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off';
export const HEAP_ORDER_RESET = 'SET LOCAL enable_indexscan TO DEFAULT; SET LOCAL enable_indexonlyscan TO DEFAULT';

/**
 * The type's live contacts for the address set, streamed (COPY takes no parameters): the id,
 * then `columns` — the address alone, or the values a fingerprint is made of
 * (contact-fingerprint.ts), which start with the address. `only`: just the contacts with these
 * addresses (SQL string literals, already quoted; emailIn).
 */
export const COPY_TYPE_ADDRESSES = (userId: number, typeId: number, columns: string[] = ['email'], only?: string[]) => {
  if (columns[0] !== 'email') throw new Error(`the address comes first: ${columns.join(', ')}`);
  const some = only ? ` AND ${emailIn(only)}` : '';
  return `COPY (SELECT id, ${columns.join(', ')} FROM contacts WHERE contact_type_id = ${int(typeId)} AND user_id = ${int(userId)} AND deleted_at IS NULL${some}) TO STDOUT`;
};

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
 * What a contact `c` becomes from its staged row `t`. A contact this import wrote itself
 * (`writtenHere`: an earlier row of the file inserted it) takes the last row as it is, blank
 * cells empty, as if the earlier rows had not been there; an existing contact keeps the
 * values of blank cells, and custom values merge key by key.
 */
const newValues = (writtenHere: string): Array<[string, string]> => [
  ['email', 't.email'],
  ['alt_email', `CASE WHEN ${writtenHere} THEN t.alt_email ELSE coalesce(t.alt_email, c.alt_email) END`],
  ['country_id', `CASE WHEN ${writtenHere} THEN t.country_id ELSE coalesce(t.country_id, c.country_id) END`],
  ...TEXT_COLUMNS.map((col): [string, string] => [col, `coalesce(t.${col}, CASE WHEN ${writtenHere} THEN '' ELSE c.${col} END)`]),
  ['custom_fields', `CASE WHEN ${writtenHere} THEN coalesce(t.custom, '{}') ELSE c.custom_fields || coalesce(t.custom, '{}') END`],
];
const KNOWN_CONTACT = newValues('false');
const ANY_CONTACT = newValues('t.written_here');

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
/** The live contact of the type `c` is, when it still has the staged row's address. */
const LIVE_WITH_ADDRESS = `c.user_id = $1 AND c.contact_type_id = $2 AND c.deleted_at IS NULL AND lower(c.email) = lower(t.email)`;

/**
 * The merge of the staged rows, one statement. $1 user, $2 type, $3 the import (a contact it inserts carries it).
 *
 * - last_rows: the last row per address. After a direct read the staging table holds just
 *   those, as the import's address set tells addresses apart (`lastRowsOnly`, LastRowsOnly in
 *   row-router.ts); otherwise DISTINCT ON lower(email), the unique index's equality, picks
 *   them (a sort of every staged row).
 * - known: rows that brought the id of the contact their address had when the import
 *   started (nearly all of them, in a list the import knew): that contact is rewritten where
 *   a value changes, straight from the row, in id order (its heap pages and primary-key
 *   entries are then visited front to back, once each; bench/README.md has the figures). A
 *   contact whose values would not change is not written (an UPDATE writes a new row version
 *   and new index entries even when nothing changes).
 * - unchanged: the other rows that brought an id, whose contact would not change (a re-import
 *   of the same file): left alone here, so they are not looked up again below. LATERAL: the
 *   staged rows must be the outer side, a primary-key lookup each (as a plain join the planner
 *   may scan the account's contacts and rescan the staged rows for each: minutes).
 * - targets: every other row (no id, or a contact that has since changed address or been
 *   deleted), with the live contact of its address, by id or by
 *   address. `written_here`: that contact's row version is this transaction's, i.e. the
 *   direct COPY inserted it from an earlier line.
 * - updated: rewrites those targets whose values change.
 * - changed: existing contacts rewritten (known, updated, and inserted's conflicts); the other
 *   existing contacts a row met (unchanged, and targets not rewritten) are unchanged: nothing
 *   was written for them.
 * - inserted: rows whose address has no contact, in the unique index's order; ON CONFLICT
 *   for an address another session added meanwhile (then updated like any other).
 *
 * `ambiguous` counts what only the address set's spelling rules (ASCII lower-casing, see
 * address-set.ts) could have let through, where PostgreSQL's lower() sees one address: a row
 * that met a contact this import wrote from a different spelling (the file order between
 * them is unknown here), a contact met by two rows, or a contact that one row met by address
 * and another by id. Two rows inserting one address fail with 21000. Either way the import
 * starts over with every row staged and DISTINCT ON, where the questions cannot arise.
 *
 * `collate` is `COLLATE "C"` when the database's collation already orders by code point
 * (CODE_POINT_COLLATIONS): the same order, but comparing bytes instead of calling strcoll.
 * Which row DISTINCT ON keeps cannot change: equality under every deterministic collation is
 * byte equality.
 */
export const MERGE_STAGED = (staging: string, collate: string, lastRowsOnly: boolean) => `
WITH last_rows AS ${
  lastRowsOnly
    ? `NOT MATERIALIZED (SELECT * FROM ${staging})`
    : `MATERIALIZED (
  SELECT DISTINCT ON (lower(email) ${collate}) *
  FROM ${staging}
  ORDER BY lower(email) ${collate}, row_no DESC
)`
}, known AS (
  UPDATE contacts c SET
    ${assignments(KNOWN_CONTACT)},
    updated_at = now()
  FROM (SELECT * FROM last_rows WHERE contact_id IS NOT NULL ORDER BY contact_id) t
  WHERE c.id = t.contact_id AND ${LIVE_WITH_ADDRESS} AND ${changed(KNOWN_CONTACT)}
  RETURNING t.row_no
), unchanged AS MATERIALIZED (
  SELECT t.row_no
  FROM (SELECT * FROM last_rows WHERE contact_id IS NOT NULL AND row_no NOT IN (SELECT row_no FROM known) ORDER BY contact_id) t
  CROSS JOIN LATERAL (SELECT 1 FROM contacts c WHERE c.id = t.contact_id AND ${LIVE_WITH_ADDRESS} AND NOT ${changed(KNOWN_CONTACT)} LIMIT 1) c
), targets AS MATERIALIZED (
  SELECT t.*, c.id AS target_id, c.email AS target_email, coalesce(c.xmin = pg_current_xact_id()::xid, false) AS written_here
  FROM (
    SELECT * FROM last_rows WHERE row_no NOT IN (SELECT row_no FROM known) AND row_no NOT IN (SELECT row_no FROM unchanged)
    ORDER BY contact_id, lower(email) ${collate}
  ) t
  LEFT JOIN LATERAL (
    (SELECT c.id, c.email, c.xmin FROM contacts c WHERE c.id = t.contact_id AND ${LIVE_WITH_ADDRESS})
    UNION ALL
    (SELECT c.id, c.email, c.xmin FROM contacts c WHERE ${LIVE_WITH_ADDRESS})
    LIMIT 1
  ) c ON true
), updated AS (
  UPDATE contacts c SET
    ${assignments(ANY_CONTACT)},
    updated_at = now()
  FROM (SELECT * FROM targets WHERE target_id IS NOT NULL ORDER BY target_id) t
  WHERE c.id = t.target_id AND ${LIVE_WITH_ADDRESS} AND ${changed(ANY_CONTACT)}
  RETURNING t.written_here
), inserted AS (
  INSERT INTO contacts AS c (user_id, contact_type_id, import_id, email, alt_email, country_id, ${TEXT}, custom_fields)
  SELECT $1, $2, $3::integer, email, alt_email, country_id, ${TEXT_COLUMNS.map((t) => `coalesce(${t}, '')`).join(', ')}, coalesce(custom, '{}'::jsonb)
  FROM targets WHERE target_id IS NULL
  ORDER BY lower(email) ${collate}
  ON CONFLICT (contact_type_id, lower(email), user_id) WHERE deleted_at IS NULL DO UPDATE SET
    ${assignments(MERGED_VALUES)},
    updated_at = EXCLUDED.updated_at
  WHERE ${changed(MERGED_VALUES)}
  RETURNING (xmax = 0) AS is_new
)
SELECT
  (SELECT count(*) FROM last_rows)::int AS addresses,
  (SELECT count(*) FROM targets WHERE written_here)::int AS written_here,
  (SELECT count(*) FROM inserted WHERE is_new)::int AS inserted,
  ((SELECT count(*) FROM known) + (SELECT count(*) FROM updated WHERE NOT written_here) + (SELECT count(*) FROM inserted WHERE NOT is_new))::int AS changed,
  (SELECT count(*) FILTER (WHERE written_here AND ${ASCII_LOWER('target_email')} <> ${ASCII_LOWER('email')})
        + count(target_id) - count(DISTINCT target_id)
        + count(*) FILTER (WHERE target_id IS DISTINCT FROM contact_id AND target_id IN (SELECT contact_id FROM last_rows WHERE contact_id IS NOT NULL))
   FROM targets)::int AS ambiguous`;

/**
 * The join methods MERGE_STAGED may use: only nested loops, i.e. one index lookup per staged
 * row (primary key or contacts_type_email_unique), in the order the merge sorts the rows.
 * The staging table has no statistics when the merge is planned, and with them (ANALYZE) the
 * planner still chose a hash join that reads every contact of the type and hashes them
 * (300 MB for 1,500,000) to update 500,000 of them; the lookups in id order cost less and
 * touch only the pages of the contacts being updated (bench/README.md has the figures).
 * SET LOCAL: MERGE_JOINS_RESET restores the defaults for the rest of the transaction. This
 * does not save a merge planned on no statistics of `contacts` at all (a fresh database): the
 * import analyses it first when its statistics are stale (CONTACTS_STATISTICS).
 */
export const MERGE_JOINS = 'SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off';
export const MERGE_JOINS_RESET = 'SET LOCAL enable_hashjoin TO DEFAULT; SET LOCAL enable_mergejoin TO DEFAULT';

/**
 * What the planner believes about `contacts` when the merge is planned: `reltuples` (-1:
 * never analysed) and the rows changed since its last ANALYZE that the statistics system has
 * been told of (committed work of other sessions; this import's own COPY is not in it yet).
 */
export const CONTACTS_STATISTICS = `SELECT c.reltuples::float8 AS reltuples, coalesce(s.n_mod_since_analyze, 0)::float8 AS modified
FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.oid = 'contacts'::regclass`;

/**
 * Statistics of `contacts` and of the staging table, read by the merge's planner. ANALYZE in
 * the import's transaction sees the rows this import has written so far; an ordinary role that
 * owns the tables may run it (one that does not gets a warning, not an error).
 */
export const ANALYZE_FOR_MERGE = (staging: string) => `ANALYZE contacts; ANALYZE ${staging}`;

/** Database collations whose order is code-point order, i.e. byte order of UTF-8. */
export const CODE_POINT_COLLATIONS = `SELECT datcollate IN ('C', 'POSIX', 'C.UTF-8', 'C.utf8') AS code_point
FROM pg_database WHERE datname = current_database()`;
