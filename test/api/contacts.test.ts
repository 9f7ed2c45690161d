import request from 'supertest';
import { contactDetailRecord, contactListRecord, importRecord } from '../../src/resources/contacts/contacts.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';

const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;
let typeA: number;
let typeB: number;
let gb: { id: number; name: string };
let us: { id: number; name: string };

async function newType(account: TestAccount, name: string): Promise<number> {
  const [row] = await db('contact_types').insert({ user_id: account.id, name }).returning('id');
  return row.id;
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  typeA = await newType(a, 'Customers');
  typeB = await newType(b, 'Theirs');
  gb = await db('countries').where({ iso_code: 'GB' }).first('id', 'name');
  us = await db('countries').where({ iso_code: 'US' }).first('id', 'name');
  for (const [field_name, field_type] of [
    ['plan', 'text'],
    ['score', 'number'],
    ['renewal', 'datetime-local'],
  ]) {
    await db('custom_fields').insert({ user_id: a.id, field_name, field_type });
  }
});

type Contact = { id: number; email: string; first_name: string; contact_type_id: number; custom_field: Record<string, { field_value: string | null }> | null };

async function listOf(account: TestAccount): Promise<Contact[]> {
  const res = await api(app, account).get('/contacts/list');
  expectSuccess(res);
  return res.body.message.contacts;
}

async function add(account: TestAccount, fields: Record<string, unknown>) {
  return api(app, account).form('/contacts/add', { contact_type_id: typeA, country: gb.id, ...fields });
}

async function idOf(account: TestAccount, email: string, type = typeA): Promise<number> {
  return (await listOf(account)).find((c) => c.email === email && c.contact_type_id === type)!.id;
}

describe('POST /contacts/add and GET /contacts/list', () => {
  it('adds a contact with custom values; the list shows country name, contact_type and fullname', async () => {
    const res = await add(a, {
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.com',
      city: 'London',
      'custom_field[plan]': 'gold',
      'custom_field[score]': '42.5',
      renewal: '2027-01-31T09:30',
    });
    expectSuccess(res, 'Contact Added Successfully');
    const [c] = await listOf(a);
    const rec = expectShape(contactListRecord, c);
    expect(rec).toMatchObject({
      user_id: a.id,
      contact_type_id: typeA,
      email: 'ada@example.com',
      fullname: 'Ada Lovelace',
      country: gb.name,
      city: 'London',
      alt_email: null,
      deleted_at: null,
      contact_type: { id: typeA, name: 'Customers', user_id: a.id },
    });
    expect(rec.custom_field).toEqual({
      plan: { field_name: 'plan', field_value: 'gold' },
      score: { field_name: 'score', field_value: '42.5' },
      renewal: { field_name: 'renewal', field_value: '2027-01-31T09:30' },
    });
  });

  it('streams the whole list newest first, or one page with ?page=', async () => {
    expectSuccess(await add(a, { email: 'second@example.com' }));
    expect((await listOf(a)).map((c) => c.email)).toEqual(['second@example.com', 'ada@example.com']);
    const page = await api(app, a).get('/contacts/list?page=2&per_page=1');
    expectSuccess(page);
    expect(page.body.message.contacts.map((c: Contact) => c.email)).toEqual(['ada@example.com']);
    expect(page.body.message.pagination).toEqual({ page: 2, per_page: 1, total: 2 });
  });

  it('reports each missing required field', async () => {
    const res = await api(app, a).form('/contacts/add', {});
    expectVal(res, {
      contact_type_id: ['The contact type id field is required.'],
      email: ['The email field is required.'],
      country: ['The country field is required.'],
    });
  });

  it('refuses bad values and changes nothing', async () => {
    const before = await listOf(a);
    expectVal(await add(a, { email: 'nope' }), { email: ['The email must be a valid email address.'] });
    expectVal(await add(a, { email: 'ADA@example.com' }), { email: ['The email has already been taken.'] });
    expectVal(await add(a, { email: 'x@example.com', country: 999999 }), { country: ['The selected country is invalid.'] });
    expectVal(await add(a, { email: 'x@example.com', contact_type_id: typeB }), {
      contact_type_id: ['The selected contact type id is invalid.'],
    });
    expectVal(await add(a, { email: 'x@example.com', 'custom_field[score]': 'many' }), { 'custom_field.score': ['The score must be a number.'] });
    expectVal(await add(a, { email: 'x@example.com', renewal: '31/01/2027' }), {
      renewal: ['The renewal does not match the format Y-m-d\\TH:i.'],
    });
    expectVal(await add(a, { email: 'x@example.com', 'custom_field[nosuch]': 'v' }), {
      'custom_field.nosuch': ['The custom field nosuch does not exist.'],
    });
    expect(await listOf(a)).toEqual(before);
  });

  it('allows the same email in another contact type and another account', async () => {
    const other = await newType(a, 'Other list');
    expectSuccess(await add(a, { email: 'ada@example.com', contact_type_id: other }));
    expectSuccess(await api(app, b).form('/contacts/add', { contact_type_id: typeB, email: 'ada@example.com', country: us.id }));
    expect((await listOf(b)).map((c) => c.email)).toEqual(['ada@example.com']);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/contacts/list'));
    expectAuthMissing(await api(app).form('/contacts/add', { email: 'x@example.com' }));
  });
});

