import { randomUUID } from 'node:crypto';
import { singleSendRecord } from '../../src/resources/single-sends/single-sends.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF2, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType, makeContacts, makeGroup, makeSegment, makeSender } from '../helpers/fixtures';

/**
 * The seven single-send operations of the spec (no worker here: nothing is delivered, so the
 * shared test database is fine). Delivery itself is in test/delivery/single-send-delivery.test.ts.
 */
// Registered before setupApp's hook that closes the pool, so it runs first. The sends made here
// are ready and due now: soft-delete them so that a later run's worker databases, cloned from
// this one, do not start sending them.
afterAll(async () => {
  await db('single_sends').whereIn('user_id', [a.id, b.id]).update({ deleted_at: db.fn.now() });
});
const { app, db } = setupApp();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HTML = '<html><body><h1>Hello ((first_name))</h1></body></html>';

interface Refs {
  sender: number;
  unverified: number;
  deletedSender: number;
  group: number;
  list: number;
  segment: number;
  deletedList: number;
}

let a: TestAccount;
let b: TestAccount;
const A = {} as Refs;
const B = {} as Refs;

async function refsFor(account: TestAccount, into: Refs): Promise<void> {
  into.sender = await makeSender(db, account);
  into.unverified = await makeSender(db, account, false);
  into.deletedSender = await makeSender(db, account);
  await db('senders').where({ id: into.deletedSender }).update({ deleted_at: db.fn.now() });
  into.group = await makeGroup(db, account, 'Newsletter');
  into.list = await makeContactType(db, account);
  await makeContacts(db, account, into.list, [{ email: `x${account.id}@example.com` }]);
  into.segment = await makeSegment(db, account, into.list);
  into.deletedList = await makeContactType(db, account, 'Gone');
  await db('contact_types').where({ id: into.deletedList }).update({ deleted_at: db.fn.now() });
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  await refsFor(a, A);
  await refsFor(b, B);
});

/** A valid create body for account a. */
function fields(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    template_id: 1,
    template_html: HTML,
    sender_id: A.sender,
    unsubscribe_group_id: A.group,
    single_send_name: 'November news',
    subject: 'News for ((first_name))',
    preheader: 'This month at Acme',
    recipient_id: [`contacts_${A.list}`, `segments_${A.segment}`],
    exclude_specific_recipient_id: [],
    schedule_type: 0,
    ...overrides,
  };
}

async function create(account: TestAccount = a, overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await api(app, account).form('/single/send/create', fields(overrides));
  expectSuccess(res);
  expect(Object.keys(res.body.message)).toEqual(['utr']);
  expect(res.body.message.utr).toMatch(UUID);
  return res.body.message.utr;
}

async function listOf(account: TestAccount) {
  const res = await api(app, account).get('/single-send/list');
  expectSuccess(res);
  expect(Object.keys(res.body.message)).toEqual(['singleSends']);
  return res.body.message.singleSends as Array<Record<string, unknown>>;
}

async function details(utr: string, account: TestAccount = a) {
  const res = await api(app, account).get(`/single-send/details?utr=${utr}`);
  expectSuccess(res);
  expect(Object.keys(res.body.message)).toEqual(['singleSend']);
  expect(Array.isArray(res.body.message.singleSend)).toBe(true);
  expect(res.body.message.singleSend).toHaveLength(1);
  return expectShape(singleSendRecord, res.body.message.singleSend[0]);
}

/** Rows of the account in the database, deleted ones included: proves "nothing changed". */
const rowCount = async (account: TestAccount) => Number((await db('single_sends').where({ user_id: account.id }).count({ n: '*' }))[0].n);

const futureDate = () => new Date(Date.now() + 365 * 86_400_000).toISOString().slice(0, 10);

