import { unsubscriberRecord } from '../../src/resources/unsubscribers/unsubscribers.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';

const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
});

type Unsubscriber = { id: number; user_id: number; unsubscribe_groups_id: number | null; email_address: string };

async function add(account: TestAccount, emails: string) {
  const res = await api(app, account).form('/global-unsubscribes/save', { email_address: emails });
  expectSuccess(res, 'Added Successfully');
}

async function listOf(account: TestAccount) {
  const res = await api(app, account).get('/global-unsubscribes');
  expectSuccess(res);
  return res.body.message.unSubscribers as Unsubscriber[];
}

const idOf = async (account: TestAccount, email: string) =>
  (await listOf(account)).find((r) => r.email_address.toLowerCase() === email.toLowerCase())!.id;

describe('GET /global-unsubscribes', () => {
  it('lists the account’s addresses newest first, each with exactly the spec’s fields', async () => {
    await add(a, 'first@example.com');
    await add(a, 'second@example.com');
    const list = await listOf(a);
    expect(list.map((r) => r.email_address)).toEqual(['second@example.com', 'first@example.com']);
    for (const r of list) expectShape(unsubscriberRecord, r);
    expect(list[0]).toMatchObject({ user_id: a.id, unsubscribe_groups_id: null });
    expect(Object.keys(list[0]).sort()).toEqual(
      ['created_at', 'email_address', 'id', 'unsubscribe_groups_id', 'updated_at', 'user_id'].sort(),
    );
  });

  it('shows the group of an address that unsubscribed through a group’s email', async () => {
    const account = await makeAccount(db);
    const saved = await api(app, account).form('/unsubscribes-groups/save', { group_name: 'News', description: 'd', is_display: 1 });
    expectSuccess(saved, 'Saved Successfully');
    const [group] = (await api(app, account).get('/unsubscribes-groups')).body.message.unsubscribesGroups;
    // Addresses arrive with a group through the unsubscribe page, not through this API.
    await db('global_unsubscribers').insert({ user_id: account.id, unsubscribe_groups_id: group.id, email_address: 'p@example.com' });
    const [row] = await listOf(account);
    expectShape(unsubscriberRecord, row);
    expect(row.unsubscribe_groups_id).toBe(group.id);
    // Groups are deleted softly; a hard delete of one an address names is refused, never forgets the group
    // (migration 202612080100: no ON DELETE SET NULL, which Citus refuses on a key with user_id).
    await expect(db('unsubscribe_groups').where({ user_id: account.id, id: group.id }).delete()).rejects.toMatchObject({
      code: '23503',
      constraint: 'global_unsubscribers_unsubscribe_groups_id_foreign',
    });
    expect((await listOf(account))[0].unsubscribe_groups_id).toBe(group.id);
  });

  it('pages with ?page=&per_page= and reports the total', async () => {
    const res = await api(app, a).get('/global-unsubscribes?page=2&per_page=1');
    expectSuccess(res);
    expect(res.body.message.unSubscribers).toHaveLength(1);
    expect(res.body.message.unSubscribers[0].email_address).toBe('first@example.com');
    expectShape(unsubscriberRecord, res.body.message.unSubscribers[0]);
    expect(res.body.message.pagination).toEqual({ page: 2, per_page: 1, total: 2 });
    const past = await api(app, a).get('/global-unsubscribes?page=3&per_page=1');
    expect(past.body.message).toEqual({ unSubscribers: [], pagination: { page: 3, per_page: 1, total: 2 } });
  });

  it('without paging parameters returns everything and no pagination key', async () => {
    const res = await api(app, a).get('/global-unsubscribes');
    expect(Object.keys(res.body.message)).toEqual(['unSubscribers']);
  });

  it('refuses a bad page size with VAL', async () => {
    const res = await api(app, a).get('/global-unsubscribes?per_page=0');
    expectVal(res, { per_page: ['The per page must be an integer between 1 and 1000.'] });
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/global-unsubscribes'));
  });

  it('never shows another account’s addresses', async () => {
    expect(await listOf(b)).toEqual([]);
  });
});