describe('GET /contacts/details', () => {
  it('shows the country as its id in a string, and custom values', async () => {
    const id = await idOf(a, 'second@example.com');
    const res = await api(app, a).get(`/contacts/details?contact_id=${id}`);
    expectSuccess(res);
    const rec = expectShape(contactDetailRecord, res.body.message.contact);
    expect(rec.country).toBe(String(gb.id));
    expect(rec.custom_field!.plan).toEqual({ field_name: 'plan', field_value: null });
  });

  it('answers NF1 for unknown, missing and other accounts’ ids', async () => {
    expectNF1(await api(app, a).get('/contacts/details?contact_id=999999999'));
    expectNF1(await api(app, a).get('/contacts/details'));
    const id = await idOf(b, 'ada@example.com', typeB);
    expectNF1(await api(app, a).get(`/contacts/details?contact_id=${id}`));
    expectAuthMissing(await api(app).get(`/contacts/details?contact_id=${id}`));
  });
});

describe('POST /contacts/update', () => {
  it('replaces the fields and merges custom values', async () => {
    const id = await idOf(a, 'ada@example.com');
    const res = await api(app, a).form('/contacts/update', {
      contact_id: id,
      contact_type_id: typeA,
      email: 'ada.l@example.com',
      country: us.id,
      first_name: 'Augusta',
      'custom_field[plan]': '',
      'custom_field[score]': '7',
    });
    expectSuccess(res, 'Contact Updated Successfully');
    const rec = (await api(app, a).get(`/contacts/details?contact_id=${id}`)).body.message.contact;
    expect(rec).toMatchObject({ email: 'ada.l@example.com', first_name: 'Augusta', last_name: '', country: String(us.id) });
    expect(rec.custom_field.plan.field_value).toBeNull();
    expect(rec.custom_field.score.field_value).toBe('7');
    expect(rec.custom_field.renewal.field_value).toBe('2027-01-31T09:30');
  });

  it('clears a custom value sent empty — either spelling, any encoding, blank or null — and keeps those not sent', async () => {
    expectSuccess(await add(a, { email: 'clear@example.com', plan: 'gold', score: '5', renewal: '2027-01-31T09:30' }));
    const id = await idOf(a, 'clear@example.com');
    const base = { contact_id: id, contact_type_id: typeA, email: 'clear@example.com', country: gb.id };
    const full = { plan: 'gold', score: '5', renewal: '2027-01-31T09:30' };
    const stored = async () => {
      const rec = (await api(app, a).get(`/contacts/details?contact_id=${id}`)).body.message.contact as Contact;
      return Object.fromEntries(Object.entries(rec.custom_field!).map(([k, v]) => [k, v.field_value]));
    };
    const json = (body: object) => request(app).post('/contacts/update').set(a.headers).send(body);
    const cases: Array<[string, string, () => Promise<request.Response>]> = [
      ['multipart <name>=', 'plan', () => api(app, a).form('/contacts/update', { ...base, plan: '' })],
      ['multipart <name>=<spaces>', 'plan', () => api(app, a).form('/contacts/update', { ...base, plan: '   ' })],
      ['multipart custom_field[<name>]=', 'score', () => api(app, a).form('/contacts/update', { ...base, 'custom_field[score]': '' })],
      ['urlencoded <name>=', 'renewal', () => request(app).post('/contacts/update').set(a.headers).type('form').send({ ...base, renewal: '' })],
      ['JSON "<name>": ""', 'plan', () => json({ ...base, plan: '' })],
      ['JSON "<name>": null', 'score', () => json({ ...base, score: null })],
      ['JSON custom_field {"<name>": null}', 'renewal', () => json({ ...base, custom_field: { renewal: null } })],
    ];
    for (const [how, field, send] of cases) {
      expectSuccess(await api(app, a).form('/contacts/update', { ...base, ...full }));
      expect(await stored()).toEqual(full);
      const res = await send();
      expect({ how, status: res.status, body: res.body }).toEqual({ how, status: 200, body: { status: 'success', message: 'Contact Updated Successfully' } });
      expect({ how, values: await stored() }).toEqual({ how, values: { ...full, [field]: null } });
    }
    // Not sent at all: kept.
    expectSuccess(await api(app, a).form('/contacts/update', { ...base, ...full }));
    expectSuccess(await api(app, a).form('/contacts/update', base));
    expect(await stored()).toEqual(full);
  });

  it('answers VAL for missing fields or a taken email, NF1 for another account’s contact', async () => {
    const id = await idOf(a, 'ada.l@example.com');
    expectVal(await api(app, a).form('/contacts/update', { contact_id: id }), {
      contact_type_id: ['The contact type id field is required.'],
      email: ['The email field is required.'],
      country: ['The country field is required.'],
    });
    expectVal(await api(app, a).form('/contacts/update', { contact_type_id: typeA, email: 'z@example.com', country: gb.id }), {
      contact_id: ['The contact id field is required.'],
    });
    expectVal(
      await api(app, a).form('/contacts/update', { contact_id: id, contact_type_id: typeA, email: 'second@example.com', country: gb.id }),
      { email: ['The email has already been taken.'] },
    );
    const theirs = (await listOf(b))[0].id;
    expectNF1(
      await api(app, a).form('/contacts/update', { contact_id: theirs, contact_type_id: typeA, email: 'q@example.com', country: gb.id }),
    );
    expect((await listOf(b))[0].email).toBe('ada@example.com');
    expectAuthMissing(await api(app).form('/contacts/update', { contact_id: id }));
  });
});

