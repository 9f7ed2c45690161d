import { contactTypeListRecord, contactTypeRecord } from '../../src/resources/contact-types/contact-types.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectSuccessInErrors, expectVal } from '../helpers/expect';

const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
});

type Row = { id: number; name: string; contacts_count: number };

async function listOf(account: TestAccount): Promise<Row[]> {
  const res = await api(app, account).get('/contacts-type');
  expectSuccess(res);
  return res.body.message.contactTypes;
}

async function add(account: TestAccount, name: string): Promise<number> {
  expectSuccess(await api(app, account).form('/contacts-type/add', { name }), 'Added Successfully');
  return (await listOf(account)).find((r) => r.name === name)!.id;
}

async function addContacts(account: TestAccount, typeId: number, emails: string[]) {
  await db('contacts').insert(emails.map((email) => ({ user_id: account.id, contact_type_id: typeId, email })));
}

describe('GET /contacts-type', () => {
  it('lists live types newest first with contacts_count computed from live contacts', async () => {
    const first = await add(a, 'Customers');
    const second = await add(a, 'Leads');
    await addContacts(a, first, ['one@example.com', 'two@example.com', 'three@example.com']);
    await db('contacts').where({ contact_type_id: first, email: 'three@example.com' }).update({ deleted_at: db.fn.now() });
    const list = await listOf(a);
    expect(list.map((r) => r.id).slice(0, 2)).toEqual([second, first]);
    for (const r of list) expectShape(contactTypeListRecord, r);
    expect(list.find((r) => r.id === first)!.contacts_count).toBe(2);
    expect(list.find((r) => r.id === second)!.contacts_count).toBe(0);
  });

  it('pages with ?page=&per_page=', async () => {
    const res = await api(app, a).get('/contacts-type?page=1&per_page=1');
    expectSuccess(res);
    expect(res.body.message.contactTypes).toHaveLength(1);
    expect(res.body.message.pagination).toEqual({ page: 1, per_page: 1, total: 2 });
  });

  it('answers AUTH without keys and never shows another account’s types', async () => {
    expectAuthMissing(await api(app).get('/contacts-type'));
    expect(await listOf(b)).toEqual([]);
  });
});

describe('POST /contacts-type/add', () => {
  it('requires a name of at least 2 characters', async () => {
    expectVal(await api(app, a).form('/contacts-type/add', {}), { name: ['The name field is required.'] });
    expectVal(await api(app, a).form('/contacts-type/add', { name: 'X' }), { name: ['The name must be at least 2 characters.'] });
    expectVal(await api(app, a).form('/contacts-type/add', { name: 'x'.repeat(256) }), {
      name: ['The name must not be greater than 255 characters.'],
    });
  });

  it('refuses a name the account already uses (any case), but another account may use it', async () => {
    const before = await listOf(a);
    expectVal(await api(app, a).form('/contacts-type/add', { name: 'CUSTOMERS' }), { name: ['The name has already been taken.'] });
    expect(await listOf(a)).toEqual(before);
    await add(b, 'Customers');
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/contacts-type/add', { name: 'Anything' }));
  });
});

describe('GET /contacts-type/view', () => {
  it('shows one type with the spec’s fields', async () => {
    const id = await add(a, 'Viewed');
    const res = await api(app, a).get(`/contacts-type/view?contact_type_id=${id}`);
    expectSuccess(res);
    const record = expectShape(contactTypeRecord, res.body.message.contactType);
    expect(record).toMatchObject({ id, user_id: a.id, name: 'Viewed', deleted_at: null });
    // An id in the query string is read as a body id is: leading zeros and a plus sign are the same number.
    for (const written of [`0000000000${id}`, `%2B${id}`]) {
      expect((await api(app, a).get(`/contacts-type/view?contact_type_id=${written}`)).body.message.contactType.id).toBe(id);
    }
  });

  it('answers VAL without an id, NF1 for unknown, malformed and other accounts’ ids', async () => {
    expectVal(await api(app, a).get('/contacts-type/view'), { contact_type_id: ['The contact type id field is required.'] });
    expectNF1(await api(app, a).get('/contacts-type/view?contact_type_id=999999999'));
    for (const bad of ['abc', '0', '-1', '1.5', '2147483648', '9'.repeat(400)]) {
      expectNF1(await api(app, a).get(`/contacts-type/view?contact_type_id=${bad}`));
    }
    const id = (await listOf(a))[0].id;
    expectNF1(await api(app, b).get(`/contacts-type/view?contact_type_id=${id}`));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/contacts-type/view?contact_type_id=1'));
  });
});

describe('POST /contacts-type/update', () => {
  it('renames the type', async () => {
    const id = await add(a, 'Old name');
    expectSuccess(await api(app, a).form('/contacts-type/update', { id, name: 'New name' }), 'Updated Successfully');
    const res = await api(app, a).get(`/contacts-type/view?contact_type_id=${id}`);
    expect(res.body.message.contactType.name).toBe('New name');
    // Renaming to its own name in another case is not a clash with itself.
    expectSuccess(await api(app, a).form('/contacts-type/update', { id, name: 'NEW NAME' }));
  });

  it('answers NF1 for unknown and other accounts’ ids, leaving the record alone', async () => {
    expectNF1(await api(app, a).form('/contacts-type/update', { id: 999999999, name: 'Nope' }));
    const target = (await listOf(a))[0];
    expectNF1(await api(app, b).form('/contacts-type/update', { id: target.id, name: 'Hijacked' }));
    expect((await listOf(a))[0].name).toBe(target.name);
  });

  it('answers VAL for a missing id or a bad name', async () => {
    expectVal(await api(app, a).form('/contacts-type/update', { name: 'Fine' }), { id: ['The id field is required.'] });
    const id = (await listOf(a))[0].id;
    expectVal(await api(app, a).form('/contacts-type/update', { id, name: 'x' }), { name: ['The name must be at least 2 characters.'] });
    expectVal(await api(app, a).form('/contacts-type/update', { id, name: 'Leads' }), { name: ['The name has already been taken.'] });
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/contacts-type/update', { id: 1, name: 'Anything' }));
  });
});

describe('DELETE /contacts-type/delete', () => {
  it('soft-deletes the type and its contacts; the confirmation is in `errors` (rule 3)', async () => {
    const id = await add(a, 'Doomed');
    await addContacts(a, id, ['gone1@example.com', 'gone2@example.com']);
    expectSuccessInErrors(await api(app, a).delete(`/contacts-type/delete?contact_type_id=${id}`), 'Deleted Successfully');
    expect((await listOf(a)).some((r) => r.id === id)).toBe(false);
    expectNF1(await api(app, a).get(`/contacts-type/view?contact_type_id=${id}`));
    const rows = await db('contacts').where({ contact_type_id: id });
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.deleted_at !== null)).toBe(true);
    expect(await db('contact_types').where({ id }).first()).toMatchObject({ id });
    // The name is free again once deleted.
    await add(a, 'Doomed');
  });

  it('answers NF1 for unknown, deleted and other accounts’ ids', async () => {
    expectNF1(await api(app, a).delete('/contacts-type/delete?contact_type_id=999999999'));
    expectNF1(await api(app, a).delete('/contacts-type/delete'));
    const target = (await listOf(a))[0];
    expectNF1(await api(app, b).delete(`/contacts-type/delete?contact_type_id=${target.id}`));
    expect((await listOf(a)).some((r) => r.id === target.id)).toBe(true);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).delete('/contacts-type/delete?contact_type_id=1'));
  });
});