describe('POST /single/send/create', () => {
  it('creates a ready send (status 1) whose record is exactly the spec’s, unscheduled as zeros', async () => {
    const utr = await create();
    const s = await details(utr);
    expect(s).toEqual({
      id: expect.any(Number),
      user_id: a.id,
      template_id: 1,
      sender_id: A.sender,
      unsubscribe_group_id: A.group,
      recipient_id: [
        { id: String(A.list), table: 'contacts_' },
        { id: String(A.segment), table: 'segments_' },
      ],
      exclude_specific_recipient_id: [],
      single_send_name: 'November news',
      subject: 'News for ((first_name))',
      preheader: 'This month at Acme',
      from_sender: 'news@acme.test',
      reply_to: 'reply@acme.test',
      sender_name: 'Acme News',
      sender_address: expect.stringContaining('1 High Street'),
      schedule_type: 0,
      schedule_date: '0000-00-00',
      schedule_time: '00:00:00',
      status: 1,
      utr,
      template_json: null,
      template_html: HTML,
      triggered: 0,
      delivered: 0,
      unique_opens: 0,
      total_opens: 0,
      bounces: 0,
      unsubscribes: 0,
      unique_open_token: {},
      sent_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const [newest] = await listOf(a);
    expectShape(singleSendRecord, newest);
    expect(newest).toEqual(s);
  });

  it('stores refs as {id, table} (ids as strings, duplicates once) and the exclusions alike', async () => {
    const other = await makeContactType(db, a, 'Other');
    const utr = await create(a, {
      recipient_id: [`contacts_${A.list}`, `contacts_${A.list}`],
      exclude_specific_recipient_id: [`contacts_${other}`, `segments_${A.segment}`],
    });
    const s = await details(utr);
    expect(s.recipient_id).toEqual([{ id: String(A.list), table: 'contacts_' }]);
    expect(s.exclude_specific_recipient_id).toEqual([
      { id: String(other), table: 'contacts_' },
      { id: String(A.segment), table: 'segments_' },
    ]);
  });

  it('keeps a scheduled date and time (HH:MM read as HH:MM:00) and template_json', async () => {
    const date = futureDate();
    const utr = await create(a, {
      schedule_type: 1,
      schedule_date: date,
      schedule_time: '09:30',
      template_html: undefined,
      template_json: '{"rows":[]}',
    });
    const s = await details(utr);
    expect(s).toMatchObject({ schedule_type: 1, schedule_date: date, schedule_time: '09:30:00', status: 1 });
    expect(s).toMatchObject({ template_json: '{"rows":[]}', template_html: null });
  });

  it('accepts a JSON body as well as multipart (docs/decisions.md, “Conventions”)', async () => {
    const res = await api(app, a).json('/single/send/create', { ...fields(), single_send_name: 'From JSON' });
    expectSuccess(res);
    expect((await details(res.body.message.utr)).single_send_name).toBe('From JSON');
  });

  it('answers VAL naming every required field when the body is empty, and creates nothing', async () => {
    const before = await rowCount(a);
    const res = await api(app, a).form('/single/send/create', {});
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      status: 'failed',
      errors: {
        template_id: ['The template id field is required.'],
        sender_id: ['The sender id field is required.'],
        unsubscribe_group_id: ['The unsubscribe group id field is required.'],
        single_send_name: ['The single send name field is required.'],
        subject: ['The subject field is required.'],
        preheader: ['The preheader field is required.'],
        recipient_id: ['The recipient id field is required.'],
        schedule_type: ['The schedule type field is required.'],
      },
    });
    expect(await rowCount(a)).toBe(before);
  });

  it('answers VAL for values that are too long, not integers or not flags', async () => {
    const long = 'x'.repeat(256);
    expectVal(await api(app, a).form('/single/send/create', fields({ single_send_name: long, subject: long, preheader: long })), {
      single_send_name: ['The single send name must not be greater than 255 characters.'],
      subject: ['The subject must not be greater than 255 characters.'],
      preheader: ['The preheader must not be greater than 255 characters.'],
    });
    expectVal(await api(app, a).form('/single/send/create', fields({ sender_id: 'abc', unsubscribe_group_id: 'x1' })), {
      sender_id: ['The sender id must be an integer.'],
      unsubscribe_group_id: ['The unsubscribe group id must be an integer.'],
    });
    expectVal(await api(app, a).form('/single/send/create', fields({ schedule_type: 2 })), {
      schedule_type: ['The selected schedule type is invalid.'],
    });
    // Whitespace-only counts as absent (Laravel's TrimStrings + ConvertEmptyStringsToNull).
    expectVal(await api(app, a).form('/single/send/create', fields({ subject: '   ' })), {
      subject: ['The subject field is required.'],
    });
  });

  it('answers VAL for a sender that is unknown, deleted, another account’s or not verified', async () => {
    const before = await rowCount(a);
    const invalidSender = { sender_id: ['The selected sender id is invalid.'] };
    expectVal(await api(app, a).form('/single/send/create', fields({ sender_id: 999_999_999 })), invalidSender);
    expectVal(await api(app, a).form('/single/send/create', fields({ sender_id: A.deletedSender })), invalidSender);
    expectVal(await api(app, a).form('/single/send/create', fields({ sender_id: B.sender })), invalidSender);
    expectVal(await api(app, a).form('/single/send/create', fields({ sender_id: A.unverified })), {
      sender_id: ['The selected sender id is not verified.'],
    });
    expect(await rowCount(a)).toBe(before);
  });

  it('answers VAL for an unknown or another account’s unsubscribe group and an unknown template', async () => {
    const before = await rowCount(a);
    const invalidGroup = { unsubscribe_group_id: ['The selected unsubscribe group id is invalid.'] };
    expectVal(await api(app, a).form('/single/send/create', fields({ unsubscribe_group_id: 999_999_999 })), invalidGroup);
    expectVal(await api(app, a).form('/single/send/create', fields({ unsubscribe_group_id: B.group })), invalidGroup);
    expectVal(await api(app, a).form('/single/send/create', fields({ template_id: 999_999_999 })), {
      template_id: ['The selected template id is invalid.'],
    });
    expect(await rowCount(a)).toBe(before);
  });

  it('answers VAL on the index of each recipient ref that is malformed, unknown, deleted or another account’s', async () => {
    const before = await rowCount(a);
    const res = await api(app, a).form(
      '/single/send/create',
      fields({
        recipient_id: [
          `contacts_${A.list}`,
          'lists_3',
          `contacts_${B.list}`,
          `segments_${B.segment}`,
          `contacts_${A.deletedList}`,
          'segments_999999999',
        ],
      }),
    );
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      status: 'failed',
      errors: {
        'recipient_id.1': ['The recipient id.1 must be contacts_<id> or segments_<id>.'],
        'recipient_id.2': ['The selected recipient id.2 is invalid.'],
        'recipient_id.3': ['The selected recipient id.3 is invalid.'],
        'recipient_id.4': ['The selected recipient id.4 is invalid.'],
        'recipient_id.5': ['The selected recipient id.5 is invalid.'],
      },
    });
    expectVal(await api(app, a).form('/single/send/create', fields({ recipient_id: [`contacts_${B.list}`] })), {
      'recipient_id.0': ['The selected recipient id.0 is invalid.'],
    });
    expectVal(await api(app, a).form('/single/send/create', fields({ recipient_id: [`segments_${B.segment}`] })), {
      'recipient_id.0': ['The selected recipient id.0 is invalid.'],
    });
    expectVal(
      await api(app, a).form('/single/send/create', fields({ exclude_specific_recipient_id: ['nope', `segments_${B.segment}`] })),
      {
        'exclude_specific_recipient_id.0': ['The exclude specific recipient id.0 must be contacts_<id> or segments_<id>.'],
        'exclude_specific_recipient_id.1': ['The selected exclude specific recipient id.1 is invalid.'],
      },
    );
    expect(await rowCount(a)).toBe(before);
  });

  it('answers VAL (not a database error) for a recipient id beyond the integer range', async () => {
    expectVal(await api(app, a).form('/single/send/create', fields({ recipient_id: ['contacts_9999999999'] })), {
      'recipient_id.0': ['The selected recipient id.0 is invalid.'],
    });
  });

  it('answers VAL for a scheduled send without, with malformed, impossible or past date and time', async () => {
    const before = await rowCount(a);
    expectVal(await api(app, a).form('/single/send/create', fields({ schedule_type: 1 })), {
      schedule_date: ['The schedule date field is required when schedule type is 1.'],
      schedule_time: ['The schedule time field is required when schedule type is 1.'],
    });
    expectVal(await api(app, a).form('/single/send/create', fields({ schedule_type: 1, schedule_date: '01/02/2099', schedule_time: '9am' })), {
      schedule_date: ['The schedule date does not match the format Y-m-d.'],
      schedule_time: ['The schedule time does not match the format H:i:s.'],
    });
    expectVal(await api(app, a).form('/single/send/create', fields({ schedule_type: 1, schedule_date: '2099-02-30', schedule_time: '10:00' })), {
      schedule_date: ['The schedule date is not a valid date.'],
    });
    expectVal(await api(app, a).form('/single/send/create', fields({ schedule_type: 1, schedule_date: '2099-01-01', schedule_time: '25:00' })), {
      schedule_date: ['The schedule date is not a valid date.'],
    });
    expectVal(await api(app, a).form('/single/send/create', fields({ schedule_type: 1, schedule_date: '2020-01-01', schedule_time: '10:00:00' })), {
      schedule_date: ['The schedule date must be a date after now.'],
    });
    expect(await rowCount(a)).toBe(before);
  });

  it('refuses template_json together with template_html', async () => {
    expectVal(await api(app, a).form('/single/send/create', fields({ template_json: '{"rows":[]}' })), {
      template_html: ['The template html field is prohibited when template json is present.'],
    });
  });

  it('reports every failing field together', async () => {
    const res = await api(app, a).form(
      '/single/send/create',
      fields({
        sender_id: A.unverified,
        unsubscribe_group_id: B.group,
        recipient_id: [`contacts_${B.list}`],
        schedule_type: 1,
        schedule_date: '2020-01-01',
        schedule_time: '10:00',
      }),
    );
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({
      sender_id: ['The selected sender id is not verified.'],
      unsubscribe_group_id: ['The selected unsubscribe group id is invalid.'],
      'recipient_id.0': ['The selected recipient id.0 is invalid.'],
      schedule_date: ['The schedule date must be a date after now.'],
    });
  });

  it('creates nothing when every reference is another account’s (sender, group, contact type, segment)', async () => {
    const before = [await rowCount(a), await rowCount(b)];
    const res = await api(app, a).form(
      '/single/send/create',
      fields({
        sender_id: B.sender,
        unsubscribe_group_id: B.group,
        recipient_id: [`contacts_${B.list}`, `segments_${B.segment}`],
        exclude_specific_recipient_id: [`contacts_${B.list}`],
      }),
    );
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({
      sender_id: ['The selected sender id is invalid.'],
      unsubscribe_group_id: ['The selected unsubscribe group id is invalid.'],
      'recipient_id.0': ['The selected recipient id.0 is invalid.'],
      'recipient_id.1': ['The selected recipient id.1 is invalid.'],
      'exclude_specific_recipient_id.0': ['The selected exclude specific recipient id.0 is invalid.'],
    });
    expect([await rowCount(a), await rowCount(b)]).toEqual(before);
  });

  it('makes UUIDv7 utrs (version 7, RFC variant) that sort in creation order, the duplicate’s too', async () => {
    const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const first = await create();
    const second = await create();
    expectSuccess(await api(app, a).get(`/single/send/duplicate?utr=${first}`), 'Duplicated Successfully');
    const copy = (await db('single_sends').where({ user_id: a.id }).orderBy('id', 'desc').first('utr')).utr as string;
    for (const utr of [first, second, copy]) expect(utr).toMatch(V7);
    expect([copy, second, first].sort()).toEqual([first, second, copy]);
  });

  it('still finds a send whose utr is a version-4 UUID, made before UUIDv7', async () => {
    const utr = await create();
    const v4 = randomUUID();
    await db('single_sends').where({ utr }).update({ utr: v4 });
    expect((await details(v4.toUpperCase())).utr).toBe(v4);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/single/send/create', fields()));
  });
});

