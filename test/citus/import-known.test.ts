import request from 'supertest';
import { importRecord } from '../../src/resources/contacts/contacts.schemas';
import { api, expectShape, setupApp } from '../helpers/app';
import { makeContactType, makeContacts } from '../helpers/fixtures';
import { accountsOnEachNode } from './nodes';

/**
 * A CSV import into a distributed list that already has contacts, on each worker node: the
 * statements that read the list for the import's address set (its count, the sampled
 * addresses, the sampled contacts' fingerprint text, the addresses with and without
 * fingerprints) are each one shard's. Once with unchanged rows in the sample (fingerprints
 * loaded), once with every row renamed (none loaded).
 */
const { app, db } = setupApp();

const address = (tag: number, i: number) => `k${i}.a${tag}@known.example.com`;
const csvOf = (rows: Array<[string, string]>) => Buffer.from(`email,first_name\n${rows.map(([e, n]) => `${e},${n}`).join('\n')}\n`);

describe('a CSV import into a distributed list that has contacts', () => {
  it('updates, inserts and leaves unchanged rows as on PostgreSQL, on each node', async () => {
    for (const [, account] of await accountsOnEachNode(db, 'Import known')) {
      const typeId = await makeContactType(db, account, 'Known');
      await makeContacts(db, account, typeId, Array.from({ length: 300 }, (_, i) => ({ email: address(account.id, i), first_name: 'Same' })));
      const upload = async (rows: Array<[string, string]>) => {
        const res = await request(app).post('/contacts/upload-csv').set(account.headers).field('contact_type_id', String(typeId)).attach('file', csvOf(rows), 'known.csv');
        expect([res.status, res.body]).toEqual([200, { status: 'success', message: 'Imported Successfully' }]);
        return expectShape(importRecord, (await api(app, account).get('/contacts/imports')).body.message.imports[0]);
      };
      // Half unchanged, half renamed, 100 new.
      const first = Array.from({ length: 400 }, (_, i): [string, string] => [address(account.id, i), i < 150 ? 'Same' : 'New']);
      expect(await upload(first)).toMatchObject({ status: 'completed', rows_read: 400, inserted: 100, updated: 150, unchanged: 150, skipped: 0 });
      // Every row renamed.
      const second = Array.from({ length: 400 }, (_, i): [string, string] => [address(account.id, i), 'Other']);
      expect(await upload(second)).toMatchObject({ status: 'completed', rows_read: 400, inserted: 0, updated: 400, unchanged: 0, skipped: 0 });
      const names = await db('contacts').where({ user_id: account.id, contact_type_id: typeId }).whereNull('deleted_at').select('first_name').count('* as n').groupBy('first_name');
      expect(names.map((r) => [r.first_name, Number(r.n)])).toEqual([['Other', 400]]);
    }
  });
});
