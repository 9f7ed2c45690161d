import { GLOBAL_TABLES, isCitus, REFERENCE_TABLES } from '../../src/db/citus';
import { makeAccount, setupApp } from '../helpers/app';
import { makeContactType, makeContacts, makeGroup, makeSender } from '../helpers/fixtures';

/**
 * The schema stays distributable by account (Citus, docs/scaling.md): read from the
 * migrated catalog, so a new table or index that breaks a rule fails here, not on the day
 * the database is distributed.
 *
 * A tenant table is any table with a `user_id` column. Its primary key and every unique
 * index include `user_id`, the column is NOT NULL, and a foreign key to another tenant
 * table carries `user_id` on both sides. Reference tables (shared by every account) must not
 * have a `user_id` column. Reference tables and the tables that belong to no account are named
 * once, in src/db/citus.ts, which distributes the schema by these rules on Citus.
 */
const { db } = setupApp();

async function tables(): Promise<Array<{ name: string; hasUserId: boolean; userIdNullable: boolean }>> {
  const rows = await db.raw(`
    SELECT c.relname AS name,
           a.attname IS NOT NULL AS has_user_id,
           coalesce(NOT a.attnotnull, false) AS user_id_nullable
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped
    WHERE c.relkind IN ('r', 'p')
    ORDER BY 1`);
  return (rows.rows as Array<{ name: string; has_user_id: boolean; user_id_nullable: boolean }>).map((r) => ({
    name: r.name,
    hasUserId: r.has_user_id,
    userIdNullable: r.user_id_nullable,
  }));
}

describe('schema rules for distribution by account', () => {
  it('every table is a tenant table, a reference table or a named global one', async () => {
    const problems: string[] = [];
    for (const t of await tables()) {
      if (GLOBAL_TABLES.includes(t.name)) continue;
      if (REFERENCE_TABLES.includes(t.name)) {
        if (t.hasUserId) problems.push(`${t.name}: a reference table with a user_id column`);
        continue;
      }
      if (!t.hasUserId) problems.push(`${t.name}: no user_id column (add one, or name it a reference table)`);
      else if (t.userIdNullable) problems.push(`${t.name}: user_id may be null`);
    }
    expect(problems).toEqual([]);
  });

  it('every primary key and unique index of a tenant table includes user_id', async () => {
    const rows = await db.raw(`
      SELECT t.relname AS table_name, i.relname AS index_name, x.indisprimary AS is_primary,
             pg_get_indexdef(x.indexrelid) AS definition,
             EXISTS (
               SELECT 1 FROM pg_attribute a
               WHERE a.attrelid = t.oid AND a.attname = 'user_id' AND a.attnum = ANY (x.indkey)
             ) AS has_user_id
      FROM pg_index x
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = current_schema()
      WHERE x.indisunique
        AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attname = 'user_id' AND NOT a.attisdropped)
      ORDER BY 1, 2`);
    const all = rows.rows as Array<{ table_name: string; index_name: string; is_primary: boolean; definition: string; has_user_id: boolean }>;
    const tenantTables = new Set(all.map((r) => r.table_name).filter((t) => !GLOBAL_TABLES.includes(t)));
    expect(tenantTables.size).toBeGreaterThan(10);
    for (const table of tenantTables) {
      expect({ table, hasPrimaryKey: all.some((r) => r.table_name === table && r.is_primary) }).toEqual({ table, hasPrimaryKey: true });
    }
    expect(all.filter((r) => tenantTables.has(r.table_name) && !r.has_user_id).map((r) => r.definition)).toEqual([]);
  });

  it('a foreign key between tenant tables carries user_id on both sides', async () => {
    const rows = await db.raw(`
      SELECT k.conname AS name, pg_get_constraintdef(k.oid) AS definition,
             (SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)) AS columns,
             (SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = k.confrelid AND a.attnum = ANY (k.confkey)) AS parent_columns
      FROM pg_constraint k
      JOIN pg_namespace n ON n.oid = k.connamespace AND n.nspname = current_schema()
      WHERE k.contype = 'f'
        AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = k.conrelid AND a.attname = 'user_id')
        AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = k.confrelid AND a.attname = 'user_id')`);
    const all = rows.rows as Array<{ name: string; definition: string; columns: string[]; parent_columns: string[] }>;
    expect(all.length).toBeGreaterThan(5);
    const broken = all.filter((r) => !r.columns.includes('user_id') || !r.parent_columns.includes('user_id'));
    expect(broken.map((r) => `${r.name}: ${r.definition}`)).toEqual([]);
  });
});