describe('GET /single-send/list', () => {
  it('lists the account’s sends newest first, never another account’s', async () => {
    const first = await create(a, { single_send_name: 'First' });
    const second = await create(a, { single_send_name: 'Second' });
    const theirs = await create(b, {
      sender_id: B.sender,
      unsubscribe_group_id: B.group,
      recipient_id: [`contacts_${B.list}`],
    });
    const mine = await listOf(a);
    expect(mine.slice(0, 2).map((s) => s.utr)).toEqual([second, first]);
    for (const s of mine) expectShape(singleSendRecord, s);
    expect(mine.map((s) => s.utr)).not.toContain(theirs);
    expect(mine.every((s) => s.user_id === a.id)).toBe(true);
    const others = await listOf(b);
    expect(others.map((s) => s.utr)).toEqual([theirs]);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/single-send/list'));
  });
});

describe('GET /single-send/details', () => {
  it('holds an array of one record; the utr matches case-insensitively', async () => {
    const utr = await create();
    const s = await details(utr);
    expect(s.utr).toBe(utr);
    expect((await details(utr.toUpperCase())).id).toBe(s.id);
  });

  it('answers NF2 for an unknown, malformed, missing or another account’s utr', async () => {
    const utr = await create();
    expectNF2(await api(app, a).get(`/single-send/details?utr=${randomUUID()}`));
    expectNF2(await api(app, a).get('/single-send/details?utr=not-a-utr'));
    expectNF2(await api(app, a).get('/single-send/details?utr=1'));
    expectNF2(await api(app, a).get('/single-send/details'));
    expectNF2(await api(app, b).get(`/single-send/details?utr=${utr}`));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get(`/single-send/details?utr=${randomUUID()}`));
  });
});

