import type { Knex } from 'knex';

/**
 * Snapshots of what an account owns, to prove a request changed nothing. The tenant tables
 * are found in the catalogue (every table with a `user_id`), so a table added later is
 * covered without anyone listing it here.
 */
const tenantTables = new WeakMap<Knex, Promise<string[]>>();

export function listTenantTables(db: Knex): Promise<string[]> {
  let tables = tenantTables.get(db);
  tables ??= db
    .raw(
      `SELECT c.table_name AS name FROM information_schema.columns c
        JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
       WHERE c.table_schema = current_schema() AND c.column_name = 'user_id' AND t.table_type = 'BASE TABLE'
         AND c.table_name NOT LIKE 'contact\\_import\\_%'
       ORDER BY 1`,
    )
    .then((r: { rows: Array<{ name: string }> }) => r.rows.map((x) => x.name));
  tenantTables.set(db, tables);
  return tables;
}

/** Row count and a digest of every row's content, per tenant table, plus global tables' counts. */
export type Digest = Record<string, string>;

/**
 * One query: per tenant table the account's row count and an md5 of its rows (so an update
 * shows as well as an insert or delete), and with `shared` counts of the shared tables a
 * request could touch (accounts, designs, reserved fields).
 */
export async function digest(db: Knex, userId: number, opts: { shared?: boolean } = {}): Promise<Digest> {
  const tables = await listTenantTables(db);
  const parts = tables.map(
    (t) =>
      `SELECT '${t}' AS t, count(*)::text || ':' || md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS d FROM "${t}" x WHERE x.user_id = ?`,
  );
  // Shared tables only where nothing else writes them meanwhile (an isolated database).
  if (opts.shared) {
    parts.push(`SELECT 'accounts' AS t, count(*)::text || ':' || max(updated_at)::text AS d FROM accounts`);
    parts.push(`SELECT 'templates' AS t, count(*)::text || ':' || md5(coalesce(string_agg(x::text, '|' ORDER BY x.id), '')) AS d FROM templates x`);
    parts.push(`SELECT 'reserved_fields' AS t, count(*)::text AS d FROM fields WHERE user_id IS NULL`);
  }
  const { rows } = (await db.raw(parts.join('\nUNION ALL\n'), tables.map(() => userId))) as { rows: Array<{ t: string; d: string }> };
  return Object.fromEntries(rows.map((r) => [r.t, r.d]));
}

/** Every row the account owns, as JSON, per tenant table (readable diffs when a test fails). */
export async function accountRows(db: Knex, userId: number): Promise<Record<string, unknown[]>> {
  const tables = await listTenantTables(db);
  const parts = tables.map(
    (t) => `SELECT '${t}' AS t, coalesce(json_agg(x ORDER BY x::text), '[]'::json) AS rows FROM "${t}" x WHERE x.user_id = ?`,
  );
  parts.push(`SELECT 'account' AS t, json_agg(x) AS rows FROM accounts x WHERE x.id = ?`);
  const { rows } = (await db.raw(parts.join('\nUNION ALL\n'), [...tables.map(() => userId), userId])) as {
    rows: Array<{ t: string; rows: unknown[] }>;
  };
  return Object.fromEntries(rows.map((r) => [r.t, r.rows]));
}
