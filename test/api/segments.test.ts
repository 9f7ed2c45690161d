import { segmentRecipientRecord, segmentRecord } from '../../src/resources/segments/segments.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectNF2, expectSuccess, expectSuccessInErrors, expectVal } from '../helpers/expect';

const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;
let typeA: number;
let typeB: number;
const field: Record<string, number> = {};

async function newType(account: TestAccount, name: string): Promise<number> {
  const [row] = await db('contact_types').insert({ user_id: account.id, name }).returning('id');
  return row.id;
}

async function addContact(account: TestAccount, type: number, c: Record<string, unknown>) {
  const res = await api(app, account).form('/contacts/add', { contact_type_id: type, ...c });
  expectSuccess(res, 'Contact Added Successfully');
}

let gb: number;
let fr: number;
beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  typeA = await newType(a, 'Everyone');
  typeB = await newType(b, 'Theirs');
  gb = (await db('countries').where({ iso_code: 'GB' }).first('id')).id;
  fr = (await db('countries').where({ iso_code: 'FR' }).first('id')).id;
  for (const [name, type] of [
    ['plan', 'text'],
    ['score', 'number'],
    ['joined', 'datetime-local'],
  ]) {
    expectSuccess(await api(app, a).form('/custom-fields/save', { field_name: name, field_type: type }));
  }
  for (const f of await db('fields').whereNull('user_id').orWhere('user_id', a.id)) field[f.field_name] = f.id;
  await addContact(a, typeA, { email: 'alice@example.com', first_name: 'Alice', last_name: 'Smith', city: 'London', country: gb, plan: 'gold', score: '10', joined: '2026-01-10T10:00' });
  await addContact(a, typeA, { email: 'bob@example.org', first_name: 'Bob', last_name: 'Jones', city: 'Paris', country: fr, score: '25', joined: '2026-03-01T00:00' });
  await addContact(a, typeA, { email: 'carol@example.com', first_name: 'Carol', country: gb, plan: 'Silver' });
  await addContact(b, typeB, { email: 'alice@example.com', first_name: 'Alice', country: gb });
});

type Rules = Array<[string, string, string?]>;

function ruleFields(rules: Rules, extra: Record<string, unknown> = {}) {
  return {
    segment_name: 'S',
    contact_type_id: typeA,
    select_field: rules.map(([f]) => (f in field ? field[f] : f)),
    select_operator: rules.map(([, op]) => op),
    value: rules.map(([, , v]) => v ?? ''),
    ...extra,
  };
}

async function save(account: TestAccount, rules: Rules, extra: Record<string, unknown> = {}): Promise<number> {
  expectSuccess(await api(app, account).form('/segment/save', ruleFields(rules, extra)), 'Saved Successfully');
  return (await api(app, account).get('/segment/list')).body.message.segments[0].id;
}

async function members(account: TestAccount, id: number): Promise<string[]> {
  const res = await api(app, account).get(`/segment/email/list?segment_id=${id}`);
  expectSuccess(res);
  return res.body.message.contactEmails.map((m: { email: string }) => m.email).sort();
}

const alice = 'alice@example.com';
const bob = 'bob@example.org';
const carol = 'carol@example.com';

