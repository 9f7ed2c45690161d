import request from 'supertest';
import { importRecord } from '../../src/resources/contacts/contacts.schemas';
import { api, expectShape, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType } from '../helpers/fixtures';
import { patient } from '../helpers/wait';
import { accountsOnEachNode, nodeOf, rowsOnShard, workerPorts } from './nodes';

/**
 * Issue 21's cluster tests at scale: a 200,000-row CSV import through the API into a list of an
 * account on each worker node (both at once), and segment counts over those rows that must
 * equal plain SQL run on the coordinator. Nothing here depends on speed; the bounds are generous.
 */
const { app, db } = setupApp();
const ROWS = 200_000;
const PLANS = ['free', 'starter', 'pro', 'Pro', 'enterprise'];
const COUNTRIES = ['GB', 'us', 'Germany', 'FR', ''];

interface Imported {
  account: TestAccount;
  port: number;
  typeId: number;
  fields: { plan: number; score: number };
}

/** Row i of account `tag`'s file: unique addresses, a plan, a score 0–999 (none for every 10th row), a country by code or name. */
function csv(tag: number): Buffer {
  const lines = ['email,first_name,last_name,country,plan,score'];
  for (let i = 0; i < ROWS; i++) {
    lines.push(`p${i}.a${tag}@d${i % 7}.example.com,First${i % 97},"Last, ${i % 13}",${COUNTRIES[i % 5]},${PLANS[i % 5]},${i % 10 === 9 ? '' : (i * 7919) % 1000}`);
  }
  return Buffer.from(`${lines.join('\n')}\n`);
}

const imported: Imported[] = [];

beforeAll(async () => {
  const byNode = await accountsOnEachNode(db, 'Import at scale');
  for (const [port, account] of byNode) {
    const [plan] = await db('custom_fields').insert({ user_id: account.id, field_name: 'plan', field_type: 'text' }).returning('id');
    const [score] = await db('custom_fields').insert({ user_id: account.id, field_name: 'score', field_type: 'number' }).returning('id');
    imported.push({ account, port, typeId: await makeContactType(db, account, 'Imported'), fields: { plan: plan.id, score: score.id } });
  }
});

describe('a 200,000-row CSV import into a distributed list, through the API', () => {
  it('writes every row, once, on the worker node of the account — an account on each node, both importing at once', async () => {
    expect(imported.map((x) => x.port).sort()).toEqual(await workerPorts(db));
    const responses = await Promise.all(
      imported.map((x) =>
        request(app)
          .post('/contacts/upload-csv')
          .set(x.account.headers)
          .field('contact_type_id', String(x.typeId))
          .attach('file', csv(x.account.id), 'big.csv')
          .timeout(patient(200_000)),
      ),
    );
    for (const res of responses) expect([res.status, res.body]).toEqual([200, { status: 'success', message: 'Imported Successfully' }]);

    for (const x of imported) {
      const record = expectShape(importRecord, (await api(app, x.account).get('/contacts/imports')).body.message.imports[0]);
      expect(record).toMatchObject({ status: 'completed', rows_read: ROWS, inserted: ROWS, updated: 0, skipped: 0, contact_type_id: x.typeId });
      const [counts] = await db('contacts')
        .where({ user_id: x.account.id, contact_type_id: x.typeId })
        .whereNull('deleted_at')
        .select(db.raw('count(*)::int AS n, count(DISTINCT lower(email))::int AS addresses, count(country_id)::int AS with_country'));
      expect(counts).toEqual({ n: ROWS, addresses: ROWS, with_country: (ROWS / 5) * 4 });
      // Through the API too: the account's contacts (these and the one it was made with).
      const listed = await api(app, x.account).get('/contacts/list?page=1&per_page=10');
      expect([listed.status, listed.body.message.pagination.total]).toEqual([200, ROWS + 1]);
      // A row read back whole: the quoted cell, the custom values as the API stores them.
      const row = await db('contacts').where({ user_id: x.account.id, contact_type_id: x.typeId, email: `p12345.a${x.account.id}@d4.example.com` }).first();
      expect(row).toMatchObject({ first_name: 'First26', last_name: 'Last, 8', custom_fields: { [x.fields.plan]: 'free', [x.fields.score]: String((12345 * 7919) % 1000) } });
      // Where the rows are, from Citus's catalog and read on the node itself: the account's
      // shard is on its node, and every row (plus the one the account was made with) is on it.
      expect(await nodeOf(db, 'contacts', x.account.id)).toBe(x.port);
      expect(await rowsOnShard(db, 'contacts', x.account.id)).toBe(ROWS + 1);
    }
  });

  it('counts a segment of the imported list as plain SQL on the coordinator does, for each node’s account', async () => {
    expect(imported).toHaveLength(2);
    const reserved = Object.fromEntries((await db('reserved_fields').select('id', 'field_name')).map((f) => [f.field_name, f.id]));
    for (const x of imported) {
      const segments = [
        {
          name: 'pro, high score, a 7 in the address',
          query_type: 'and',
          select_field: [x.fields.plan, x.fields.score, reserved.email],
          select_operator: ['is', 'is greater than', 'contains'],
          value: ['pro', '500', '7'],
          sql: `lower(custom_fields ->> :plan) = 'pro' AND (custom_fields ->> :score)::numeric > 500 AND email ILIKE '%7%'`,
        },
        {
          name: 'in Germany or scoring under 10',
          query_type: 'or',
          select_field: [reserved.country, x.fields.score],
          select_operator: ['is', 'is less than'],
          value: ['Germany', '10'],
          sql: `country_id = (SELECT id FROM countries WHERE iso_code = 'DE') OR (custom_fields ->> :score)::numeric < 10`,
        },
      ];
      for (const s of segments) {
        const saved = await api(app, x.account).form('/segment/save', {
          segment_name: s.name,
          contact_type_id: x.typeId,
          query_type: s.query_type,
          select_field: s.select_field,
          select_operator: s.select_operator,
          value: s.value,
        });
        expect([saved.status, saved.body.status]).toEqual([200, 'success']);
        const { id } = await db('segments').where({ user_id: x.account.id, segment_name: s.name }).first('id');
        const details = await api(app, x.account).get(`/segment/details?segment_id=${id}`);
        const page = await api(app, x.account).get(`/segment/email/list?segment_id=${id}&page=1&per_page=50`);
        const { rows } = await db.raw(
          `SELECT count(*)::int AS n FROM contacts WHERE user_id = :user AND contact_type_id = :type AND deleted_at IS NULL AND (${s.sql})`,
          { user: x.account.id, type: x.typeId, plan: String(x.fields.plan), score: String(x.fields.score) },
        );
        const expected = rows[0].n as number;
        // Not a trivial segment: thousands of members, far from all.
        expect(expected).toBeGreaterThan(1000);
        expect(expected).toBeLessThan(ROWS / 2);
        expect([s.name, details.body.message.segment.segment_emails_count, page.body.message.pagination.total]).toEqual([s.name, expected, expected]);
        expect(page.body.message.contactEmails).toHaveLength(50);
      }
    }
  });
});
