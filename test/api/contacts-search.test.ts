import { contactListRecord } from '../../src/resources/contacts/contacts.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';
import { makeContacts, makeContactType } from '../helpers/fixtures';

const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;
let customers: number;
let press: number;
let theirs: number;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  customers = await makeContactType(db, a, 'Customers');
  press = await makeContactType(db, a, 'Press');
  theirs = await makeContactType(db, b, 'Theirs');
  await makeContacts(db, a, customers, [
    { email: 'ada.lovelace@example.com', first_name: 'Ada', last_name: 'Lovelace' },
    { email: 'grace@navy.example', first_name: 'Grace', last_name: 'Hopper' },
    { email: 'ALAN@Example.org', first_name: 'Alan', last_name: 'Turing' },
    { email: 'x100%_off@deals.example', first_name: 'Percent', last_name: 'Under_score' },
    { email: 'mary@example.net', first_name: 'Mary Ann', last_name: 'Evans' },
    { email: 'gone@example.com', first_name: 'Deleted', last_name: 'Person', deleted_at: db.fn.now() },
  ]);
  await makeContacts(db, a, press, [{ email: 'ada@press.example', first_name: 'Ada', last_name: 'Byron' }]);
  // Another account with the same names: never in a's results.
  await makeContacts(db, b, theirs, [
    { email: 'ada.lovelace@example.com', first_name: 'Ada', last_name: 'Lovelace' },
    { email: 'alan@example.org', first_name: 'Alan', last_name: 'Turing' },
  ]);
});

async function search(account: TestAccount, query: string) {
  const res = await api(app, account).get(`/contacts/search?${query}`);
  expectSuccess(res);
  return res.body.message as { contacts: Array<{ email: string; user_id: number }>; pagination: { page: number; per_page: number; total: number } };
}

const emails = (m: { contacts: Array<{ email: string }> }) => m.contacts.map((c) => c.email).sort();