describe('DELETE /contacts/delete and POST /contacts/bulk-delete', () => {
  it('soft-deletes one contact; the address may be added again', async () => {
    const id = await idOf(a, 'second@example.com');
    expectSuccess(await api(app, a).delete(`/contacts/delete?contact_id=${id}`), 'Deleted Successfully');
    expect((await listOf(a)).some((c) => c.id === id)).toBe(false);
    expect((await db('contacts').where({ id }).first()).deleted_at).not.toBeNull();
    expectNF1(await api(app, a).delete(`/contacts/delete?contact_id=${id}`));
    expectSuccess(await add(a, { email: 'second@example.com' }));
  });

  it('bulk-deletes all or nothing', async () => {
    const ids = (await listOf(a)).map((c) => c.id);
    const theirs = (await listOf(b))[0].id;
    expectNF1(await api(app, a).urlencoded('/contacts/bulk-delete', `strIds[0]=${ids[0]}&strIds[1]=${theirs}`));
    expect((await listOf(a)).map((c) => c.id)).toEqual(ids);
    expectNF1(await api(app, b).delete(`/contacts/delete?contact_id=${ids[0]}`));
    expectVal(await api(app, a).form('/contacts/bulk-delete', {}), { strIds: ['The str ids field is required.'] });
    expectSuccess(await api(app, a).urlencoded('/contacts/bulk-delete', `strIds[0]=${ids[0]}&strIds[1]=${ids[1]}`), 'Deleted Successfully');
    expect((await listOf(a)).some((c) => ids.slice(0, 2).includes(c.id))).toBe(false);
    expectAuthMissing(await api(app).delete(`/contacts/delete?contact_id=${ids[0]}`));
  });
});

