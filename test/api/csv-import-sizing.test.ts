import request from 'supertest';
import { importRecord } from '../../src/resources/contacts/contacts.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeContacts } from '../helpers/fixtures';

// The addresses each import's AddressSet was sized for (its constructor's first argument).
const mockSizes: number[] = [];
jest.mock('../../src/resources/contacts/address-set', () => {
  const actual = jest.requireActual('../../src/resources/contacts/address-set');
  class SizedAddressSet extends actual.AddressSet {
    constructor(expected: number, max?: number) {
      super(expected, max);
      mockSizes.push(expected);
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
});
