import { parse } from 'csv-parse/sync';
import request from 'supertest';
import { RESERVED_COLUMNS } from '../../src/contacts/columns';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectNF2, expectSuccess, expectVal } from '../helpers/expect';
import { makeContacts, makeContactType } from '../helpers/fixtures';

const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;
let customers: number;
let other: number;
let theirs: number;
let gb: { id: number; name: string };
const field: Record<string, number> = {};
const HEADER = [...RESERVED_COLUMNS, 'plan', 'score', 'renewal'];

async function add(account: TestAccount, type: number, fields: Record<string, unknown>) {
  expectSuccess(await api(app, account).form('/contacts/add', { contact_type_id: type, country: gb.id, ...fields }));
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  gb = await db('countries').where({ iso_code: 'GB' }).first('id', 'name');
  for (const [field_name, field_type] of [
    ['plan', 'text'],
    ['score', 'number'],
    ['renewal', 'datetime-local'],
  ]) {
    expectSuccess(await api(app, a).form('/custom-fields/save', { field_name, field_type }));
  }
  for (const f of await db('fields').whereNull('user_id').orWhere('user_id', a.id)) field[f.field_name] = f.id;
  customers = await makeContactType(db, a, 'Customers');
  other = await makeContactType(db, a, 'Other');
  theirs = await makeContactType(db, b, 'Theirs');
  await add(a, customers, { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', city: 'London', 'custom_field[plan]': 'gold', 'custom_field[score]': '-5', renewal: '2027-01-31T09:30' });
  await add(a, customers, { email: 'grace@example.org', first_name: 'Grace', last_name: 'Hopper, Jr. "Amazing"', city: 'Paris', alt_email: 'g@example.net' });
  await add(a, customers, { email: 'gone@example.com', first_name: 'Gone' });
  await api(app, a).delete(`/contacts/delete?contact_id=${(await db('contacts').where({ user_id: a.id, email: 'gone@example.com' }).first('id')).id}`);
  await add(a, other, { email: 'elsewhere@example.com', first_name: 'Else' });
  await add(b, theirs, { email: 'theirs@example.com', first_name: 'Ada', city: 'London' });
});

type Exported = { status: number; type: string; disposition: string; text: string; rows: string[][] };

async function exportCsv(account: TestAccount, query: string): Promise<Exported> {
  const res = await request(app).get(`/contacts/export?${query}`).set(account.headers).buffer(true).parse((r, done) => {
    let text = '';
    r.setEncoding('utf8');
    r.on('data', (chunk: string) => (text += chunk));
    r.on('end', () => done(null, text));
  });
  expect(res.status).toBe(200);
  const text = res.body as string;
  return { status: res.status, type: res.headers['content-type'], disposition: res.headers['content-disposition'], text, rows: parse(text, { relax_column_count: true }) as string[][] };
}

const byEmail = (rows: string[][]) => new Map(rows.slice(1).map((r) => [r[2], Object.fromEntries(rows[0].map((h, i) => [h, r[i]]))]));

describe('GET /contacts/export?contact_type_id=', () => {
  it('streams the type’s live contacts as CSV with the import’s columns, oldest first', async () => {
    const out = await exportCsv(a, `contact_type_id=${customers}`);
    expect(out.type).toBe('text/csv; charset=utf-8');
    expect(out.disposition).toMatch(/^attachment; filename="?customers-[0-9a-f]{6}-\d{4}-\d{2}-\d{2}\.csv"?$/);
    expect(out.text.endsWith('\r\n')).toBe(true);
    expect(out.rows[0]).toEqual(HEADER);
    expect(out.rows.slice(1).map((r) => r[2])).toEqual(['ada@example.com', 'grace@example.org']);
    const rows = byEmail(out.rows);
    expect(rows.get('ada@example.com')).toEqual({
      first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', alt_email: '', country: gb.name, state: '', city: 'London',
      address_line1: '', address_line2: '', state_province_region: '', postal_code: '', plan: 'gold', score: '-5', renewal: '2027-01-31T09:30',
    });
    expect(rows.get('grace@example.org')).toMatchObject({ last_name: 'Hopper, Jr. "Amazing"', alt_email: 'g@example.net', plan: '', score: '' });
    expect(out.text).toContain(',"Hopper, Jr. ""Amazing""",');
  });

  it('writes a header and nothing else for an empty type, named after it in plain letters', async () => {
    const empty = await makeContactType(db, a, 'Été vide');
    const out = await exportCsv(a, `contact_type_id=${empty}`);
    expect(out.text).toBe(`${HEADER.join(',')}\r\n`);
    expect(out.disposition).toMatch(/filename="?ete-vide-[0-9a-f]{6}-\d{4}-\d{2}-\d{2}\.csv"?$/);
  });

  it('neutralises formulas: =, +, -, @, tab and carriage return get a leading quote; plain numbers do not', async () => {
    const type = await makeContactType(db, a, 'Formulas');
    // Stored directly: the API trims values, so a leading tab or CR cannot come from it.
    await makeContacts(db, a, type, [
      {
        email: 'f@example.com', first_name: '=1+1', last_name: '+SUM(A1:A9)', city: '-2+3', state: '@cmd', address_line1: '\tx', address_line2: '\r=y',
        postal_code: "'kept", custom_fields: JSON.stringify({ [field.plan]: '=HYPERLINK("http://evil.example","x")', [field.score]: '-12.5' }),
      },
    ]);
    const out = await exportCsv(a, `contact_type_id=${type}`);
    expect(byEmail(out.rows).get('f@example.com')).toMatchObject({
      first_name: "'=1+1", last_name: "'+SUM(A1:A9)", city: "'-2+3", state: "'@cmd", address_line1: "'\tx", address_line2: "'\r=y",
      postal_code: "'kept", plan: `'=HYPERLINK("http://evil.example","x")`, score: '-12.5',
    });
    expect(out.text.split('\r\n')[1]).toBe(`'=1+1,'+SUM(A1:A9),f@example.com,,,'@cmd,'-2+3,'\tx,"'\r=y",,'kept,"'=HYPERLINK(""http://evil.example"",""x"")",-12.5,`);
  });

  it('reads past its batches: every contact once, in order', async () => {
    const type = await makeContactType(db, a, 'Big');
    await db.raw(`INSERT INTO contacts (user_id, contact_type_id, email, first_name) SELECT ?, ?, 'big' || g || '@example.com', 'N' || g FROM generate_series(1, 5003) g`, [a.id, type]);
    const out = await exportCsv(a, `contact_type_id=${type}`);
    expect(out.rows.length).toBe(5004);
    expect(out.rows.slice(1).map((r) => r[2])).toEqual(Array.from({ length: 5003 }, (_, i) => `big${i + 1}@example.com`));
  });

  it('round trip: importing the export into another type gives the same contacts', async () => {
    const fresh = await makeContactType(db, a, 'Round trip');
    const csv = (await exportCsv(a, `contact_type_id=${customers}`)).text;
    expectSuccess(await request(app).post('/contacts/upload-csv').set(a.headers).field('contact_type_id', fresh).attach('file', Buffer.from(csv), 'customers.csv'));
    const [imported] = (await api(app, a).get('/contacts/imports')).body.message.imports;
    expect(imported).toMatchObject({ status: 'completed', inserted: 2, skipped: 0, ignored_columns: [] });
    const list = (await api(app, a).get('/contacts/list')).body.message.contacts as Array<Record<string, unknown>>;
    const strip = (type: number) =>
      list
        .filter((c) => c.contact_type_id === type)
        .map(({ id: _id, contact_type_id: _t, contact_type: _ct, created_at: _c, updated_at: _u, ...rest }) => rest)
        .sort((x, y) => String(x.email).localeCompare(String(y.email)));
    expect(strip(fresh)).toEqual(strip(customers));
    expect(strip(fresh)).toHaveLength(2);
    expect((await exportCsv(a, `contact_type_id=${fresh}`)).text).toBe(csv);
  });

  it('never includes another account’s contacts', async () => {
    const out = await exportCsv(b, `contact_type_id=${theirs}`);
    expect(out.rows).toEqual([[...RESERVED_COLUMNS], ['Ada', '', 'theirs@example.com', '', gb.name, '', 'London', '', '', '', '']]);
  });
});

describe('GET /contacts/export?segment_id=', () => {
  async function saveSegment(account: TestAccount, type: number, rules: Array<[string, string, string]>): Promise<number> {
    expectSuccess(
      await api(app, account).form('/segment/save', {
        segment_name: 'Londoners',
        contact_type_id: type,
        select_field: rules.map(([f]) => field[f]),
        select_operator: rules.map(([, op]) => op),
        value: rules.map(([, , v]) => v),
      }),
    );
    return (await db('segments').where({ user_id: account.id }).max('id as id').first())!.id as number;
  }

  it('equals the segment’s members: hand-added recipients, then the matching contacts', async () => {
    const seg = await saveSegment(a, customers, [['city', 'is', 'London']]);
    expectSuccess(await api(app, a).form('/segment/email/store', { segment_id: seg, email: 'hand@example.com', first_name: 'Hand', last_name: '=Added' }));
    const out = await exportCsv(a, `segment_id=${seg}`);
    expect(out.disposition).toMatch(/filename="?londoners-\d{4}-\d{2}-\d{2}\.csv"?$/);
    expect(out.rows[0]).toEqual(HEADER);
    const members = (await api(app, a).get(`/segment/email/list?segment_id=${seg}`)).body.message.contactEmails as Array<{ email: string }>;
    expect(out.rows.slice(1).map((r) => r[2])).toEqual(members.map((m) => m.email));
    expect(out.rows.slice(1).map((r) => r[2])).toEqual(['hand@example.com', 'ada@example.com']);
    expect(byEmail(out.rows).get('hand@example.com')).toMatchObject({ first_name: 'Hand', last_name: "'=Added", country: '', plan: '' });
    expect(byEmail(out.rows).get('ada@example.com')).toMatchObject({ city: 'London', plan: 'gold' });
  });

  it('answers NF2 for another account’s, a deleted or an impossible segment', async () => {
    const mine = await saveSegment(a, customers, [['city', 'is', 'Paris']]);
    const bField = (await db('fields').whereNull('user_id').where({ field_name: 'city' }).first('id')).id;
    expectSuccess(await api(app, b).form('/segment/save', { segment_name: 'B', contact_type_id: theirs, select_field: [bField], select_operator: ['is'], value: ['London'] }));
    const bSeg = (await db('segments').where({ user_id: b.id }).first('id')).id;
    expectNF2(await api(app, a).get(`/contacts/export?segment_id=${bSeg}`));
    await db('segments').where({ id: mine }).update({ deleted_at: db.fn.now() });
    expectNF2(await api(app, a).get(`/contacts/export?segment_id=${mine}`));
    for (const bad of ['abc', '0', '99999999999']) expectNF2(await api(app, a).get(`/contacts/export?segment_id=${bad}`));
  });
});

describe('GET /contacts/export failures', () => {
  it('answers VAL without either id or with both', async () => {
    expectVal(await api(app, a).get('/contacts/export'), { contact_type_id: ['The contact type id field is required when segment id is not present.'] });
    const seg = (await db('segments').where({ user_id: a.id }).whereNull('deleted_at').first('id')).id;
    expectVal(await api(app, a).get(`/contacts/export?contact_type_id=${customers}&segment_id=${seg}`), {
      contact_type_id: ['The contact type id field prohibits segment id from being present.'],
    });
  });

  it('answers NF1 for another account’s, a deleted or an impossible contact type', async () => {
    expectNF1(await api(app, a).get(`/contacts/export?contact_type_id=${theirs}`));
    const deleted = await makeContactType(db, a, 'Deleted');
    await db('contact_types').where({ id: deleted }).update({ deleted_at: db.fn.now() });
    expectNF1(await api(app, a).get(`/contacts/export?contact_type_id=${deleted}`));
    for (const bad of ['abc', '-3', '99999999999']) expectNF1(await api(app, a).get(`/contacts/export?contact_type_id=${bad}`));
  });

  it('needs the keys', async () => {
    expectAuthMissing(await api(app).get(`/contacts/export?contact_type_id=${customers}`));
  });
});