describe('GET /contacts/search', () => {
  it('finds by part of an address, a first name or a last name, case-insensitively, newest first in the list’s shape', async () => {
    const byAddress = await search(a, 'q=NAVY');
    expect(emails(byAddress)).toEqual(['grace@navy.example']);
    expect(byAddress.pagination).toEqual({ page: 1, per_page: 50, total: 1 });
    expectShape(contactListRecord, byAddress.contacts[0]);

    expect(emails(await search(a, 'q=ada'))).toEqual(['ada.lovelace@example.com', 'ada@press.example']);
    expect(emails(await search(a, 'q=hopp'))).toEqual(['grace@navy.example']);
    expect(emails(await search(a, 'q=example.org'))).toEqual(['ALAN@Example.org']);
    const all = await search(a, 'q=exa');
    expect(all.contacts.map((c) => c.email)).toEqual(['ada@press.example', 'mary@example.net', 'x100%_off@deals.example', 'ALAN@Example.org', 'grace@navy.example', 'ada.lovelace@example.com']);
  });

  it('refuses queries of 1 and 2 characters (no trigram index answers them), and finds 3', async () => {
    for (const q of ['Y', 'tu']) expectVal(await api(app, a).get(`/contacts/search?q=${q}`), { q: ['The q must be at least 3 characters.'] });
    expect(emails(await search(a, 'q=tur'))).toEqual(['ALAN@Example.org']);
    expect((await search(a, 'q=zzz')).pagination.total).toBe(0);
  });

  it('never matches across two fields, and takes % and _ literally', async () => {
    expect((await search(a, `q=${encodeURIComponent('com Ada')}`)).contacts).toEqual([]);
    expect((await search(a, `q=${encodeURIComponent('Ada Lovelace')}`)).contacts).toEqual([]);
    expect((await search(a, `q=${encodeURIComponent('Ann Evans')}`)).contacts).toEqual([]);
    expect(emails(await search(a, `q=${encodeURIComponent('RY ANN')}`))).toEqual(['mary@example.net']);
    expect(emails(await search(a, `q=${encodeURIComponent('100%_')}`))).toEqual(['x100%_off@deals.example']);
    expect(emails(await search(a, `q=${encodeURIComponent('r_s')}`))).toEqual(['x100%_off@deals.example']);
    expect((await search(a, `q=${encodeURIComponent('a%a')}`)).contacts).toEqual([]);
  });

  it('leaves deleted contacts out', async () => {
    expect((await search(a, 'q=gone')).contacts).toEqual([]);
  });

  it('limits to one contact type', async () => {
    const inPress = await search(a, `q=ada&contact_type_id=${press}`);
    expect(emails(inPress)).toEqual(['ada@press.example']);
    expect(inPress.pagination.total).toBe(1);
  });

  it('pages like the lists, with the total', async () => {
    const first = await search(a, 'q=exa&page=1&per_page=2');
    const second = await search(a, 'q=exa&page=2&per_page=2');
    const third = await search(a, 'q=exa&page=3&per_page=2');
    expect(first.pagination).toEqual({ page: 1, per_page: 2, total: 6 });
    expect(third.pagination).toEqual({ page: 3, per_page: 2, total: 6 });
    const pages = [...first.contacts, ...second.contacts, ...third.contacts].map((c) => c.email);
    expect(pages).toEqual((await search(a, 'q=exa')).contacts.map((c) => c.email));
    expect((await search(a, 'q=exa&page=4&per_page=2')).contacts).toEqual([]);
  });

  it('never returns another account’s contacts', async () => {
    const found = await search(b, 'q=example');
    expect(found.contacts.every((c) => c.user_id === b.id)).toBe(true);
    expect(emails(found)).toEqual(['ada.lovelace@example.com', 'alan@example.org']);
    expect((await search(b, 'q=navy')).contacts).toEqual([]);
  });

  it('answers VAL for a missing, empty, blank or too long q and a bad page', async () => {
    for (const query of ['', 'q=', `q=${encodeURIComponent('   ')}`]) {
      expectVal(await api(app, a).get(`/contacts/search?${query}`), { q: ['The q field is required.'] });
    }
    expectVal(await api(app, a).get(`/contacts/search?q=${'x'.repeat(256)}`), { q: ['The q must not be greater than 255 characters.'] });
    expectVal(await api(app, a).get('/contacts/search?q=a&q=b'), { q: ['The q must be a string.'] });
    expectVal(await api(app, a).get('/contacts/search?q=ada&page=0'), { page: ['The page must be an integer between 1 and 1000000.'] });
    expectVal(await api(app, a).get('/contacts/search?q=ada&per_page=1001'), { per_page: ['The per page must be an integer between 1 and 1000.'] });
  });

  it('answers NF1 for another account’s, a deleted or an impossible contact type', async () => {
    expectNF1(await api(app, a).get(`/contacts/search?q=ada&contact_type_id=${theirs}`));
    const deleted = await makeContactType(db, a, 'Deleted');
    await db('contact_types').where({ id: deleted }).update({ deleted_at: db.fn.now() });
    expectNF1(await api(app, a).get(`/contacts/search?q=ada&contact_type_id=${deleted}`));
    for (const bad of ['abc', '0', '-1', '99999999999']) expectNF1(await api(app, a).get(`/contacts/search?q=ada&contact_type_id=${bad}`));
  });

  it('needs the keys', async () => {
    expectAuthMissing(await api(app).get('/contacts/search?q=ada'));
  });

  it('has the trigram index when pg_trgm is available (migration 202612280200)', async () => {
    const available = (await db.raw(`SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'`)).rows.length > 0;
    const index = await db.raw(`SELECT indexdef FROM pg_indexes WHERE tablename = 'contacts' AND indexname = 'contacts_search_trgm'`);
    if (!available) return;
    expect(index.rows[0].indexdef).toMatch(/USING gin .*gin_trgm_ops\) WHERE \(deleted_at IS NULL\)/);
  });
});
