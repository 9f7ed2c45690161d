import request from 'supertest';
import * as winnerCheck from '../../migrations/202612270100_ab-winner-check';
import { decideByHand, lockTest } from '../../src/ab/decision';
import { singleSendRecord, singleSendResponse } from '../../src/resources/single-sends/single-sends.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF2, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType, makeContacts, makeGroup, makeSegment, makeSender } from '../helpers/fixtures';
import { signIn } from '../dashboard/lib/session';

/**
 * The A/B fields of single-send create and update, what details, the list and duplicate make of
 * them, and POST /single/send/ab/winner's refusals (no worker here: the decisions themselves are
 * test/delivery/ab-tests.test.ts's).
 */
// Registered before setupApp's hook that closes the pool: the sends made here are ready and due
// now, and a later run's worker databases are cloned from this one.
afterAll(async () => {
  await db('single_sends').whereIn('user_id', [a.id, b.id]).update({ deleted_at: db.fn.now() });
});
const { app, db } = setupApp();

let a: TestAccount;
let b: TestAccount;
const A = { sender: 0, other: 0, unverified: 0, group: 0, list: 0 };
let bSender = 0;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  A.sender = await makeSender(db, a);
  A.other = await makeSender(db, a);
  await db('senders').where({ id: A.other }).update({ from_email: 'team@other.test', from_name: 'Team' });
  A.unverified = await makeSender(db, a, false);
  A.group = await makeGroup(db, a);
  A.list = await makeContactType(db, a);
  // Six: enough for a test of every variation A to F (one each in its test group).
  await makeContacts(db, a, A.list, ['one', 'two', 'three', 'four', 'five', 'six'].map((n) => ({ email: `${n}@example.com` })));
  bSender = await makeSender(db, b);
});

function fields(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    template_id: 1,
    template_html: '<html><body>A</body></html>',
    sender_id: A.sender,
    unsubscribe_group_id: A.group,
    single_send_name: 'Test',
    subject: 'Subject A',
    preheader: 'Pre',
    recipient_id: [`contacts_${A.list}`],
    schedule_type: 1,
    // Scheduled a year ahead: nothing starts it while the test looks at it.
    schedule_date: `${new Date().getUTCFullYear() + 1}-01-15`,
    schedule_time: '10:00:00',
    ...extra,
  };
}

const create = (extra: Record<string, unknown>, account = a) => api(app, account).form('/single/send/create', fields(extra));

async function created(extra: Record<string, unknown>): Promise<string> {
  const res = await create(extra);
  expectSuccess(res);
  return res.body.message.utr;
}

const details = async (utr: string) => {
  const res = await api(app, a).get(`/single-send/details?utr=${utr}`);
  expectSuccess(res);
  return res.body.message.singleSend[0];
};

