import request from 'supertest';
import { importRecord } from '../../src/resources/contacts/contacts.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeContacts } from '../helpers/fixtures';

// The addresses each import's AddressSet was sized for (its constructor's first argument), and whether it kept fingerprints.
const mockSizes: number[] = [];
const mockPrinted: boolean[] = [];
jest.mock('../../src/resources/contacts/address-set', () => {
  const actual = jest.requireActual('../../src/resources/contacts/address-set');
  class SizedAddressSet extends actual.AddressSet {
    constructor(expected: number, max?: number) {
      super(expected, max);
      mockSizes.push(expected);
      mockPrinted.push(false);
    }

    withFingerprints() {
      mockPrinted[mockPrinted.length - 1] = true;
      return super.withFingerprints();
    }
  }
  return { ...actual, AddressSet: SizedAddressSet };
});

/**
 * The import's address set is sized from a sample of the file's addresses, spread over the
 * file: the type's contacts plus the rows the sample says are new (and a margin), not every
 * row of the file as new. (A sample that is wrong makes the set grow while the file is read:
 * test/unit/address-set.test.ts.)
 */
const { app, db } = setupApp();
let a: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db, 'Sizing');
});

const addresses = (from: number, n: number) => Array.from({ length: n }, (_, i) => `c${from + i}@sizing.test`);
const csvOf = (emails: string[], name = 'Same') => `email,first_name\n${emails.map((e) => `${e},${name}`).join('\n')}\n`;

async function upload(typeId: number, csv: string) {
  mockSizes.length = 0;
  mockPrinted.length = 0;
  const res = await request(app).post('/contacts/upload-csv').set(a.headers).field('contact_type_id', String(typeId)).attach('file', Buffer.from(csv), 'contacts.csv');
  expect(res.status).toBe(200);
  const list = await api(app, a).get('/contacts/imports');
  return expectShape(importRecord, list.body.message.imports[0]);
}

describe('the address set of an import into a list that has contacts', () => {
  it('is sized for the list and the few new addresses when the file names the list again', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, addresses(0, 2000).map((email) => ({ email, first_name: 'Same' })));
    const rec = await upload(type, csvOf(addresses(0, 2000)));
    expect(rec).toMatchObject({ status: 'completed', rows_read: 2000, inserted: 0, updated: 0, unchanged: 2000, skipped: 0 });
    // Every row as new would be 2,000 + 2,001 (the estimate counts the header line); the sample finds
    // none new: 2,000 + the margin, 10 % of the estimated rows.
    expect(mockSizes).toEqual([2000 + Math.ceil(2001 * 0.1)]);
  });

  it('counts the new addresses of a sorted file whose second half is new (the sample is spread over the file)', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, addresses(0, 2000).map((email) => ({ email, first_name: 'Old' })));
    // Old contacts first, as an export sorted by creation lists them: the file's first rows alone would say "nothing new".
    const rec = await upload(type, csvOf([...addresses(0, 2000), ...addresses(2000, 2000)], 'New'));
    expect(rec).toMatchObject({ status: 'completed', rows_read: 4000, inserted: 2000, updated: 2000, unchanged: 0, skipped: 0 });
    expect(mockSizes[0]).toBeGreaterThanOrEqual(2000 + 2000);
    expect(mockSizes[0]).toBeLessThan(2000 + 4001);
    const names = await db('contacts').where({ user_id: a.id, contact_type_id: type }).whereNull('deleted_at').select('first_name').count('* as n').groupBy('first_name');
    expect(names.map((r) => [r.first_name, Number(r.n)])).toEqual([['New', 4000]]);
  });

  it('is sized for every row as new when the sample finds the list does not have them', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, addresses(0, 1000).map((email) => ({ email })));
    const rec = await upload(type, csvOf(addresses(1000, 2000)));
    expect(rec).toMatchObject({ status: 'completed', rows_read: 2000, inserted: 2000, updated: 0, unchanged: 0, skipped: 0 });
    // The file's rows are estimated from its first 64 KB (the whole file here): 2,000 lines and the header.
    expect(mockSizes[0]).toBeGreaterThanOrEqual(1000 + 2000);
  });

  it('looks sampled addresses up as PostgreSQL compares them: a quote, LIKE wildcards and case', async () => {
    const type = await makeContactType(db, a);
    // The sample's addresses go into the lookup as SQL literals (csv-import.sql.ts emailIn).
    const odd = ["o'brien@sizing.test", 'under_score%pct@sizing.test', 'MiXeD@Sizing.Test'];
    await makeContacts(db, a, type, odd.map((email) => ({ email: email.toLowerCase(), first_name: 'Old' })));
    const rec = await upload(type, `email,first_name\n${odd.map((e) => `"${e}",New`).join('\n')}\n`);
    expect(rec).toMatchObject({ status: 'completed', rows_read: 3, inserted: 0, updated: 3, skipped: 0 });
    // All three found: the set is sized for them and the 10 % margin of the estimated rows, not for three new ones.
    expect(mockSizes).toEqual([3 + Math.ceil(4 * 0.1)]);
  });
});

