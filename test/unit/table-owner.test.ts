import path from 'node:path';
import { ESLint } from 'eslint';

/**
 * One owner per table (eslint.config.js, `ownedTables`): SQL on `deliveries` outside
 * src/deliveries/ fails `npm run lint`. Source texts are linted as if they were files of src/.
 */
const root = path.resolve(__dirname, '../..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const eslint = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: require(path.join(root, 'eslint.config.js')) });

async function problems(filePath: string, code: string): Promise<number> {
  const [result] = await eslint.lintText(code, { filePath });
  return result.messages.filter((m) => m.ruleId === 'no-restricted-syntax' && m.message.includes('src/deliveries/')).length;
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