describe('segment operators, per field type (compiled to SQL)', () => {
  const cases: Array<[string, Rules, string[]]> = [
    // text, reserved and custom
    ['text is (any case)', [['first_name', 'is', 'ALICE']], [alice]],
    ['text is not', [['first_name', 'is not', 'alice']], [bob, carol]],
    ['text contains', [['email', 'contains', '@example.com']], [alice, carol]],
    ['text does not contain', [['email', 'does not contain', 'example.com']], [bob]],
    ['text starts with', [['email', 'starts with', 'B']], [bob]],
    ['text ends with', [['email', 'ends with', '.org']], [bob]],
    ['text is empty', [['city', 'is empty']], [carol]],
    ['text is not empty', [['city', 'is not empty']], [alice, bob]],
    ['country by name', [['country', 'is', 'France']], [bob]],
    ['custom text is empty', [['plan', 'is empty']], [bob]],
    ['custom text contains', [['plan', 'contains', 'ilv']], [carol]],
    ['LIKE wildcards are literal', [['first_name', 'contains', '%']], []],
    // number
    ['number is', [['score', 'is', '10']], [alice]],
    ['number is not (blank included)', [['score', 'is not', '10']], [bob, carol]],
    ['number is greater than', [['score', 'is greater than', '10']], [bob]],
    ['number is less than', [['score', 'is less than', '25']], [alice]],
    ['number is between', [['score', 'is between', '5,20']], [alice]],
    ['number is between, reversed bounds', [['score', 'is between', '30, 5']], [alice, bob]],
    // datetime-local
    ['datetime is', [['joined', 'is', '2026-01-10T10:00']], [alice]],
    ['datetime is before', [['joined', 'is before', '2026-02-01']], [alice]],
    ['datetime is after', [['joined', 'is after', '2026-02-01T00:00']], [bob]],
    ['datetime is between', [['joined', 'is between', '2026-01-01,2026-12-31T23:59']], [alice, bob]],
    // combinations
    ['and (default)', [['email', 'contains', 'example.com'], ['city', 'is', 'London']], [alice]],
  ];
  it.each(cases)('%s', async (_name, rules, expected) => {
    const id = await save(a, rules);
    expect(await members(a, id)).toEqual(expected.sort());
  });

  it('or', async () => {
    const id = await save(a, [['city', 'is', 'London'], ['city', 'is', 'Paris']], { query_type: 'OR' });
    expect(await members(a, id)).toEqual([alice, bob]);
    expect((await api(app, a).get(`/segment/details?segment_id=${id}`)).body.message.segment.query_type).toBe('or');
  });
});

describe('POST /segment/save validation', () => {
  it('reports the required fields', async () => {
    expectVal(await api(app, a).form('/segment/save', {}), {
      segment_name: ['The segment name field is required.'],
      contact_type_id: ['The contact type id field is required.'],
      select_field: ['The select field field is required.'],
      select_operator: ['The select operator field is required.'],
    });
  });

  it('names the index of each bad rule, and changes nothing', async () => {
    const before = (await api(app, a).get('/segment/list')).body.message.segments.length;
    const res = await api(app, a).form(
      '/segment/save',
      ruleFields([
        ['999999', 'is', 'x'],
        ['score', 'contains', '1'],
        ['score', 'is greater than', 'ten'],
        ['joined', 'is after', '2026-02-30'],
        ['score', 'is between', '5'],
        ['first_name', 'is'],
      ]),
    );
    expectVal(res, {
      'select_field.0': ['The selected select field.0 is invalid.'],
      'select_operator.1': ['The select operator.1 must be one of: is, is not, is greater than, is less than, is between (score is a number field).'],
      'value.2': ['The value.2 must be a number.'],
      'value.3': ['The value.3 is not a valid date.'],
      'value.4': ['The value.4 must be two values separated by a comma (low,high).'],
      'value.5': ['The value.5 field is required.'],
    });
    expectVal(await api(app, a).form('/segment/save', { ...ruleFields([['email', 'is', 'x']]), select_operator: ['is', 'is'] }), {
      select_operator: ['The select operator must have 1 item, one per select field.'],
    });
    expectVal(await api(app, a).form('/segment/save', ruleFields([['email', 'is', 'x']], { contact_type_id: typeB })), {
      contact_type_id: ['The selected contact type id is invalid.'],
    });
    expectVal(await api(app, b).form('/segment/save', { ...ruleFields([['plan', 'is', 'x']]), contact_type_id: typeB }), {
      'select_field.0': ['The selected select field.0 is invalid.'],
    });
    expect((await api(app, a).get('/segment/list')).body.message.segments).toHaveLength(before);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/segment/save', ruleFields([['email', 'is', 'x']])));
  });
});