describe('GET or POST /single/send/duplicate (rule 9)', () => {
  it('copies a send as a draft “<name> (copy)” with a new utr and zeroed statistics, by GET and by POST', async () => {
    const date = futureDate();
    const other = await makeContactType(db, a, 'Excl');
    const utr = await create(a, {
      single_send_name: 'Launch',
      schedule_type: 1,
      schedule_date: date,
      schedule_time: '08:15:00',
      exclude_specific_recipient_id: [`contacts_${other}`],
    });
    await db('single_sends').where({ utr }).update({ triggered: 5, delivered: 4, bounces: 1, total_opens: 3, unique_opens: 2, unsubscribes: 1 });
    const original = await details(utr);

    expectSuccess(await api(app, a).get(`/single/send/duplicate?utr=${utr}`), 'Duplicated Successfully');
    const [copy] = await listOf(a);
    expectShape(singleSendRecord, copy);
    const copied = [
      'user_id',
      'template_id',
      'sender_id',
      'unsubscribe_group_id',
      'recipient_id',
      'exclude_specific_recipient_id',
      'subject',
      'preheader',
      'from_sender',
      'reply_to',
      'sender_name',
      'sender_address',
      'schedule_type',
      'schedule_date',
      'schedule_time',
      'template_json',
      'template_html',
    ] as const;
    for (const k of copied) expect([k, copy[k]]).toEqual([k, original[k]]);
    expect(copy).toMatchObject({
      single_send_name: 'Launch (copy)',
      status: 0,
      triggered: 0,
      delivered: 0,
      bounces: 0,
      total_opens: 0,
      unique_opens: 0,
      unsubscribes: 0,
      unique_open_token: {},
      sent_at: null,
    });
    expect(copy.utr).toMatch(UUID);
    expect(copy.utr).not.toBe(utr);
    expect(copy.id).not.toBe(original.id);
    // The original is untouched.
    expect(await details(utr)).toEqual(original);

    const viaPost = await api(app, a).form(`/single/send/duplicate?utr=${utr}`, {});
    expectSuccess(viaPost, 'Duplicated Successfully');
    const [second] = await listOf(a);
    expect(second).toMatchObject({ single_send_name: 'Launch (copy)', status: 0 });
    expect(second.utr).not.toBe(copy.utr);
    // A POST may carry the utr in its body too (docs/decisions.md, "Conventions").
    expectSuccess(await api(app, a).form('/single/send/duplicate', { utr }), 'Duplicated Successfully');
  });

  it('copies a copy with its name extended, and an update makes the draft ready', async () => {
    const utr = await create(a, { single_send_name: 'Chain' });
    expectSuccess(await api(app, a).get(`/single/send/duplicate?utr=${utr}`), 'Duplicated Successfully');
    const [copy] = await listOf(a);
    expectSuccess(await api(app, a).get(`/single/send/duplicate?utr=${copy.utr}`), 'Duplicated Successfully');
    const [copyOfCopy] = await listOf(a);
    expect(copyOfCopy.single_send_name).toBe('Chain (copy) (copy)');
    const res = await api(app, a).form('/single/send/update', { ...fields({ single_send_name: 'Chain, take 2' }), utr: copy.utr });
    expectSuccess(res, { utr: copy.utr });
    expect(await details(copy.utr as string)).toMatchObject({ status: 1, single_send_name: 'Chain, take 2' });
  });

  it('answers NF2 for an unknown, malformed, missing, deleted or another account’s utr, copying nothing', async () => {
    const utr = await create();
    const deleted = await create();
    expectSuccess(await api(app, a).delete(`/single/send/delete?utr=${deleted}`), 'Deleted Successfully');
    const before = [await rowCount(a), await rowCount(b)];
    for (const method of ['get', 'post'] as const) {
      const call = (url: string) => (method === 'get' ? api(app, a).get(url) : api(app, a).form(url, {}));
      expectNF2(await call(`/single/send/duplicate?utr=${randomUUID()}`));
      expectNF2(await call('/single/send/duplicate?utr=garbage'));
      expectNF2(await call('/single/send/duplicate'));
      expectNF2(await call(`/single/send/duplicate?utr=${deleted}`));
    }
    expectNF2(await api(app, b).get(`/single/send/duplicate?utr=${utr}`));
    expectNF2(await api(app, b).form(`/single/send/duplicate?utr=${utr}`, {}));
    expect([await rowCount(a), await rowCount(b)]).toEqual(before);
  });

  it('answers AUTH without keys, by GET and by POST', async () => {
    const utr = await create();
    expectAuthMissing(await api(app).get(`/single/send/duplicate?utr=${utr}`));
    expectAuthMissing(await api(app).form(`/single/send/duplicate?utr=${utr}`, {}));
  });
});

