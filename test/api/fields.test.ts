import { RESERVED_FIELDS } from '../../seeds/01_reserved-fields';
import { customFieldRecord, reservedFieldRecord } from '../../src/resources/fields/fields.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';

const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
});

type Field = { id: number; field_name: string; field_type: string };

async function customOf(account: TestAccount): Promise<Field[]> {
  const res = await api(app, account).get('/custom-fields');
  expectSuccess(res);
  return res.body.message.customFields;
}

async function save(account: TestAccount, field_name: string, field_type = 'text'): Promise<number> {
  expectSuccess(await api(app, account).form('/custom-fields/save', { field_name, field_type }), 'Added Successfully');
  return (await customOf(account)).find((f) => f.field_name === field_name)!.id;
}

describe('GET /reserve-fields', () => {
  it('lists the eleven reserved fields with null owner and timestamps', async () => {
    const res = await api(app, a).get('/reserve-fields');
    expectSuccess(res);
    const list = res.body.message.reservedFields;
    expect(list.map((f: Field) => f.field_name)).toEqual(RESERVED_FIELDS.map((f) => f.field_name));
    for (const f of list) expectShape(reservedFieldRecord, f);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/reserve-fields'));
  });
});

describe('GET /custom-fields and POST /custom-fields/save', () => {
  it('adds fields of each type and lists them with the spec’s fields', async () => {
    await save(a, 'plan', 'text');
    await save(a, 'score', 'number');
    await save(a, 'Renewal_Date_2', 'datetime-local');
    const list = await customOf(a);
    expect(list.map((f) => f.field_name)).toEqual(['Renewal_Date_2', 'score', 'plan']);
    for (const f of list) expectShape(customFieldRecord, f);
    expect(list[0]).toMatchObject({ field_type: 'datetime-local', is_reserved: 0 });
    expect(await customOf(b)).toEqual([]);
  });

  it('reports missing fields together', async () => {
    expectVal(await api(app, a).form('/custom-fields/save', {}), {
      field_name: ['The field name field is required.'],
      field_type: ['The field type field is required.'],
    });
  });

  it('refuses names with other characters, reserved names and taken names, changing nothing', async () => {
    const before = await customOf(a);
    for (const bad of ['has space', 'dash-ed', 'émoji', 'semi;colon']) {
      expectVal(await api(app, a).form('/custom-fields/save', { field_name: bad, field_type: 'text' }), {
        field_name: ['The field name format is invalid.'],
      });
    }
    for (const reserved of ['email', 'First_Name', 'sender_name', 'unsubscribe_preferences']) {
      expectVal(await api(app, a).form('/custom-fields/save', { field_name: reserved, field_type: 'text' }), {
        field_name: ['The selected field name is invalid.'],
      });
    }
    expectVal(await api(app, a).form('/custom-fields/save', { field_name: 'PLAN', field_type: 'number' }), {
      field_name: ['The field name has already been taken.'],
    });
    expectVal(await api(app, a).form('/custom-fields/save', { field_name: 'ok_name', field_type: 'date' }), {
      field_type: ['The selected field type is invalid.'],
    });
    expect(await customOf(a)).toEqual(before);
    // Another account may use the same name.
    await save(b, 'plan');
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/custom-fields'));
    expectAuthMissing(await api(app).form('/custom-fields/save', { field_name: 'x', field_type: 'text' }));
  });
});

describe('DELETE /custom-fields/delete', () => {
  it('deletes the field and its stored values from the account’s contacts', async () => {
    const id = await save(a, 'to_drop', 'text');
    const [type] = await db('contact_types').insert({ user_id: a.id, name: 'T' }).returning('id');
    await db('contacts').insert({
      user_id: a.id,
      contact_type_id: type.id,
      email: 'x@example.com',
      custom_fields: JSON.stringify({ [id]: 'value', 999: 'other' }),
    });
    expectSuccess(await api(app, a).delete(`/custom-fields/delete?id=${id}`), 'Deleted Successfully');
    expect((await customOf(a)).some((f) => f.id === id)).toBe(false);
    const contact = await db('contacts').where({ user_id: a.id, email: 'x@example.com' }).first();
    expect(contact.custom_fields).toEqual({ 999: 'other' });
    expectNF1(await api(app, a).delete(`/custom-fields/delete?id=${id}`));
  });

  it('answers NF1 for reserved fields, unknown ids and other accounts’ fields', async () => {
    expectNF1(await api(app, a).delete('/custom-fields/delete?id=3'));
    expectNF1(await api(app, a).delete('/custom-fields/delete?id=999999999'));
    expectNF1(await api(app, a).delete('/custom-fields/delete'));
    const target = (await customOf(a))[0];
    expectNF1(await api(app, b).delete(`/custom-fields/delete?id=${target.id}`));
    expect((await customOf(a)).some((f) => f.id === target.id)).toBe(true);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).delete('/custom-fields/delete?id=1'));
  });
});
