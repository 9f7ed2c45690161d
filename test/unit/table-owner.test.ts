import path from 'node:path';
import { ESLint } from 'eslint';

/**
 * One owner per table (eslint.config.js, `ownedTables`): SQL on `deliveries` outside
 * src/deliveries/, on `events` outside src/events/, or on `single_sends` outside
 * src/single-sends/, fails `npm run lint`. Source texts are linted as if they were files of src/.
 */
const root = path.resolve(__dirname, '../..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const eslint = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: require(path.join(root, 'eslint.config.js')) });

/** How many of the problems in `code` name `owner` as the place its SQL belongs. */
async function problems(filePath: string, code: string, owner = 'src/deliveries/'): Promise<number> {
  const [result] = await eslint.lintText(code, { filePath });
  return result.messages.filter((m) => m.ruleId === 'no-restricted-syntax' && m.message.includes(`belongs to ${owner}`)).length;
}

const DB = "import type { Knex } from 'knex';\ndeclare const db: Knex;\ndeclare function scoped(c: unknown, t: string, d?: Knex): Knex.QueryBuilder;\ndeclare function listPayload(k: string, v: unknown): unknown;\n";

describe('the deliveries table has one owner', () => {
  it.each([
    ["export const q = db('deliveries').where({ id: 1 });", 'a knex query on the table'],
    ["export const q = db.from('deliveries as d').first('id');", 'from() with an alias'],
    ["export const q = scoped({}, 'deliveries', db).update({ status: 'cancelled' });", 'the scoped helper'],
    ['export const q = db.raw(`SELECT id FROM deliveries d WHERE d.user_id = ${1}`);', 'SQL in a template'],
    ["export const q = db.raw('UPDATE deliveries SET status = 1');", 'SQL in a string'],
    ['export const q = `INSERT INTO deliveries (user_id) VALUES (1)`;', 'an INSERT'],
    ['export const q = `SELECT 1 FROM events e JOIN deliveries d ON d.id = e.delivery_id`;', 'a join'],
  ])('refuses %s (%s) outside src/deliveries', async (code) => {
    expect(await problems('src/public/probe.ts', DB + code)).toBe(1);
    expect(await problems('src/resources/single-sends/probe.ts', DB + code)).toBe(1);
    expect(await problems('src/deliveries/probe.ts', DB + code)).toBe(0);
  });

  it('allows other tables that end in deliveries, the API list key and plain words', async () => {
    const code = [
      "export const a = db('webhook_deliveries').where({ id: 1 });",
      'export const b = `DELETE FROM webhook_deliveries WHERE id = 1`;',
      "export const c = listPayload('deliveries', []);",
      "export const d = 'the deliveries of a send';",
    ].join('\n');
    expect(await problems('src/resources/webhooks/probe.ts', DB + code)).toBe(0);
  });
});

/** Each case is refused in every file of `outside` and allowed in its owner's folder. */
function refusesOutside(owner: string, outside: string[], cases: Array<[string, string]>) {
  it.each(cases)(`refuses %s (%s) outside ${owner}`, async (code) => {
    for (const file of outside) expect(await problems(file, DB + code, owner)).toBe(1);
    expect(await problems(`${owner}probe.ts`, DB + code, owner)).toBe(0);
    expect(await problems(`${owner}sub/probe.ts`, DB + code, owner)).toBe(0);
  });
}

describe('the events table has one owner', () => {
  refusesOutside('src/events/', ['src/webhooks/probe.ts', 'src/resources/reports/probe.ts', 'src/deliveries/probe.ts', 'src/single-sends/probe.ts'], [
    ["export const q = db('events').where({ id: 1 });", 'a knex query on the table'],
    ["export const q = db('events as e').join('bounce_reports as r', 'r.id', 'e.id');", 'the table with an alias'],
    ["export const q = db.from('sources').join('events as e', 'e.id', 'x.id');", 'a knex join'],
    ["export const q = scoped({}, 'events', db).max('id as id');", 'the scoped helper'],
    ['export const q = db.raw(`SELECT email, count(*)::int AS n FROM events\n WHERE user_id = ${1}`);', 'SQL in a template'],
    ["export const q = db.raw('DELETE FROM events WHERE id = 1');", 'a DELETE in a string'],
    ['export const q = `INSERT INTO events (user_id, type) VALUES (1, 2)`;', 'an INSERT'],
    ['export const q = `EXISTS (SELECT 1 FROM webhooks w JOIN events e ON e.user_id = w.user_id)`;', 'a join in SQL'],
    ["export const q = db.raw('select 1 from Events e');", 'any case'],
  ]);

  it('allows other tables whose name holds events, the API list key, columns and plain words', async () => {
    const code = [
      "export const a = db('webhook_events').where({ id: 1 });",
      'export const b = `SELECT 1 FROM account_events WHERE id = 1`;',
      "export const c = listPayload('events', []);",
      "export const d = 'the events of a send';",
      "export const e = db('outbox_jobs as j').where('j.event_id', 'events.id');",
      'export const f = { events: [] as unknown[] };',
      "export const g = db.raw(`jsonb_build_object('events', b.events)`);",
    ].join('\n');
    expect(await problems('src/resources/notifications/probe.ts', DB + code, 'src/events/')).toBe(0);
  });

  it('keeps every rule where its table is not owned: one config gives each file its refusals', async () => {
    const code = "export const a = db('events');\nexport const b = db('deliveries');\nexport const c = db('single_sends');";
    for (const owner of ['src/events/', 'src/deliveries/', 'src/single-sends/']) {
      expect(await problems('src/public/probe.ts', DB + code, owner)).toBe(1);
      for (const other of ['src/events/', 'src/deliveries/', 'src/single-sends/']) {
        expect(await problems(`${other}probe.ts`, DB + code, owner)).toBe(other === owner ? 0 : 1);
      }
    }
  });
});

describe('the single_sends table has one owner', () => {
  refusesOutside('src/single-sends/', ['src/delivery/probe.ts', 'src/resources/single-sends/probe.ts', 'src/ab/probe.ts', 'src/events/probe.ts'], [
    ["export const q = db('single_sends').where({ id: 1 }).first('status');", 'a knex query on the table'],
    ["export const q = db('single_sends as s').whereNull('s.deleted_at');", 'the table with an alias'],
    ["export const q = db('ab_tests as t').join('single_sends as s', 's.id', 't.single_send_id');", 'a knex join'],
    ["export const q = scoped({}, 'single_sends', db).update({ deleted_at: null });", 'the scoped helper'],
    ['export const q = db.raw(`UPDATE single_sends s SET status = ${2} WHERE s.id = 1`);', 'the scheduler’s kind of UPDATE'],
    ['export const q = `SELECT t.user_id FROM ab_tests t\n JOIN single_sends s ON s.id = t.single_send_id`;', 'a join in SQL'],
    ["export const q = db.raw('insert into single_sends (user_id) values (1)');", 'an INSERT in lower case'],
  ]);

  it('allows the variations table, columns, the API’s words and owner kinds', async () => {
    const code = [
      "export const a = db('single_send_variations as v').where('v.single_send_id', 1);",
      'export const b = `SELECT 1 FROM single_send_variations v WHERE v.id = 1`;',
      "export const c = db('deliveries_x').where('single_sends.id', 1);",
      "export const d = { table: 'single_sends', column: 'single_send_id' };",
      "export const e = 'the single sends of an account';",
    ].join('\n');
    expect(await problems('src/sources/probe.ts', DB + code, 'src/single-sends/')).toBe(0);
  });
});