describe('POST /single/send/update', () => {
  it('replaces the fields, answers the utr and leaves the send ready', async () => {
    const utr = await create(a, { single_send_name: 'Before' });
    const before = await details(utr);
    const date = futureDate();
    const otherGroup = await makeGroup(db, a, 'Offers');
    const res = await api(app, a).form('/single/send/update', {
      ...fields({
        single_send_name: 'After',
        subject: 'New subject',
        preheader: 'New preheader',
        unsubscribe_group_id: otherGroup,
        recipient_id: [`segments_${A.segment}`],
        exclude_specific_recipient_id: [`contacts_${A.list}`],
        schedule_type: 1,
        schedule_date: date,
        schedule_time: '23:59:59',
        template_html: undefined,
        template_json: '{"a":1}',
      }),
      utr,
    });
    expectSuccess(res, { utr });
    const after = await details(utr);
    expect(after).toMatchObject({
      id: before.id,
      utr,
      single_send_name: 'After',
      subject: 'New subject',
      preheader: 'New preheader',
      unsubscribe_group_id: otherGroup,
      recipient_id: [{ id: String(A.segment), table: 'segments_' }],
      exclude_specific_recipient_id: [{ id: String(A.list), table: 'contacts_' }],
      schedule_type: 1,
      schedule_date: date,
      schedule_time: '23:59:59',
      template_json: '{"a":1}',
      template_html: null,
      status: 1,
      created_at: before.created_at,
    });
    // Back to "immediately": the schedule reads as zeros again.
    expectSuccess(await api(app, a).form('/single/send/update', { ...fields(), utr }), { utr });
    expect(await details(utr)).toMatchObject({ schedule_type: 0, schedule_date: '0000-00-00', schedule_time: '00:00:00' });
  });

  it('answers VAL for each field the spec lists, changing nothing', async () => {
    const utr = await create(a, { single_send_name: 'Stays' });
    const before = await details(utr);
    const update = (overrides: Record<string, unknown>) => api(app, a).form('/single/send/update', { ...fields(overrides), utr });
    expectVal(await update({ single_send_name: undefined, subject: undefined, preheader: undefined, schedule_type: undefined }), {
      single_send_name: ['The single send name field is required.'],
      subject: ['The subject field is required.'],
      preheader: ['The preheader field is required.'],
      schedule_type: ['The schedule type field is required.'],
    });
    expectVal(await update({ sender_id: A.unverified }), { sender_id: ['The selected sender id is not verified.'] });
    expectVal(await update({ sender_id: B.sender }), { sender_id: ['The selected sender id is invalid.'] });
    expectVal(await update({ unsubscribe_group_id: B.group }), {
      unsubscribe_group_id: ['The selected unsubscribe group id is invalid.'],
    });
    expectVal(await update({ recipient_id: undefined }), { recipient_id: ['The recipient id field is required.'] });
    expectVal(await update({ recipient_id: [`contacts_${A.list}`, `segments_${B.segment}`] }), {
      'recipient_id.1': ['The selected recipient id.1 is invalid.'],
    });
    expectVal(await update({ schedule_type: 1, schedule_date: '2001-01-01', schedule_time: '00:00' }), {
      schedule_date: ['The schedule date must be a date after now.'],
    });
    expectVal(await update({ template_json: '{}' }), {
      template_html: ['The template html field is prohibited when template json is present.'],
    });
    expect(await details(utr)).toEqual(before);
  });

  it('answers VAL when utr is missing, NF2 when it names nothing of this account', async () => {
    const utr = await create(a, { single_send_name: 'Mine' });
    expectVal(await api(app, a).form('/single/send/update', fields()), { utr: ['The utr field is required.'] });
    expectNF2(await api(app, a).form('/single/send/update', { ...fields(), utr: randomUUID() }));
    expectNF2(await api(app, a).form('/single/send/update', { ...fields(), utr: 'bad' }));
    const theirs = fields({ sender_id: B.sender, unsubscribe_group_id: B.group, recipient_id: [`contacts_${B.list}`] });
    expectNF2(await api(app, b).form('/single/send/update', { ...theirs, single_send_name: 'Hijacked', utr }));
    expect((await details(utr)).single_send_name).toBe('Mine');
  });

  it('is refused once the send has completed', async () => {
    const utr = await create();
    await db('single_sends').where({ utr }).update({ status: 3 });
    const res = await api(app, a).form('/single/send/update', { ...fields(), utr });
    expect({ status: res.status, body: res.body }).toEqual({
      status: 422,
      body: { status: 'failed', errors: 'Single send can not be updated once sending has started' },
    });
    expect((await details(utr)).status).toBe(3);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/single/send/update', { ...fields(), utr: randomUUID() }));
  });
});