describe('POST /global-unsubscribes/save', () => {
  it('adds every address of a comma-separated list, in order, skipping duplicates in any case', async () => {
    const account = await makeAccount(db);
    await add(account, ' one@example.com, Two@Example.com ,ONE@example.com;three@example.org two@example.com ');
    const list = await listOf(account);
    expect(list.map((r) => r.email_address)).toEqual(['three@example.org', 'Two@Example.com', 'one@example.com']);
    for (const r of list) expectShape(unsubscriberRecord, r);
  });

  it('leaves addresses already present (any case) as they are and adds only the new ones', async () => {
    const account = await makeAccount(db);
    await add(account, 'Keep@Example.com');
    const [before] = await listOf(account);
    await add(account, 'keep@example.com, new@example.com, KEEP@EXAMPLE.COM');
    const list = await listOf(account);
    expect(list.map((r) => r.email_address)).toEqual(['new@example.com', 'Keep@Example.com']);
    expect(list[1]).toEqual(before);
    await add(account, 'NEW@example.com');
    expect(await listOf(account)).toEqual(list);
  });

  it('keeps each account’s list separate: the same address can be on both', async () => {
    const c = await makeAccount(db);
    const d = await makeAccount(db);
    await add(c, 'shared@example.com');
    await add(d, 'shared@example.com');
    expect((await listOf(c)).map((r) => r.user_id)).toEqual([c.id]);
    expect((await listOf(d)).map((r) => r.user_id)).toEqual([d.id]);
  });

  it('reports a missing or empty list as required', async () => {
    expectVal(await api(app, a).form('/global-unsubscribes/save', {}), {
      email_address: ['The email address field is required.'],
    });
    expectVal(await api(app, a).form('/global-unsubscribes/save', { email_address: ' , ;, ' }), {
      email_address: ['The email address field is required.'],
    });
  });

  it('refuses a list with an invalid address, naming it, and adds none of it', async () => {
    const before = await listOf(a);
    const res = await api(app, a).form('/global-unsubscribes/save', { email_address: 'ok@example.com, not-an-email' });
    expectVal(res, { email_address: ['The email address must be a valid email address ("not-an-email" is not).'] });
    expect(Object.keys(res.body.errors)).toEqual(['email_address']);
    expect(await listOf(a)).toEqual(before);
  });

  it('adds a long list in one go', async () => {
    const account = await makeAccount(db);
    const emails = Array.from({ length: 5000 }, (_, i) => `bulk${i}@example.com`);
    await add(account, emails.join(','));
    const res = await api(app, account).get('/global-unsubscribes?per_page=1');
    expect(res.body.message.pagination.total).toBe(5000);
    expect(res.body.message.unSubscribers[0].email_address).toBe('bulk4999@example.com');
  });

  it('accepts urlencoded and JSON bodies too', async () => {
    const account = await makeAccount(db);
    expectSuccess(await api(app, account).urlencoded('/global-unsubscribes/save', 'email_address=u%40example.com%2Cv%40example.com'));
    expectSuccess(await api(app, account).json('/global-unsubscribes/save', { email_address: 'j@example.com' }));
    expect((await listOf(account)).map((r) => r.email_address).sort()).toEqual(['j@example.com', 'u@example.com', 'v@example.com']);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/global-unsubscribes/save', { email_address: 'x@example.com' }));
  });
});

describe('DELETE /global-unsubscribes/delete', () => {
  it('deletes the record; a second delete is NF1', async () => {
    await add(a, 'gone@example.com');
    const id = await idOf(a, 'gone@example.com');
    expectSuccess(await api(app, a).delete(`/global-unsubscribes/delete?id=${id}`), 'Deleted Successfully');
    expect((await listOf(a)).some((r) => r.id === id)).toBe(false);
    expectNF1(await api(app, a).delete(`/global-unsubscribes/delete?id=${id}`));
  });

  it('lets a deleted address be added again', async () => {
    await add(a, 'back@example.com');
    expectSuccess(await api(app, a).delete(`/global-unsubscribes/delete?id=${await idOf(a, 'back@example.com')}`));
    await add(a, 'Back@example.com');
    expect((await listOf(a)).filter((r) => r.email_address.toLowerCase() === 'back@example.com')).toHaveLength(1);
  });

  it('answers NF1 for unknown, malformed and missing ids', async () => {
    for (const q of ['?id=999999999', '?id=abc', '?id=0', '?id=-1', '?id=99999999999', '']) {
      expectNF1(await api(app, a).delete(`/global-unsubscribes/delete${q}`));
    }
  });

  it('answers NF1 for another account’s id and leaves the record unchanged', async () => {
    const before = await listOf(a);
    expectNF1(await api(app, b).delete(`/global-unsubscribes/delete?id=${before[0].id}`));
    expect(await listOf(a)).toEqual(before);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).delete('/global-unsubscribes/delete?id=1'));
  });
});

describe('POST /global-unsubscribes/bulk-delete', () => {
  it('deletes every listed id (strIds[0], strIds[1] urlencoded)', async () => {
    await add(a, 'bulk1@example.com, bulk2@example.com');
    const ids = (await listOf(a)).filter((r) => r.email_address.startsWith('bulk')).map((r) => r.id);
    expect(ids).toHaveLength(2);
    const res = await api(app, a).urlencoded('/global-unsubscribes/bulk-delete', `strIds[0]=${ids[0]}&strIds[1]=${ids[1]}`);
    expectSuccess(res, 'Deleted Successfully');
    expect((await listOf(a)).some((r) => ids.includes(r.id))).toBe(false);
  });

  it('deletes from a multipart body too, ignoring a repeated id', async () => {
    await add(a, 'multi1@example.com, multi2@example.com');
    const ids = (await listOf(a)).filter((r) => r.email_address.startsWith('multi')).map((r) => r.id);
    expectSuccess(await api(app, a).form('/global-unsubscribes/bulk-delete', { strIds: [...ids, ids[0]] }), 'Deleted Successfully');
    expect((await listOf(a)).some((r) => ids.includes(r.id))).toBe(false);
  });

  it('is all or nothing: one unknown or malformed id → NF1 and nothing deleted', async () => {
    await add(a, 'keep@example.com');
    const before = await listOf(a);
    const id = await idOf(a, 'keep@example.com');
    expectNF1(await api(app, a).form('/global-unsubscribes/bulk-delete', { strIds: [id, 999999999] }));
    expectNF1(await api(app, a).form('/global-unsubscribes/bulk-delete', { strIds: [id, 'abc'] }));
    expect(await listOf(a)).toEqual(before);
  });

  it('answers NF1 with another account’s ids and leaves them unchanged', async () => {
    const before = await listOf(a);
    expectNF1(await api(app, b).form('/global-unsubscribes/bulk-delete', { strIds: before.map((r) => r.id) }));
    expect(await listOf(a)).toEqual(before);
  });

  it('requires strIds', async () => {
    expectVal(await api(app, a).form('/global-unsubscribes/bulk-delete', {}), { strIds: ['The str ids field is required.'] });
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).urlencoded('/global-unsubscribes/bulk-delete', 'strIds[0]=1'));
  });
});
