import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startWorker } from '../../src/server';
import { DISTRIBUTION_COLUMN, distributeNewTable, distributeTables, GLOBAL_TABLES, REFERENCE_TABLES, wantedKind } from '../../src/db/citus';
import { createDb } from '../../src/db/knex';
import { TEST_MASTER_KEY } from '../helpers/master-key';
import { closePool, makeAccount, setupApp, testDatabaseUrl } from '../helpers/app';
import { makeContactType, makeContacts } from '../helpers/fixtures';
import { accountsOnEachNode, nodeOf, rowsOnShard, workerPorts } from './nodes';
import { routerCheckedDb, unroutedStatements } from './router-check';

/**
 * Herald's schema on the three-node cluster of `npm run test:citus`: what src/db/citus.ts made of
 * it, read from Citus's own catalog, and what a later migration may do.
 */
const { db } = setupApp();

async function citusTables(): Promise<Map<string, { type: string; column: string; colocation: number }>> {
  const { rows } = await db.raw(`
    SELECT table_name::text AS name, citus_table_type AS type, distribution_column AS column, colocation_id AS colocation
    FROM citus_tables WHERE table_name::text NOT LIKE '%.%'`);
  return new Map((rows as Array<{ name: string; type: string; column: string; colocation: number }>).map((r) => [r.name, r]));
}

describe('Herald’s tables on the cluster', () => {
  it('are what the lists say: reference tables on every node, tenant tables by user_id in one colocation group, global ones on the coordinator', async () => {
    const { rows } = await db.raw(`
      SELECT c.relname AS name, EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped) AS has_user_id
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public' WHERE c.relkind = 'r'`);
    const catalog = await citusTables();
    const kinds: Record<string, string> = {};
    for (const t of rows as Array<{ name: string; has_user_id: boolean }>) {
      const want = wantedKind({ name: t.name, hasUserId: t.has_user_id });
      const have = catalog.get(t.name);
      kinds[t.name] = want === 'local' ? (have ? `${have.type}` : 'plain') : `${have?.type} by ${have?.column}`;
    }
    const tenant = Object.keys(kinds).filter((t) => !REFERENCE_TABLES.includes(t) && !GLOBAL_TABLES.includes(t));
    expect(tenant.length).toBeGreaterThan(20);
    for (const t of tenant) expect([t, kinds[t]]).toEqual([t, `distributed by ${DISTRIBUTION_COLUMN}`]);
    for (const t of REFERENCE_TABLES) expect([t, kinds[t]]).toEqual([t, 'reference by <none>']);
    // dkim_keys and member_logins refer to accounts, so Citus keeps them as Citus-local tables: on the coordinator only.
    const citusLocal = new Set(['dkim_keys', 'member_logins']);
    for (const t of GLOBAL_TABLES) expect([t, kinds[t]]).toEqual([t, citusLocal.has(t) ? 'local' : 'plain']);
    expect(new Set(tenant.map((t) => catalog.get(t)!.colocation)).size).toBe(1);
  });

  it('spreads accounts over both worker nodes: each account’s rows of every table on one of them', async () => {
    const seen = await accountsOnEachNode(db);
    expect([...seen.keys()].sort()).toEqual(await workerPorts(db));
    for (const [port, a] of seen) {
      // The account's rows of other tables sit on the same node.
      for (const table of ['contact_types', 'deliveries', 'events', 'single_sends']) expect([table, await nodeOf(db, table, a.id)]).toEqual([table, port]);
      // And its contact is on that node's shard (read there, not through the coordinator).
      expect(await rowsOnShard(db, 'contacts', a.id)).toBe(1);
    }
  });
});

describe('routing', () => {
  it('a statement filtered by the account is one task; one that is not runs on every shard (EXPLAIN)', async () => {
    const a = await makeAccount(db);
    const tasks = async (sql: string, bindings: Array<string | number>) => {
      const { rows } = await db.raw(`EXPLAIN ${sql}`, bindings);
      const line = (rows as Array<{ 'QUERY PLAN': string }>).map((r) => r['QUERY PLAN']).find((l) => /Task Count: \d+/.test(l));
      return Number(/Task Count: (\d+)/.exec(line ?? '')?.[1]);
    };
    const { rows: shards } = await db.raw(`SELECT shard_count FROM citus_tables WHERE table_name = 'contacts'::regclass`);
    expect(await tasks('SELECT c.id FROM contacts c JOIN contact_types t ON t.id = c.contact_type_id AND t.user_id = c.user_id WHERE c.user_id = ?', [a.id])).toBe(1);
    expect(await tasks('SELECT c.id FROM contacts c WHERE c.email = ?', ['x@example.com'])).toBe(shards[0].shard_count);
  });

  it('the check on the app’s statements sees one that is not routed, and passes one that is', async () => {
    const a = await makeAccount(db);
    const checked = routerCheckedDb(testDatabaseUrl());
    try {
      await checked('contacts').where({ user_id: a.id }).count();
      expect(unroutedStatements(checked)).toEqual([]);
      await checked('contacts').where({ email: 'nobody@example.com' }).count();
      expect(unroutedStatements(checked)).toEqual(['select count(*) from "contacts" where "email" = $1']);
    } finally {
      await closePool(checked);
    }
  });
});