describe('GET /contacts/csv-sample/download', () => {
  it('returns a CSV with every reserved and custom column and one example row', async () => {
    const res = await api(app, a).get('/contacts/csv-sample/download');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    expect(res.headers['content-disposition']).toMatch(/attachment/);
    const [header, row] = res.text.trim().split('\r\n');
    expect(header.split(',')).toEqual(expect.arrayContaining(['first_name', 'email', 'country', 'plan', 'score', 'renewal']));
    expect(row).toContain('ada@example.com');
  });

  it('answers the spec’s {} to a client that only accepts JSON, and AUTH without keys', async () => {
    const res = await request(app).get('/contacts/csv-sample/download').set(a.headers).set('Accept', 'application/json');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expectAuthMissing(await api(app).get('/contacts/csv-sample/download'));
  });
});

function upload(account: TestAccount, csv: string | Buffer, fields: Record<string, unknown> = {}, name = 'contacts.csv') {
  let t = request(app).post('/contacts/upload-csv').set(account.headers);
  for (const [k, v] of Object.entries({ contact_type_id: typeA, ...fields })) t = t.field(k, String(v));
  return t.attach('file', Buffer.isBuffer(csv) ? csv : Buffer.from(csv), name);
}

describe('POST /contacts/upload-csv and GET /contacts/imports', () => {
  let importType: number;
  beforeAll(async () => {
    importType = await newType(a, 'Imported');
  });

  it('imports exactly the good rows: bad row skipped, duplicate last-wins, custom and unknown columns, country by name', async () => {
    const csv = [
      'Email,First Name,last_name,Country,plan,score,favourite_colour',
      'one@example.com,One,Uno,United Kingdom,gold,10,blue',
      'not-an-email,Bad,Row,GB,,,',
      'two@example.com,Two,Dos,us,silver,abc,red',
      'three@example.com,Three,Tres,' + gb.id + ',,3,green',
      'ONE@example.com,Won,Uno,Atlantis,,,',
      'one@example.com,Uno,Again,France,bronze,11,',
    ].join('\n');
    const res = await upload(a, csv, { contact_type_id: importType });
    expectSuccess(res, 'Imported Successfully');
    const rows = await db('contacts').where({ contact_type_id: importType }).orderBy('email');
    expect(rows.map((r) => r.email)).toEqual(['one@example.com', 'three@example.com']);
    const france = await db('countries').where({ iso_code: 'FR' }).first('id');
    expect(rows[0]).toMatchObject({ first_name: 'Uno', last_name: 'Again', country_id: france.id });
    const fieldIds = Object.fromEntries((await db('fields').where({ user_id: a.id })).map((f) => [f.field_name, String(f.id)]));
    expect(rows[0].custom_fields).toEqual({ [fieldIds.plan]: 'bronze', [fieldIds.score]: '11' });

    const imports = await api(app, a).get('/contacts/imports');
    expectSuccess(imports);
    const rec = expectShape(importRecord, imports.body.message.imports[0]);
    expect(rec).toMatchObject({ status: 'completed', rows_read: 6, inserted: 2, updated: 0, skipped: 4, ignored_columns: ['favourite_colour'] });
    // Line 2 lost to line 7 (same address); lines 3, 4 and 6 are invalid.
    expect(rec.reasons.map((r) => r.row)).toEqual([2, 3, 4, 6]);
    expect(rec.reasons[2].reason).toBe('The score must be a number.');
  });

  it('updates existing contacts of the type on re-import, keeping values of blank cells', async () => {
    const res = await upload(a, 'email,first_name,city\nthree@example.com,,Paris\nfour@example.com,Four,\n', { contact_type_id: importType });
    expectSuccess(res);
    const three = await db('contacts').where({ contact_type_id: importType, email: 'three@example.com' }).first();
    expect(three).toMatchObject({ first_name: 'Three', city: 'Paris' });
    const [last] = (await api(app, a).get('/contacts/imports')).body.message.imports;
    expect(last).toMatchObject({ inserted: 1, updated: 1, skipped: 0 });
  });

  it('counts a re-imported row that changes nothing as unchanged, without rewriting the contact', async () => {
    const type = await newType(a, 'Re-imported');
    const csv = 'email,first_name,city\nann@example.com,Ann,Oslo\nbob@example.com,Bob,Rome\ncy@example.com,Cy,\n';
    expectSuccess(await upload(a, csv, { contact_type_id: type }));
    const before = await db('contacts').where({ contact_type_id: type }).orderBy('id');
    expect(before).toHaveLength(3);
    expectSuccess(await upload(a, csv, { contact_type_id: type }));
    const [last] = (await api(app, a).get('/contacts/imports')).body.message.imports;
    expect(last).toMatchObject({ inserted: 0, updated: 0, unchanged: before.length, skipped: 0 });
    const after = await db('contacts').where({ contact_type_id: type }).orderBy('id');
    expect(after.map((c) => [c.id, String(c.updated_at)])).toEqual(before.map((c) => [c.id, String(c.updated_at)]));
    // A real change to one of them is written (and the others still are not).
    expectSuccess(await upload(a, `email,first_name,city\n${before[0].email},Changed,\n${before[1].email},,\n`, { contact_type_id: type }));
    const changed = await db('contacts').where({ id: before[0].id }).first();
    expect(changed).toMatchObject({ first_name: 'Changed', city: before[0].city });
    expect(String(changed.updated_at) > String(before[0].updated_at)).toBe(true);
    const untouched = await db('contacts').where({ id: before[1].id }).first();
    expect(String(untouched.updated_at)).toBe(String(before[1].updated_at));
    const [again] = (await api(app, a).get('/contacts/imports')).body.message.imports;
    expect(again).toMatchObject({ inserted: 0, updated: 1, unchanged: 1, skipped: 0 });
  });

  it('refuses bad uploads with VAL and imports nothing', async () => {
    const count = async () => Number((await db('contacts').where({ user_id: a.id }).count({ n: '*' }))[0].n);
    const before = await count();
    expectVal(await api(app, a).form('/contacts/upload-csv', {}), {
      contact_type_id: ['The contact type id field is required.'],
      file: ['The file field is required.'],
    });
    expectVal(await upload(a, 'email\nx@example.com\n', {}, 'contacts.txt'), { file: ['The file must be a file of type: csv.'] });
    expectVal(await upload(a, Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 1, 2]), {}, 'book.csv'), {
      file: ['The file must be a file of type: csv.'],
    });
    expectVal(await upload(a, 'name,city\nx,y\n'), { file: ['The file must have a header row with an email column.'] });
    expectVal(await upload(a, 'email\nx@example.com\n', { contact_type_id: typeB }), {
      contact_type_id: ['The selected contact type id is invalid.'],
    });
    const broken = await upload(a, 'email,first_name\n"x@example.com,unterminated\n');
    expect(broken.status).toBe(422);
    expect(broken.body.errors.file[0]).toMatch(/^The file is not a valid CSV file/);
    expect(await count()).toBe(before);
  });

  it('answers AUTH without keys, and another account never sees the imports', async () => {
    expectAuthMissing(await request(app).post('/contacts/upload-csv').field('contact_type_id', typeA));
    expectAuthMissing(await api(app).get('/contacts/imports'));
    expect((await api(app, b).get('/contacts/imports')).body.message.imports).toEqual([]);
  });
});