describe('create with an A/B test', () => {
  it('takes a subject test with its settings, and shows them in details and the list (A/B sends only)', async () => {
    const utr = await created({
      ab_test_type: 'subject',
      'ab_variations[0][subject]': 'Subject B',
      'ab_variations[1][subject]': 'Subject C',
      ab_test_percentage: 30,
      ab_duration_minutes: 90,
      ab_winner_criteria: 'open',
      ab_confidence: '0.9',
      ab_if_inconclusive: 'wait',
    });
    const record = await details(utr);
    expectShape(singleSendResponse, record);
    expect(record).toMatchObject({
      subject: 'Subject A',
      ab_test_type: 'subject',
      ab_variations: [{ subject: 'Subject B' }, { subject: 'Subject C' }],
      ab_test_percentage: 30,
      ab_duration_minutes: 90,
      ab_winner_criteria: 'open',
      ab_confidence: 0.9,
      ab_if_inconclusive: 'wait',
    });
    const plain = await created({});
    const listed = (await api(app, a).get('/single-send/list')).body.message.singleSends as Array<Record<string, unknown>>;
    expect(listed.find((s) => s.utr === utr)).toMatchObject({ ab_test_type: 'subject', ab_test_percentage: 30 });
    // An ordinary send keeps the spec's record exactly: no ab_* field at all.
    expectShape(singleSendRecord, listed.find((s) => s.utr === plain));
    expectShape(singleSendRecord, await details(plain));
  });

  it('applies the defaults: 20 %, 240 minutes, clicks, 0.95, send the leader', async () => {
    const utr = await created({ ab_test_type: 'design', 'ab_variations[0][template_id]': 3 });
    expect(await details(utr)).toMatchObject({
      ab_test_type: 'design',
      ab_variations: [{ template_id: 3, template_html: null, template_json: null }],
      ab_test_percentage: 20,
      ab_duration_minutes: 240,
      ab_winner_criteria: 'click',
      ab_confidence: 0.95,
      ab_if_inconclusive: 'send_leader',
    });
  });

  it('takes the variations as JSON too, and a verified sender of the account as a sender variation', async () => {
    const res = await api(app, a).json('/single/send/create', {
      ...fields(),
      ab_test_type: 'sender',
      ab_variations: [{ sender_id: A.other }],
      ab_test_percentage: 100,
    });
    expectSuccess(res);
    const row = await db('single_send_variations as v')
      .join('single_sends as s', (j) => j.on('s.id', 'v.single_send_id').andOn('s.user_id', 'v.user_id'))
      .where({ 's.utr': res.body.message.utr, 's.user_id': a.id, 'v.user_id': a.id })
      .orderBy('v.idx')
      .select('v.idx', 'v.sender_id', 'v.from_sender', 'v.sender_name');
    expect(row).toEqual([
      { idx: 0, sender_id: null, from_sender: null, sender_name: null },
      { idx: 1, sender_id: A.other, from_sender: 'team@other.test', sender_name: 'Team' },
    ]);
  });

  describe('refuses (VAL, nothing saved)', () => {
    const cases: Array<[string, Record<string, unknown>, Record<string, string[]>]> = [
      ['a type without variations', { ab_test_type: 'subject' }, { ab_variations: ['The ab variations field is required when ab test type is present.'] }],
      ['variations without a type', { 'ab_variations[0][subject]': 'B' }, { ab_test_type: ['The ab test type field is required when ab variations is present.'] }],
      ['a setting without a type', { ab_test_percentage: 50 }, { ab_test_type: ['The ab test type field is required when ab test percentage is present.'] }],
      ['an unknown type', { ab_test_type: 'colour', 'ab_variations[0][subject]': 'B' }, { ab_test_type: ['The selected ab test type is invalid.'] }],
      ['a variation missing its field', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', 'ab_variations[1][template_id]': 2 }, {
        'ab_variations.1.subject': ['The ab variations.1.subject field is required.'],
        'ab_variations.1.template_id': ['The ab variations.1.template id field is prohibited when ab test type is subject.'],
      }],
      ['a design variation missing its template', { ab_test_type: 'design', 'ab_variations[0][template_html]': '<p>B</p>' }, {
        'ab_variations.0.template_id': ['The ab variations.0.template id field is required.'],
      }],
      ['a design variation with both HTML and JSON', { ab_test_type: 'design', 'ab_variations[0][template_id]': 1, 'ab_variations[0][template_html]': '<p>B</p>', 'ab_variations[0][template_json]': '{}' }, {
        'ab_variations.0.template_html': ['The ab variations.0.template html field is prohibited when ab variations.0.template json is present.'],
      }],
      ['an unknown template', { ab_test_type: 'design', 'ab_variations[0][template_id]': 99999 }, { 'ab_variations.0.template_id': ['The selected ab variations.0.template id is invalid.'] }],
      ['six variations (B to G)', { ab_test_type: 'subject', ...Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`ab_variations[${i}][subject]`, `S${i}`])) }, {
        ab_variations: ['The ab variations must not have more than 5 items.'],
      }],
      ['an unknown sender', { ab_test_type: 'sender', 'ab_variations[0][sender_id]': 99999 }, { 'ab_variations.0.sender_id': ['The selected ab variations.0.sender id is invalid.'] }],
      ['another account’s sender', { ab_test_type: 'sender', 'ab_variations[0][sender_id]': -1 }, { 'ab_variations.0.sender_id': ['The ab variations.0.sender id must be at least 1.'] }],
      ['an unverified sender', { ab_test_type: 'sender', 'ab_variations[0][sender_id]': -2 }, { 'ab_variations.0.sender_id': ['The selected ab variations.0.sender id is not verified.'] }],
      ['a test percentage of 0', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', ab_test_percentage: 0 }, { ab_test_percentage: ['The ab test percentage must be at least 1.'] }],
      ['a test percentage of 101', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', ab_test_percentage: 101 }, { ab_test_percentage: ['The ab test percentage must not be greater than 100.'] }],
      ['a duration of 0', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', ab_duration_minutes: 0 }, { ab_duration_minutes: ['The ab duration minutes must be at least 1.'] }],
      ['a duration over a week', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', ab_duration_minutes: 10081 }, { ab_duration_minutes: ['The ab duration minutes must not be greater than 10080.'] }],
      ['a confidence of 0.4', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', ab_confidence: 0.4 }, { ab_confidence: ['The ab confidence must be at least 0.5.'] }],
      ['a confidence of 1', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', ab_confidence: 1 }, { ab_confidence: ['The ab confidence must not be greater than 0.999.'] }],
      ['a confidence that is no number', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', ab_confidence: 'high' }, { ab_confidence: ['The ab confidence must be a number.'] }],
      ['an unknown criterion', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', ab_winner_criteria: 'revenue' }, { ab_winner_criteria: ['The selected ab winner criteria is invalid.'] }],
      ['an unknown inconclusive rule', { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', ab_if_inconclusive: 'toss' }, { ab_if_inconclusive: ['The selected ab if inconclusive is invalid.'] }],
    ];

    it.each(cases)('%s', async (_name, extra, errors) => {
      const withSenders = Object.fromEntries(
        Object.entries(extra).map(([k, v]) => [k, v === -1 ? bSender : v === -2 ? A.unverified : v]),
      );
      // Another account's sender is simply unknown here: its id, not the -1 placeholder.
      if (withSenders['ab_variations[0][sender_id]'] === bSender) errors = { 'ab_variations.0.sender_id': ['The selected ab variations.0.sender id is invalid.'] };
      const before = await db('single_sends').where({ user_id: a.id }).count<{ n: number }[]>({ n: '*' });
      expectVal(await create(withSenders), errors);
      const after = await db('single_sends').where({ user_id: a.id }).count<{ n: number }[]>({ n: '*' });
      expect(after[0].n).toBe(before[0].n);
    });

    it('an audience smaller than the variations: one recipient each is needed in the test group', async () => {
      const pair = await makeContactType(db, a, 'Two readers');
      await makeContacts(db, a, pair, [{ email: 'r1@pair.test' }, { email: 'r2@pair.test' }]);
      const three = { ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', 'ab_variations[1][subject]': 'C', recipient_id: [`contacts_${pair}`] };
      const before = await db('single_sends').where({ user_id: a.id }).count<{ n: number }[]>({ n: '*' });
      expectVal(await create(three), { recipient_id: ['The recipient id must have at least 3 recipients for an A/B test of 3 variations.'] });
      // At 100 %, too, and by update.
      expectVal(await create({ ...three, ab_test_percentage: 100 }), { recipient_id: ['The recipient id must have at least 3 recipients for an A/B test of 3 variations.'] });
      const utr = await created({ recipient_id: [`contacts_${pair}`] });
      expectVal(await api(app, a).form('/single/send/update', { ...fields(three), utr }), {
        recipient_id: ['The recipient id must have at least 3 recipients for an A/B test of 3 variations.'],
      });
      expect(await db('single_sends').where({ user_id: a.id }).count<{ n: number }[]>({ n: '*' })).toEqual([{ n: Number(before[0].n) + 1 }]);
      expect(await db('ab_tests as t').join('single_sends as s', (j) => j.on('s.id', 't.single_send_id').andOn('s.user_id', 't.user_id')).where('s.utr', utr).first()).toBeUndefined();
      // Two variations fit two readers; with a segment of theirs holding one hand-added recipient, so do three.
      expectSuccess(await create({ ...three, 'ab_variations[1][subject]': undefined }));
      const segment = await makeSegment(db, a, pair);
      expectSuccess(await api(app, a).form('/segment/email/store', { segment_id: segment, first_name: 'R', last_name: 'Three', email: 'r3@pair.test' }), 'Added Successfully');
      expectSuccess(await create({ ...three, recipient_id: [`segments_${segment}`] }));
    });

    it('reports A/B errors together with the send’s own', async () => {
      const res = await create({ subject: undefined, ab_test_type: 'subject' });
      expectVal(res, { subject: ['The subject field is required.'] });
    });

    it('refuses an empty list of variations sent as JSON', async () => {
      expectVal(await api(app, a).json('/single/send/create', { ...fields(), ab_test_type: 'subject', ab_variations: [] }), {
        ab_variations: ['The ab variations field is required when ab test type is present.'],
      });
    });
  });
});

describe('update, duplicate and delete', () => {
  it('replaces the test on update, and an update without A/B fields makes an ordinary send again', async () => {
    const utr = await created({ ab_test_type: 'subject', 'ab_variations[0][subject]': 'B' });
    expectSuccess(await api(app, a).form('/single/send/update', { ...fields(), utr, ab_test_type: 'design', 'ab_variations[0][template_id]': 2, 'ab_variations[1][template_id]': 3 }));
    expect(await details(utr)).toMatchObject({ ab_test_type: 'design', ab_variations: [{ template_id: 2 }, { template_id: 3 }], ab_test_percentage: 20 });
    expectSuccess(await api(app, a).form('/single/send/update', { ...fields(), utr }));
    const record = await details(utr);
    expectShape(singleSendRecord, record);
    const id = (await db('single_sends').where({ utr }).first('id')).id;
    expect(await db('ab_tests').where({ single_send_id: id }).first()).toBeUndefined();
    expect(await db('single_send_variations').where({ single_send_id: id }).first()).toBeUndefined();
  });

  it('refuses an update once the send has started, A/B fields or not', async () => {
    const utr = await created({ ab_test_type: 'subject', 'ab_variations[0][subject]': 'B' });
    await db('single_sends').where({ utr }).update({ status: 2 });
    const res = await api(app, a).form('/single/send/update', { ...fields(), utr, ab_test_type: 'subject', 'ab_variations[0][subject]': 'C' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ status: 'failed', errors: 'Single send can not be updated once sending has started' });
    expect((await details(utr)).ab_variations).toEqual([{ subject: 'B' }]);
  });

  it('duplicates the A/B settings and variations with the send, none of its results', async () => {
    const utr = await created({ ab_test_type: 'sender', 'ab_variations[0][sender_id]': A.other, ab_test_percentage: 40 });
    const id = (await db('single_sends').where({ utr }).first('id')).id;
    await db('ab_tests').where({ single_send_id: id }).update({ status: 'testing', test_size: 3 });
    expectSuccess(await api(app, a).get(`/single/send/duplicate?utr=${utr}`), 'Duplicated Successfully');
    const copy = await db('single_sends').where({ user_id: a.id }).orderBy('id', 'desc').first('utr', 'id');
    expect(await details(copy.utr)).toMatchObject({ ab_test_type: 'sender', ab_variations: [{ sender_id: A.other }], ab_test_percentage: 40 });
    expect(await db('ab_tests').where({ single_send_id: copy.id }).first('status', 'test_size')).toEqual({ status: 'pending', test_size: null });
  });
});

describe('POST /single/send/ab/winner', () => {
  const pick = (utr: string | undefined, variation: unknown, account: TestAccount | null = a) =>
    api(app, account ?? undefined).form('/single/send/ab/winner', { ...(utr ? { utr } : {}), ...(variation === undefined ? {} : { variation }) });

  it('needs the keys, a utr of the account’s and a variation index', async () => {
    const utr = await created({ ab_test_type: 'subject', 'ab_variations[0][subject]': 'B' });
    expectAuthMissing(await pick(utr, 1, null));
    expectVal(await pick(undefined, 1), { utr: ['The utr field is required.'] });
    expectNF2(await pick('00000000-0000-7000-8000-000000000000', 1));
    // Another account's send is not found.
    expectNF2(await pick(utr, 1, b));
    expectVal(await pick(utr, undefined), { variation: ['The variation field is required.'] });
    expectVal(await pick(utr, 'b'), { variation: ['The variation must be an integer.'] });
    expectVal(await pick(utr, 6), { variation: ['The variation must not be greater than 5.'] });
  });

  it('refuses an index out of range, an ordinary send, a test not started or already decided', async () => {
    const utr = await created({ ab_test_type: 'subject', 'ab_variations[0][subject]': 'B' });
    const id = (await db('single_sends').where({ utr }).first('id')).id;
    expectVal(await pick(utr, 2), { variation: ['The selected variation is invalid.'] });
    expectVal(await pick(utr, 1), { utr: ['The A/B test has not started yet.'] });
    expectVal(await pick(await created({}), 0), { utr: ['The single send is not an A/B test.'] });
    await db('ab_tests').where({ single_send_id: id }).update({ status: 'decided', winner: 0, decided_by: 'manual', decided_at: db.fn.now() });
    expectVal(await pick(utr, 1), { utr: ['The A/B test is already decided.'] });
    expect(await db('ab_tests').where({ single_send_id: id }).first('winner')).toEqual({ winner: 0 });
  });

  /** An A/B send of three variations whose test waits for a person. */
  async function waiting(): Promise<{ utr: string; id: number }> {
    const utr = await created({ ab_test_type: 'subject', 'ab_variations[0][subject]': 'B', 'ab_variations[1][subject]': 'C' });
    const { id } = await db('single_sends').where({ utr }).first('id');
    await db('ab_tests').where({ single_send_id: id, user_id: a.id }).update({ status: 'waiting', test_size: 3, audience_size: 10, test_done_at: db.fn.now() });
    return { utr, id };
  }

  const decision = (id: number) => db('ab_tests').where({ single_send_id: id, user_id: a.id }).first('status', 'winner', 'decided_by', 'releasing');
  const decidedEvents = (id: number) => db('events').where({ single_send_id: id, user_id: a.id, type: 'single_send.ab_decided' }).select('data');

  it('refuses -1, an empty value and a non-number, changes nothing, and a valid pick then decides', async () => {
    const { utr, id } = await waiting();
    expectVal(await pick(utr, -1), { variation: ['The variation must be at least 0.'] });
    expectVal(await pick(utr, ''), { variation: ['The variation field is required.'] });
    expectVal(await pick(utr, 'abc'), { variation: ['The variation must be an integer.'] });
    expectVal(await pick(utr, 3), { variation: ['The selected variation is invalid.'] });
    expect(await decision(id)).toEqual({ status: 'waiting', winner: null, decided_by: null, releasing: false });
    expect(await decidedEvents(id)).toEqual([]);
    expectSuccess(await pick(utr, 2), 'Winner Selected Successfully');
    expect(await decision(id)).toEqual({ status: 'decided', winner: 2, decided_by: 'manual', releasing: true });
    expect((await decidedEvents(id)).map((e: { data: { winner: number } }) => e.data.winner)).toEqual([2]);
  });

  it('the dashboard’s pick goes through the same check: -1, an empty value and a non-number are refused with the reason, nothing changes, and a valid pick then decides', async () => {
    const { utr, id } = await waiting();
    const session = await signIn(app, a);
    const pickOnPage = (variation: string) =>
      request(app).post(`/app/sends/${utr}/ab/winner`).set('Cookie', session.cookie).type('form').send({ _csrf: session.csrf, variation });
    for (const [variation, reason] of [
      ['-1', 'The variation must be at least 0.'],
      ['', 'The variation field is required.'],
      ['abc', 'The variation must be an integer.'],
      ['3', 'The selected variation is invalid.'],
    ]) {
      const res = await pickOnPage(variation);
      expect({ variation, status: res.status, reason: res.text.includes(`<li>${reason}</li>`) }).toEqual({ variation, status: 422, reason: true });
    }
    expect(await decision(id)).toEqual({ status: 'waiting', winner: null, decided_by: null, releasing: false });
    expect(await decidedEvents(id)).toEqual([]);
    const res = await pickOnPage('1');
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`/app/sends/${utr}#ab`);
    expect(await decision(id)).toEqual({ status: 'decided', winner: 1, decided_by: 'manual', releasing: true });
  });

  it('a release that matches no test open to a decision fails and rolls back: no decision, no event', async () => {
    const { id } = await waiting();
    // The test as a caller read it before another decided it: it looks open, the row is not.
    const stale = await db.transaction((trx) => lockTest(trx, a.id, id));
    await db('ab_tests').where({ single_send_id: id, user_id: a.id }).update({ status: 'decided', winner: 0, decided_by: 'original', decided_at: db.fn.now() });
    await expect(db.transaction((trx) => decideByHand(trx, stale!, 1))).rejects.toThrow(/matched no open test/);
    expect(await decision(id)).toEqual({ status: 'decided', winner: 0, decided_by: 'original', releasing: false });
    expect(await decidedEvents(id)).toEqual([]);
  });

  it('the migration that adds the CHECK first reopens a test a pick of -1 left decided, as waiting for a person', async () => {
    const { id } = await waiting();
    // In a transaction rolled back at the end: the constraint is never missing for anyone else.
    const run = db.transaction(async (trx) => {
      await trx.raw('ALTER TABLE ab_tests DROP CONSTRAINT ab_tests_winner_check');
      await trx('ab_tests')
        .where({ single_send_id: id, user_id: a.id })
        .update({ status: 'decided', winner: -1, decided_by: 'manual', decided_at: trx.fn.now(), releasing: true, result: JSON.stringify({ variations: [] }) });
      await winnerCheck.up(trx);
      expect(await trx('ab_tests').where({ single_send_id: id, user_id: a.id }).first('status', 'winner', 'decided_by', 'decided_at', 'releasing', 'result')).toEqual({
        status: 'waiting', winner: null, decided_by: null, decided_at: null, releasing: false, result: null,
      });
      expect((await trx.raw(`SELECT 1 FROM pg_constraint WHERE conname = 'ab_tests_winner_check'`)).rows).toHaveLength(1);
      throw new Error('rolled back');
    });
    await expect(run).rejects.toThrow('rolled back');
  });

  it('the database refuses a winner below 0', async () => {
    const { id } = await waiting();
    await expect(
      db('ab_tests').where({ single_send_id: id, user_id: a.id }).update({ status: 'decided', winner: -1, decided_by: 'manual', decided_at: db.fn.now() }),
    ).rejects.toMatchObject({ code: '23514', constraint: 'ab_tests_winner_check' });
  });
});