/**
 * contacts' references are checked per statement (migration 202611230100), not by per-row
 * foreign keys: the checks must refuse what the foreign keys refused.
 */
describe('contacts reference their account’s contact type and a country', () => {
  const fk = { code: '23503' };

  it('refuses a contact of another account’s contact type, and an unknown country, in one statement or many', async () => {
    const [a, b] = await Promise.all([makeAccount(db), makeAccount(db)]);
    const typeOfB = await makeContactType(db, b);
    const typeOfA = await makeContactType(db, a);
    await expect(db('contacts').insert({ user_id: a.id, contact_type_id: typeOfB, email: 'x@example.com' })).rejects.toMatchObject({
      ...fk,
      constraint: 'contacts_contact_type_id_foreign',
    });
    await expect(
      db('contacts').insert([
        { user_id: a.id, contact_type_id: typeOfA, email: 'ok@example.com' },
        { user_id: a.id, contact_type_id: typeOfA, email: 'bad@example.com', country_id: 999999 },
      ]),
    ).rejects.toMatchObject({ ...fk, constraint: 'contacts_country_id_foreign' });
    const [id] = await makeContacts(db, a, typeOfA, [{ email: 'moving@example.com' }]);
    await expect(db('contacts').where({ id }).update({ contact_type_id: typeOfB })).rejects.toMatchObject(fk);
    expect(await db('contacts').where({ user_id: a.id }).pluck('email')).toEqual(['moving@example.com']);
  });

  it('keeps a contact type or a country with contacts from being deleted, or its key from changing', async () => {
    const a = await makeAccount(db);
    const type = await makeContactType(db, a);
    const gb = (await db('countries').where({ iso_code: 'GB' }).first('id')) as { id: number };
    await makeContacts(db, a, type, [{ email: 'kept@example.com', country_id: gb.id }]);
    await expect(db('contact_types').where({ id: type }).delete()).rejects.toMatchObject(fk);
    await expect(db('countries').where({ id: gb.id }).delete()).rejects.toMatchObject(fk);
    await expect(db('contact_types').where({ id: type }).update({ id: 2_000_000_000 })).rejects.toMatchObject(fk);
    const empty = await makeContactType(db, a);
    await db('contact_types').where({ id: empty }).delete();
  });

  it('one bad row among a thousand refuses the whole statement', async () => {
    const a = await makeAccount(db);
    const type = await makeContactType(db, a);
    const rows = Array.from({ length: 1000 }, (_, i) => ({ user_id: a.id, contact_type_id: type, email: `bulk${i}@example.com` }));
    await db('contacts').insert(rows);
    const more = rows.map((r, i) => ({ ...r, email: `more${i}@example.com` }));
    more[500] = { ...more[500], contact_type_id: type + 100_000 };
    await expect(db('contacts').insert(more)).rejects.toMatchObject(fk);
    expect(Number((await db('contacts').where({ user_id: a.id }).count('* as n'))[0].n)).toBe(1000);
  });
});