describe('DELETE /single/send/delete', () => {
  it('hides the send from the list and its details, keeping the row (soft delete)', async () => {
    const utr = await create();
    const keep = await create();
    expectSuccess(await api(app, a).delete(`/single/send/delete?utr=${utr}`), 'Deleted Successfully');
    const list = (await listOf(a)).map((s) => s.utr);
    expect(list).not.toContain(utr);
    expect(list).toContain(keep);
    expectNF2(await api(app, a).get(`/single-send/details?utr=${utr}`));
    expectNF2(await api(app, a).delete(`/single/send/delete?utr=${utr}`));
    expectNF2(await api(app, a).form('/single/send/update', { ...fields(), utr }));
    const row = await db('single_sends').where({ utr }).first('deleted_at');
    expect(row.deleted_at).not.toBeNull();
  });

  it('answers NF2 for an unknown, malformed, missing or another account’s utr, deleting nothing', async () => {
    const utr = await create();
    expectNF2(await api(app, a).delete(`/single/send/delete?utr=${randomUUID()}`));
    expectNF2(await api(app, a).delete('/single/send/delete?utr=%27%20OR%201=1'));
    expectNF2(await api(app, a).delete('/single/send/delete'));
    expectNF2(await api(app, b).delete(`/single/send/delete?utr=${utr}`));
    expect((await details(utr)).utr).toBe(utr);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).delete(`/single/send/delete?utr=${randomUUID()}`));
  });
});