/**
 * On a database of its own (scripts/citus/test.sh makes `<test database>_ddl`): a foreign key to
 * `accounts` added or dropped takes a lock on it that would queue every other file's
 * authentication behind a transaction still open there.
 */
describe('a later migration on the distributed schema', () => {
  const schema = `citus_migration_${process.pid}`;
  const url = new URL(testDatabaseUrl());
  url.pathname += '_ddl';
  const ddl = createDb({ url: url.toString(), poolMax: 2 });
  let m: Knex;

  beforeAll(async () => {
    await ddl.raw('CREATE SCHEMA ??', [schema]);
    m = createDb({ url: url.toString(), poolMax: 1, settings: { search_path: schema } });
  });

  afterAll(async () => {
    await closePool(m);
    await ddl.raw('DROP SCHEMA ?? CASCADE', [schema]);
    await closePool(ddl);
  });

  it('adds a tenant table that refers to contacts once distributeNewTable placed it; without it Citus refuses the reference', async () => {
    await m.transaction(async (trx) => {
      await trx.raw(`CREATE TABLE notes (id serial, user_id integer NOT NULL REFERENCES public.accounts (id) ON DELETE CASCADE, contact_id integer NOT NULL, body text, PRIMARY KEY (id, user_id))`);
      await distributeNewTable(trx, 'notes');
      await trx.raw('ALTER TABLE notes ADD FOREIGN KEY (contact_id, user_id) REFERENCES public.contacts (id, user_id)');
    });
    await expect(
      m.transaction(async (trx) => {
        await trx.raw(`CREATE TABLE stray (id serial, user_id integer NOT NULL REFERENCES public.accounts (id), contact_id integer NOT NULL, PRIMARY KEY (id, user_id))`);
        await trx.raw('ALTER TABLE stray ADD FOREIGN KEY (contact_id, user_id) REFERENCES public.contacts (id, user_id)');
      }),
    ).rejects.toThrow(/foreign key|colocated|reference table/);
    const a = await makeAccount(ddl);
    const type = await makeContactType(ddl, a);
    const [contact] = await makeContacts(ddl, a, type, [{ email: 'noted@example.com' }]);
    await m('notes').insert({ user_id: a.id, contact_id: contact, body: 'hi' });
    await expect(m('notes').insert({ user_id: a.id, contact_id: contact + 1_000_000, body: 'no' })).rejects.toMatchObject({ code: '23503' });
    // DDL on the distributed table reaches every shard.
    await m.raw('ALTER TABLE notes ADD COLUMN pinned boolean NOT NULL DEFAULT false');
    await m.raw('CREATE INDEX notes_contact_index ON notes (user_id, contact_id)');
    expect(await m('notes').where({ user_id: a.id }).first('pinned')).toEqual({ pinned: false });
    const { rows } = await ddl.raw(
      `SELECT count(*)::int AS shards, count(*) FILTER (WHERE result = '1')::int AS indexed
       FROM run_command_on_shards(?, $$SELECT count(*) FROM pg_index WHERE indrelid = '%s'::regclass AND indexrelid::regclass::text LIKE '%%notes_contact_index%%'$$)`,
      [`${schema}.notes`],
    );
    expect(rows[0].indexed).toBe(rows[0].shards);
    expect(await distributeTables(m)).toEqual([]);
  });
});

describe('the delivery worker on Citus', () => {
  // On the `_ddl` database: a worker on the main one would claim the API files' sends.
  const config = () =>
    loadConfig({
      DATABASE_URL: `${testDatabaseUrl()}_ddl`,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      DATA_DIR: path.join(os.tmpdir(), `herald-citus-${process.pid}`),
      HERALD_MASTER_KEY: TEST_MASTER_KEY,
      SMTP_URL: 'smtp://127.0.0.1:9',
    });

  it('`herald worker` starts on the cluster (round one refused to) and stops cleanly', async () => {
    const lines: string[] = [];
    const running = await startWorker(config(), createLogger('info', { write: (line: string) => void lines.push(line) }));
    await running.shutdown('test');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(expect.arrayContaining(['Herald worker started', 'worker stopped']));
  });
});