describe('GET /segment/list, /segment/details, POST /segment/update', () => {
  let id: number;
  it('lists segments with the spec’s fields and a count that follows the contacts', async () => {
    id = await save(a, [['email', 'contains', 'example']], { segment_name: 'Everyone at example' });
    const list = (await api(app, a).get('/segment/list')).body.message.segments;
    const rec = expectShape(segmentRecord, list[0]);
    expect(rec).toMatchObject({
      id,
      user_id: a.id,
      contact_type_id: typeA,
      segment_name: 'Everyone at example',
      select_field: [String(field.email)],
      select_operator: ['contains'],
      value: ['example'],
      query_type: null,
      segment_emails_count: 3,
    });
    await addContact(a, typeA, { email: 'dan@example.net', country: gb });
    const details = await api(app, a).get(`/segment/details?segment_id=${id}`);
    expectShape(segmentRecord, details.body.message.segment);
    expect(details.body.message.segment.segment_emails_count).toBe(4);
    const dan = await db('contacts').where({ user_id: a.id, email: 'dan@example.net' }).first('id');
    expectSuccess(await api(app, a).delete(`/contacts/delete?contact_id=${dan.id}`));
    expect((await api(app, a).get(`/segment/details?segment_id=${id}`)).body.message.segment.segment_emails_count).toBe(3);
  });

  it('updates the rules', async () => {
    const res = await api(app, a).form(`/segment/update?segment_id=${id}`, ruleFields([['city', 'is', 'Paris']], { segment_name: 'Parisians' }));
    expectSuccess(res, 'Updated Successfully');
    const seg = (await api(app, a).get(`/segment/details?segment_id=${id}`)).body.message.segment;
    expect(seg).toMatchObject({ segment_name: 'Parisians', select_operator: ['is'], value: ['Paris'], segment_emails_count: 1 });
    expect(await members(a, id)).toEqual([bob]);
  });

  it('answers NF1 for unknown and other accounts’ segments, VAL for bad rules, AUTH without keys', async () => {
    expectNF1(await api(app, a).get('/segment/details?segment_id=999999999'));
    expectNF1(await api(app, b).get(`/segment/details?segment_id=${id}`));
    expectNF1(await api(app, b).form(`/segment/update?segment_id=${id}`, { ...ruleFields([['email', 'is', 'x']]), contact_type_id: typeB }));
    expect((await api(app, a).get(`/segment/details?segment_id=${id}`)).body.message.segment.segment_name).toBe('Parisians');
    expectVal(await api(app, a).form(`/segment/update?segment_id=${id}`, ruleFields([['score', 'is', 'x']])), {
      'value.0': ['The value.0 must be a number.'],
    });
    expectAuthMissing(await api(app).get('/segment/list'));
    expectAuthMissing(await api(app).get(`/segment/details?segment_id=${id}`));
    expect((await api(app, b).get('/segment/list')).body.message.segments).toEqual([]);
  });

  it('lists any number of segments in a constant number of queries, counts right whether cached or not', async () => {
    const c = await makeAccount(db);
    const type = await newType(c, 'Many');
    for (const email of ['one@example.com', 'two@example.com', 'three@other.org']) await addContact(c, type, { email, country: gb });
    const queriesFor = async (path: string) => {
      let n = 0;
      const count = () => (n += 1);
      db.on('query', count);
      try {
        const res = await api(app, c).get(path);
        expectSuccess(res);
        return { n, counts: res.body.message.segments.map((x: { segment_emails_count: number }) => x.segment_emails_count) };
      } finally {
        db.removeListener('query', count);
      }
    };
    const saveOn = (value: string) =>
      api(app, c).form('/segment/save', {
        segment_name: `contains ${value}`,
        contact_type_id: type,
        'select_field[0]': field.email,
        'select_operator[0]': 'contains',
        'value[0]': value,
      });
    for (const v of ['example', 'other']) expectSuccess(await saveOn(v));
    const twoFresh = await queriesFor('/segment/list');
    const twoCached = await queriesFor('/segment/list');
    for (const v of ['one', 'two', 'three', 'org', 'com', 'nobody']) expectSuccess(await saveOn(v));
    const eightFresh = await queriesFor('/segment/list');
    const eightCached = await queriesFor('/segment/list');
    expect(twoFresh.counts).toEqual([1, 2]);
    expect(eightFresh.counts).toEqual([0, 2, 1, 1, 1, 1, 1, 2]);
    expect(eightCached.counts).toEqual(eightFresh.counts);
    expect(eightFresh.n).toBe(twoFresh.n);
    expect(eightCached.n).toBe(twoCached.n);
    expect(eightCached.n).toBeLessThan(eightFresh.n);
  });

  it('pages the list', async () => {
    const res = await api(app, a).get('/segment/list?page=1&per_page=2');
    expect(res.body.message.segments).toHaveLength(2);
    expect(res.body.message.pagination.per_page).toBe(2);
  });
});