/**
 * The contacts' fingerprints are loaded only when a sampled row would change nothing on its
 * contact (csv-import.service.ts, sampleUnchanged): a file that renames its contacts does not
 * pay their memory. The counts are the same either way (the merge tells unchanged rows too).
 */
describe('the fingerprints of an import into a list that has contacts', () => {
  const named = (rows: Array<[string, string]>) => `email,first_name\n${rows.map(([e, n]) => `${e},${n}`).join('\n')}\n`;

  it('are loaded when the file names the list unchanged', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, addresses(0, 1000).map((email) => ({ email, first_name: 'Same' })));
    const rec = await upload(type, csvOf(addresses(0, 1000)));
    expect(rec).toMatchObject({ rows_read: 1000, inserted: 0, updated: 0, unchanged: 1000 });
    expect(mockPrinted).toEqual([true]);
  });

  it('are not loaded when every sampled row changes its contact', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, addresses(0, 1000).map((email) => ({ email, first_name: 'Old' })));
    const rec = await upload(type, csvOf([...addresses(0, 1000), ...addresses(1000, 500)], 'New'));
    expect(rec).toMatchObject({ rows_read: 1500, inserted: 500, updated: 1000, unchanged: 0, skipped: 0 });
    expect(mockPrinted).toEqual([false]);
  });

  it('are loaded when a few sampled rows are unchanged among changed ones', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, addresses(0, 2000).map((email) => ({ email, first_name: 'Same' })));
    // The first ten, among the first place's sampled rows.
    const rows = addresses(0, 2000).map((e, i): [string, string] => [e, i < 10 ? 'Same' : 'Changed']);
    const rec = await upload(type, named(rows));
    expect(rec).toMatchObject({ rows_read: 2000, inserted: 0, updated: 1990, unchanged: 10, skipped: 0 });
    expect(mockPrinted).toEqual([true]);
  });

  it('counts unchanged rows the sample missed as unchanged (merged, not skipped on the way)', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, addresses(0, 4000).map((email) => ({ email, first_name: 'Same' })));
    // Rows 100–109 come after the first place's 64 sampled rows and before the second place (an eighth of the file).
    const rows = addresses(0, 4000).map((e, i): [string, string] => [e, i >= 100 && i < 110 ? 'Same' : 'Changed']);
    const rec = await upload(type, named(rows));
    expect(rec).toMatchObject({ rows_read: 4000, inserted: 0, updated: 3990, unchanged: 10, skipped: 0 });
    expect(mockPrinted).toEqual([false]);
    const names = await db('contacts').where({ user_id: a.id, contact_type_id: type }).whereNull('deleted_at').select('first_name').count('* as n').groupBy('first_name').orderBy('first_name');
    expect(names.map((r) => [r.first_name, Number(r.n)])).toEqual([
      ['Changed', 3990],
      ['Same', 10],
    ]);
  });
});