describe('deliveries reference their account, single send and automation', () => {
  const fk = { code: '23503' };
  const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  /** PostgreSQL's detail of a missing parent; on Citus the table is named as its shard (`single_sends_102105`). */
  const missingIn = (key: string, table: string) => expect.stringMatching(new RegExp(`^${escapeRegExp(key)} is not present in table "${table}(_\\d+)?"\\.$`));

  async function sendOf(account: Awaited<ReturnType<typeof makeAccount>>): Promise<number> {
    const sender = await makeSender(db, account);
    const group = await makeGroup(db, account);
    const [{ id }] = await db('single_sends')
      .insert({ user_id: account.id, utr: db.raw('gen_random_uuid()'), template_id: 2, sender_id: sender, unsubscribe_group_id: group, single_send_name: 'refs', subject: 's', preheader: 'p', from_sender: 'a@example.com', reply_to: 'a@example.com', status: 0 })
      .returning('id');
    return id as number;
  }

  it('names the missing parent as the foreign keys did: the account first, then the single send, then the automation', async () => {
    const [a, b] = await Promise.all([makeAccount(db), makeAccount(db)]);
    const sendOfB = await sendOf(b);
    const row = (over: Record<string, unknown>) => ({ user_id: a.id, email: 'x@example.com', ...over });
    await expect(db('deliveries').insert(row({ single_send_id: sendOfB }))).rejects.toMatchObject({
      ...fk,
      constraint: 'deliveries_single_send_id_foreign',
      detail: missingIn(`Key (single_send_id, user_id)=(${sendOfB}, ${a.id})`, 'single_sends'),
    });
    await expect(db('deliveries').insert(row({ automation_id: 2_000_000_000, automation_schedule_id: 1 }))).rejects.toMatchObject({
      ...fk,
      constraint: 'deliveries_automation_fk',
      detail: missingIn(`Key (automation_id, user_id)=(2000000000, ${a.id})`, 'automations'),
    });
    // Several missing in one statement: the account's is reported, then the single send's — the
    // order of the one-server check (its triggers). On Citus foreign keys stand in for them and
    // report the first row that fails on its shard: any one of the missing parents.
    if (await isCitus(db)) {
      await expect(db('deliveries').insert([row({ automation_id: 2_000_000_000, automation_schedule_id: 1 }), row({ single_send_id: sendOfB, email: 'y@example.com' })])).rejects.toMatchObject({
        ...fk,
        constraint: expect.stringMatching(/^deliveries_(automation_fk|single_send_id_foreign)$/),
      });
      return;
    }
    await expect(
      db('deliveries').insert([row({ automation_id: 2_000_000_000, automation_schedule_id: 1 }), row({ single_send_id: sendOfB, email: 'y@example.com' }), row({ user_id: 2_000_000_000, single_send_id: sendOfB, email: 'z@example.com' })]),
    ).rejects.toMatchObject({ ...fk, constraint: 'deliveries_user_id_foreign', detail: missingIn('Key (user_id)=(2000000000)', 'accounts') });
    await expect(
      db('deliveries').insert([row({ automation_id: 2_000_000_000, automation_schedule_id: 1 }), row({ single_send_id: sendOfB, email: 'y@example.com' })]),
    ).rejects.toMatchObject({ ...fk, constraint: 'deliveries_single_send_id_foreign' });
  });

  it('takes a chunk whose rows are all the account’s, and refuses the whole statement for one bad row among a thousand', async () => {
    const a = await makeAccount(db);
    const send = await sendOf(a);
    const rows = Array.from({ length: 1000 }, (_, i) => ({ user_id: a.id, single_send_id: send, email: `r${i}@example.com` }));
    await db('deliveries').insert(rows.slice(0, 500));
    const more = rows.slice(500);
    more[250] = { ...more[250], single_send_id: send + 100_000 };
    await expect(db('deliveries').insert(more)).rejects.toMatchObject({ ...fk, constraint: 'deliveries_single_send_id_foreign' });
    expect(Number((await db('deliveries').where({ user_id: a.id }).count('* as n'))[0].n)).toBe(500);
  });
});