describe('segment members: hand-added recipients', () => {
  let id: number;
  beforeAll(async () => {
    id = await save(a, [['city', 'is', 'London']]);
  });

  it('adds recipients by hand; one already a member (any case) is shown once', async () => {
    expectSuccess(
      await api(app, a).form('/segment/email/store', { segment_id: id, first_name: 'Erin', last_name: 'Extra', email: 'erin@example.io' }),
      'Added Successfully',
    );
    expectSuccess(await api(app, a).form('/segment/email/store', { segment_id: id, first_name: 'A', last_name: 'S', email: 'ALICE@example.com' }));
    expectSuccess(await api(app, a).form('/segment/email/store', { segment_id: id, first_name: 'E', last_name: 'E', email: 'Erin@Example.io' }));
    expect(await members(a, id)).toEqual([alice, 'erin@example.io']);
    const res = await api(app, a).get(`/segment/email/list?segment_id=${id}`);
    for (const m of res.body.message.contactEmails) expectShape(segmentRecipientRecord, m);
    const [erin, contact] = res.body.message.contactEmails;
    expect(erin).toMatchObject({ contact_id: null, segment_id: id, fullname: 'Erin Extra', user_id: a.id });
    expect(contact).toMatchObject({ contact_id: contact.id, email: alice, country: 'United Kingdom', city: 'London', fullname: 'Alice Smith' });
    expect((await api(app, a).get(`/segment/details?segment_id=${id}`)).body.message.segment.segment_emails_count).toBe(2);
  });

  it('pages the members: hand-added first, then contacts', async () => {
    const page2 = await api(app, a).get(`/segment/email/list?segment_id=${id}&page=2&per_page=1`);
    expect(page2.body.message.contactEmails.map((m: { email: string }) => m.email)).toEqual([alice]);
    expect(page2.body.message.pagination).toEqual({ page: 2, per_page: 1, total: 2 });
  });

  it('refuses bad input with VAL', async () => {
    expectVal(await api(app, a).form('/segment/email/store', {}), {
      segment_id: ['The segment id field is required.'],
      first_name: ['The first name field is required.'],
      last_name: ['The last name field is required.'],
      email: ['The email field is required.'],
    });
    expectVal(await api(app, a).form('/segment/email/store', { segment_id: id, first_name: 'x', last_name: 'y', email: 'bad' }), {
      email: ['The email must be a valid email address.'],
    });
    expectVal(await api(app, b).form('/segment/email/store', { segment_id: id, first_name: 'x', last_name: 'y', email: 'x@example.com' }), {
      segment_id: ['The selected segment id is invalid.'],
    });
    expectAuthMissing(await api(app).form('/segment/email/store', { segment_id: id }));
  });

  it('lists members NF2 for unknown or other accounts’ segments', async () => {
    expectNF2(await api(app, a).get('/segment/email/list?segment_id=999999999'));
    expectNF2(await api(app, b).get(`/segment/email/list?segment_id=${id}`));
    expectAuthMissing(await api(app).get(`/segment/email/list?segment_id=${id}`));
  });

  it('deletes a hand-added recipient (NF1 for others’ and unknown ids)', async () => {
    const erin = await db('segment_recipients').where({ segment_id: id, email: 'erin@example.io' }).first('id');
    expectNF1(await api(app, b).delete(`/segment/email/delete?segment_recipient_id=${erin.id}`));
    expectNF1(await api(app, a).delete('/segment/email/delete?segment_recipient_id=999999999'));
    expectSuccess(await api(app, a).delete(`/segment/email/delete?segment_recipient_id=${erin.id}`), 'Deleted Successfully');
    expect(await members(a, id)).toEqual([alice]);
    expect((await api(app, a).get(`/segment/details?segment_id=${id}`)).body.message.segment.segment_emails_count).toBe(1);
    expectAuthMissing(await api(app).delete(`/segment/email/delete?segment_recipient_id=${erin.id}`));
  });
});

describe('DELETE /segment/delete', () => {
  it('soft-deletes with the confirmation in `errors` (rule 3)', async () => {
    const id = await save(a, [['email', 'is', alice]]);
    expectNF1(await api(app, b).delete(`/segment/delete?segment_id=${id}`));
    expectSuccessInErrors(await api(app, a).delete(`/segment/delete?segment_id=${id}`), 'Deleted Successfully');
    expectNF1(await api(app, a).delete(`/segment/delete?segment_id=${id}`));
    expectNF2(await api(app, a).get(`/segment/email/list?segment_id=${id}`));
    expect((await db('segments').where({ id }).first()).deleted_at).not.toBeNull();
    expectAuthMissing(await api(app).delete(`/segment/delete?segment_id=${id}`));
  });
});