describe('POST /single/send/bulk-delete', () => {
  it('deletes by utrs and ids alike (urlencoded, as the spec sends it)', async () => {
    const [x, y, z] = [await create(), await create(), await create()];
    const yId = (await details(y)).id;
    const res = await api(app, a).urlencoded('/single/send/bulk-delete', `strIds[0]=${x}&strIds[1]=${yId}`);
    expectSuccess(res, 'Deleted Successfully');
    const list = (await listOf(a)).map((s) => s.utr);
    expect(list).not.toContain(x);
    expect(list).not.toContain(y);
    expect(list).toContain(z);
    expectNF2(await api(app, a).get(`/single-send/details?utr=${x}`));
    expectNF2(await api(app, a).get(`/single-send/details?utr=${y}`));
    // The same send named twice (by utr and by id) is still one delete.
    const zId = (await details(z)).id;
    expectSuccess(await api(app, a).form('/single/send/bulk-delete', { strIds: [z, String(zId), z.toUpperCase()] }), 'Deleted Successfully');
    expectNF2(await api(app, a).get(`/single-send/details?utr=${z}`));
  });

  it('is all or nothing: one unknown, malformed, deleted or another account’s entry deletes nothing', async () => {
    const [x, y] = [await create(), await create()];
    const xId = (await details(x)).id;
    const gone = await create();
    expectSuccess(await api(app, a).delete(`/single/send/delete?utr=${gone}`));
    const theirs = await create(b, { sender_id: B.sender, unsubscribe_group_id: B.group, recipient_id: [`contacts_${B.list}`] });
    const theirId = (await details(theirs, b)).id;
    const attempts = [
      [x, randomUUID()],
      [x, 'not-a-utr'],
      [x, gone],
      [x, theirs],
      [String(xId), String(theirId)],
      [y, '999999999'],
      [y, '0'],
      [y, '-1'],
    ];
    for (const strIds of attempts) {
      expectNF2(await api(app, a).form('/single/send/bulk-delete', { strIds }));
    }
    expectNF2(await api(app, b).form('/single/send/bulk-delete', { strIds: [theirs, x] }));
    expect((await details(x)).utr).toBe(x);
    expect((await details(y)).utr).toBe(y);
    expect((await details(theirs, b)).utr).toBe(theirs);
  });

  it('answers NF2 (not a database error) for an id beyond the integer range, deleting nothing', async () => {
    const x = await create();
    expectNF2(await api(app, a).form('/single/send/bulk-delete', { strIds: [x, '9999999999'] }));
    expect((await details(x)).utr).toBe(x);
  });

  it('answers VAL without strIds and AUTH without keys', async () => {
    expectVal(await api(app, a).form('/single/send/bulk-delete', {}), { strIds: ['The str ids field is required.'] });
    expectAuthMissing(await api(app).urlencoded('/single/send/bulk-delete', `strIds[0]=${randomUUID()}`));
  });
});
