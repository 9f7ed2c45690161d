import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import request from 'supertest';
import {
  automationContactRecord,
  automationListRecord,
  automationRecord,
  scheduleRecord,
} from '../../src/resources/automations/automations.schemas';
import { LIVE_REFUSED, PAUSE_REFUSED } from '../../src/resources/automations/automations.service';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectNF2, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType, makeContacts, makeGroup, makeSegment, makeSender } from '../helpers/fixtures';

/**
 * The eleven automation operations of the spec, the `/automations/contacts` extension and the
 * public design view, on the shared test database (no worker: nothing is delivered here; the
 * engine is in test/delivery/automation-delivery.test.ts).
 */
// Registered before setupApp's hook that closes the pool, so it runs first. Automations left
// live here would be picked up by the worker of a later run's databases cloned from this one.
afterAll(async () => {
  await db('automations').whereIn('user_id', [a.id, b.id]).update({ deleted_at: db.fn.now(), status: 0 });
});
const { app, db } = setupApp();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const HTML = '<html><body><h1>Hello ((first_name))</h1><script>alert(1)</script></body></html>';
// '0', not another number: the deletes accept ids too (spec rule 8), and a number could name
// one of the account's own automations; no record has id 0.
const MALFORMED = ['not-a-utr', '0', `${randomUUID()}x`, 'a'.repeat(65), "'; drop table automations; --"];

interface Refs {
  sender: number;
  unverified: number;
  group: number;
  list: number;
  segment: number;
  deletedList: number;
}

let a: TestAccount;
let b: TestAccount;
const A = {} as Refs;
const B = {} as Refs;

type Automation = ReturnType<typeof automationRecord.parse>;
type Schedule = ReturnType<typeof scheduleRecord.parse>;

async function refsFor(account: TestAccount, into: Refs): Promise<void> {
  into.sender = await makeSender(db, account);
  into.unverified = await makeSender(db, account, false);
  into.group = await makeGroup(db, account, 'Onboarding');
  into.list = await makeContactType(db, account, 'Signups');
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

/** A valid create body for the account whose refs are given. */
function createFields(refs: Refs, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'welcome',
    automation_for: `contacts_${refs.list}`,
    automation_name: 'Welcome flow',
    unsubscribe_group_id: refs.group,
    ...overrides,
  };
}

async function create(account: TestAccount, refs: Refs, overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await api(app, account).form('/automations/create', createFields(refs, overrides));
  expectSuccess(res);
  expect(Object.keys(res.body.message)).toEqual(['utr']);
  expect(res.body.message.utr).toMatch(UUID);
  return res.body.message.utr;
}

/** A valid schedule body for an automation of the account whose refs are given. */
function emailFields(utr: string, refs: Refs, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    utr,
    sender_id: refs.sender,
    subject: 'Welcome aboard',
    waiting_period: 1,
    waiting_type: 'instantly',
    template_id: 3,
    preview_img: 'template-welcome.png',
    template_html: HTML,
    ...overrides,
  };
}

async function addEmail(account: TestAccount, refs: Refs, utr: string, overrides: Record<string, unknown> = {}): Promise<void> {
  expectSuccess(await api(app, account).form('/automations/schedule/create', emailFields(utr, refs, overrides)), 'Schedule Added');
}

async function listOf(account: TestAccount) {
  const res = await api(app, account).get('/automations');
  expectSuccess(res);
  return res.body.message.automations as Array<Automation & { automation_schedule_count: number }>;
}

async function details(account: TestAccount, utr: string): Promise<Automation> {
  const res = await api(app, account).get(`/automations/details?utr=${utr}`);
  expectSuccess(res);
  expect(Object.keys(res.body.message)).toEqual(['automation']);
  return expectShape(automationRecord, res.body.message.automation);
}

async function schedulesOf(account: TestAccount, utr: string): Promise<Schedule[]> {
  const res = await api(app, account).get(`/automations/schedule?utr=${utr}`);
  expectSuccess(res);
  expect(Object.keys(res.body.message)).toEqual(['automation_schedules']);
  return res.body.message.automation_schedules as Schedule[];
}

const countOf = async (account: TestAccount, utr: string) => (await listOf(account)).find((x) => x.utr === utr)?.automation_schedule_count;

/** An automation with one email, ready to go live. */
async function ready(account: TestAccount = a, refs: Refs = A, overrides: Record<string, unknown> = {}): Promise<string> {
  const utr = await create(account, refs, overrides);
  await addEmail(account, refs, utr);
  return utr;
}

function expectFailed(res: Response, status: number, errors: unknown): void {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: { status: 'failed', errors } });
}

/** The unknown, malformed and other-account utrs every utr route must not find. */
async function strangers(): Promise<string[]> {
  const other = await ready(b, B);
  return [randomUUID(), ...MALFORMED.map(encodeURIComponent), other];
}

describe('GET /automations', () => {
  it('lists the account’s automations newest first, each with exactly the spec’s list fields', async () => {
    const account = await makeAccount(db);
    const refs = {} as Refs;
    await refsFor(account, refs);
    const first = await create(account, refs, { automation_name: 'First' });
    const second = await create(account, refs, { automation_name: 'Second', type: 'custom', automation_for: `segments_${refs.segment}` });
    await addEmail(account, refs, first);
    await addEmail(account, refs, first, { subject: 'Second email', waiting_type: 'days', waiting_period: 2 });
    const list = await listOf(account);
    expect(list.map((x) => x.utr)).toEqual([second, first]);
    for (const x of list) expectShape(automationListRecord, x);
    expect(list[1]).toEqual({
      id: expect.any(Number),
      user_id: account.id,
      automation_for: refs.list,
      automation_for_table: 'contacts_',
      automation_name: 'First',
      exit_criteria: 0,
      unsubscribe_group_id: String(refs.group),
      automation_type: 1,
      utr: first,
      status: 0,
      live_at: null,
      total_triggered: 0,
      total_delivered: 0,
      total_unique_opens: 0,
      total_opens: 0,
      total_bounces: 0,
      total_unsubscribe: 0,
      deleted_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      automation_schedule_count: 2,
    });
    expect(list[0]).toMatchObject({ automation_type: 2, automation_for: refs.segment, automation_for_table: 'segments_', automation_schedule_count: 0 });
    expect(list[0].unsubscribe_group_id).toMatch(/^\d+$/);
    // The detail is the same record without the count.
    const { automation_schedule_count: _count, ...withoutCount } = list[1];
    expect(await details(account, first)).toEqual(withoutCount);
  });

  it('without paging parameters returns everything under the one key; with them, a page and its total', async () => {
    const account = await makeAccount(db);
    const refs = {} as Refs;
    await refsFor(account, refs);
    const older = await create(account, refs, { automation_name: 'Older' });
    await create(account, refs, { automation_name: 'Newer' });
    expect(Object.keys((await api(app, account).get('/automations')).body.message)).toEqual(['automations']);
    const res = await api(app, account).get('/automations?page=2&per_page=1');
    expectSuccess(res);
    expect(res.body.message.automations.map((x: Automation) => x.utr)).toEqual([older]);
    expectShape(automationListRecord, res.body.message.automations[0]);
    expect(res.body.message.pagination).toEqual({ page: 2, per_page: 1, total: 2 });
  });

  it('never shows another account’s automations', async () => {
    const account = await makeAccount(db);
    expect(await listOf(account)).toEqual([]);
    const mine = await create(a, A);
    expect((await listOf(b)).map((x) => x.utr)).not.toContain(mine);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/automations'));
  });
});

describe('POST /automations/create', () => {
  it('creates a welcome automation as a draft (type 1, contacts_ target) and answers its utr', async () => {
    const utr = await create(a, A, { automation_name: 'Say hello' });
    const x = await details(a, utr);
    expect(x).toMatchObject({
      user_id: a.id,
      utr,
      automation_name: 'Say hello',
      automation_type: 1,
      automation_for: A.list,
      automation_for_table: 'contacts_',
      unsubscribe_group_id: String(A.group),
      exit_criteria: 0,
      status: 0,
      live_at: null,
      deleted_at: null,
    });
    expect(await schedulesOf(a, utr)).toEqual([]);
  });

  it('creates a custom automation (type 2) for a segment, keeping exit_criteria', async () => {
    const utr = await create(a, A, { type: 'custom', automation_for: `segments_${A.segment}`, exit_criteria: 1 });
    expect(await details(a, utr)).toMatchObject({
      automation_type: 2,
      automation_for: A.segment,
      automation_for_table: 'segments_',
      exit_criteria: 1,
      status: 0,
    });
  });

  it('reports the automation name required with the spec’s words, and saves nothing', async () => {
    const before = await listOf(a);
    const res = await api(app, a).form('/automations/create', createFields(A, { automation_name: undefined }));
    expectFailed(res, 422, { automation_name: ['The automation name field is required.'] });
    expectFailed(await api(app, a).form('/automations/create', createFields(A, { automation_name: '   ' })), 422, {
      automation_name: ['The automation name field is required.'],
    });
    expect(await listOf(a)).toEqual(before);
  });

  it('reports every missing field of an empty body', async () => {
    const res = await api(app, a).form('/automations/create', {});
    expectVal(res, {
      type: ['The type field is required.'],
      automation_name: ['The automation name field is required.'],
      unsubscribe_group_id: ['The unsubscribe group id field is required.'],
    });
    expect(Object.keys(res.body.errors)).toEqual(expect.arrayContaining(['type', 'automation_name', 'unsubscribe_group_id']));
  });

  it('refuses a type other than welcome or custom', async () => {
    for (const type of ['drip', 'WELCOME', '1']) {
      expectFailed(await api(app, a).form('/automations/create', createFields(A, { type })), 422, { type: ['The selected type is invalid.'] });
    }
  });

  it('refuses a malformed automation_for', async () => {
    for (const automation_for of ['lists_1', 'contacts_', 'contacts_abc', `contacts-${A.list}`, `${A.list}`, 'segments_1_2']) {
      expectFailed(await api(app, a).form('/automations/create', createFields(A, { automation_for })), 422, {
        automation_for: ['The automation for must be contacts_<id> or segments_<id>.'],
      });
    }
  });

  it('refuses a target that is unknown, deleted or another account’s', async () => {
    const before = await listOf(a);
    for (const automation_for of [
      'contacts_999999999',
      'segments_999999999',
      'contacts_2147483648',
      'segments_9999999999',
      `contacts_${A.deletedList}`,
      `contacts_${B.list}`,
      `segments_${B.segment}`,
    ]) {
      expectFailed(await api(app, a).form('/automations/create', createFields(A, { automation_for })), 422, {
        automation_for: ['The selected automation for is invalid.'],
      });
    }
    expect(await listOf(a)).toEqual(before);
  });

  it('refuses another account’s, an unknown or a deleted unsubscribe group', async () => {
    const bad = { unsubscribe_group_id: ['The selected unsubscribe group id is invalid.'] };
    expectFailed(await api(app, a).form('/automations/create', createFields(A, { unsubscribe_group_id: B.group })), 422, bad);
    expectFailed(await api(app, a).form('/automations/create', createFields(A, { unsubscribe_group_id: 2_000_000_000 })), 422, bad);
    const gone = await makeGroup(db, a, 'Soon gone');
    expectSuccess(await api(app, a).delete(`/unsubscribes-groups/delete?id=${gone}`), 'Deleted Successfully');
    expectFailed(await api(app, a).form('/automations/create', createFields(A, { unsubscribe_group_id: gone })), 422, bad);
    expectVal(await api(app, a).form('/automations/create', createFields(A, { unsubscribe_group_id: 'abc' })), {
      unsubscribe_group_id: ['The unsubscribe group id must be an integer.'],
    });
  });

  it('reports a bad target and a bad group together', async () => {
    expectFailed(
      await api(app, a).form('/automations/create', createFields(A, { automation_for: `contacts_${B.list}`, unsubscribe_group_id: B.group })),
      422,
      {
        automation_for: ['The selected automation for is invalid.'],
        unsubscribe_group_id: ['The selected unsubscribe group id is invalid.'],
      },
    );
  });

  it('answers AUTH without keys and creates nothing', async () => {
    const before = await listOf(a);
    expectAuthMissing(await api(app).form('/automations/create', createFields(A)));
    expect(await listOf(a)).toEqual(before);
  });
});

describe('GET /automations/details', () => {
  it('answers NF1 for unknown, malformed, missing, deleted and other accounts’ utrs', async () => {
    for (const utr of await strangers()) expectNF1(await api(app, a).get(`/automations/details?utr=${utr}`));
    expectNF1(await api(app, a).get('/automations/details'));
    const gone = await create(a, A);
    expectSuccess(await api(app, a).delete(`/automations/delete?utr=${gone}`));
    expectNF1(await api(app, a).get(`/automations/details?utr=${gone}`));
  });

  it('finds a utr written in upper case', async () => {
    const utr = await create(a, A);
    expect((await details(a, utr.toUpperCase())).utr).toBe(utr);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get(`/automations/details?utr=${await create(a, A)}`));
  });
});

describe('GET /automations/set-live', () => {
  it('sets a draft with an email live: status 1 and live_at as <datetime>', async () => {
    const utr = await ready();
    const res = await api(app, a).get(`/automations/set-live?utr=${utr}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Automation has been set live' } });
    const x = await details(a, utr);
    expect(x.status).toBe(1);
    expect(x.live_at).toMatch(DATETIME);
    expect(Math.abs(Date.parse(`${x.live_at!.replace(' ', 'T')}Z`) - Date.now())).toBeLessThan(60_000);
    expect((await listOf(a)).find((y) => y.utr === utr)).toMatchObject({ status: 1, live_at: x.live_at });
  });

  it('refuses, with exactly the spec’s body, an automation whose unsubscribe group was deleted', async () => {
    const group = await makeGroup(db, a, 'Doomed');
    const utr = await ready(a, A, { unsubscribe_group_id: group });
    expectSuccess(await api(app, a).delete(`/unsubscribes-groups/delete?id=${group}`), 'Deleted Successfully');
    const before = await details(a, utr);
    const res = await api(app, a).get(`/automations/set-live?utr=${utr}`);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 422,
      body: { status: 'failed', errors: 'Unsubscribe group require to live automation' },
    });
    expect(LIVE_REFUSED).toBe('Unsubscribe group require to live automation');
    expect(await details(a, utr)).toEqual(before);
    expect(before).toMatchObject({ status: 0, live_at: null });
  });

  it('refuses an automation without any email, and leaves it a draft', async () => {
    const utr = await create(a, A);
    const res = await api(app, a).get(`/automations/set-live?utr=${utr}`);
    expect(res.status).toBe(422);
    expect(res.body.status).toBe('failed');
    expect(typeof res.body.errors).toBe('string');
    expect(await details(a, utr)).toMatchObject({ status: 0, live_at: null });
    // Its only email removed: refused again.
    await addEmail(a, A, utr);
    const [email] = await schedulesOf(a, utr);
    expectSuccess(await api(app, a).delete(`/automations/schedule/delete?utr=${email.utr}`));
    expect((await api(app, a).get(`/automations/set-live?utr=${utr}`)).status).toBe(422);
    expect((await details(a, utr)).status).toBe(0);
  });

  it('refuses an automation whose target was deleted', async () => {
    const list = await makeContactType(db, a, 'Short lived');
    const utr = await ready(a, A, { automation_for: `contacts_${list}` });
    await db('contact_types').where({ id: list }).update({ deleted_at: db.fn.now() });
    const res = await api(app, a).get(`/automations/set-live?utr=${utr}`);
    expect(res.status).toBe(422);
    expect(res.body.status).toBe('failed');
    expect((await details(a, utr)).status).toBe(0);
  });

  it('accepts an automation that is live already and keeps its live_at', async () => {
    const utr = await ready();
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`), 'Automation has been set live');
    const before = await details(a, utr);
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`), 'Automation has been set live');
    expect(await details(a, utr)).toMatchObject({ status: 1, live_at: before.live_at });
  });

  it('answers NF2 for unknown, malformed, missing and other accounts’ utrs, leaving them unchanged', async () => {
    const utrs = await strangers();
    const other = utrs[utrs.length - 1];
    for (const utr of utrs) expectNF2(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    expectNF2(await api(app, a).get('/automations/set-live'));
    expect(await details(b, other)).toMatchObject({ status: 0, live_at: null });
  });

  it('answers AUTH without keys and changes nothing', async () => {
    const utr = await ready();
    expectAuthMissing(await api(app).get(`/automations/set-live?utr=${utr}`));
    expect((await details(a, utr)).status).toBe(0);
  });
});

describe('GET /automations/pause', () => {
  it('pauses a live automation (status 2) and sets it live again from paused', async () => {
    const utr = await ready();
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    const res = await api(app, a).get(`/automations/pause?utr=${utr}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Automation Paused Successfully' } });
    const paused = await details(a, utr);
    expect(paused.status).toBe(2);
    expect(paused.live_at).toMatch(DATETIME);
    expect((await listOf(a)).find((y) => y.utr === utr)!.status).toBe(2);
    // Paused is not live: pausing again is refused.
    expectFailed(await api(app, a).get(`/automations/pause?utr=${utr}`), 422, PAUSE_REFUSED);
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`), 'Automation has been set live');
    const again = await details(a, utr);
    expect(again.status).toBe(1);
    expect(again.live_at).toMatch(DATETIME);
  });

  it('records automation.live and automation.paused with the change: when the event cannot be written, the status stays as it was', async () => {
    const utr = await ready();
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    expectSuccess(await api(app, a).get(`/automations/pause?utr=${utr}`));
    const events = () => db('events').where({ user_id: a.id }).whereRaw("data->>'utr' = ?", [utr]).orderBy('id').pluck('type');
    expect(await events()).toEqual(['automation.live', 'automation.paused']);
    // Recorded with the automation, so its events filter finds them.
    const listed = (await api(app, a).get(`/events?automation_utr=${utr}`)).body.message.events as Array<{ type: string; automation_utr: string }>;
    expect(listed.map((e) => [e.type, e.automation_utr])).toEqual([
      ['automation.live', utr],
      ['automation.paused', utr],
    ]);
    // The database refuses this automation's next event (only its own: other files share the database).
    await db.raw(`CREATE FUNCTION herald_test_refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`);
    // On Citus (test:citus) a trigger goes to the shards only when declared safe; plain PostgreSQL ignores the setting.
    const unsafeTriggers = (sql: string) =>
      db.transaction(async (trx) => {
        await trx.raw('SET LOCAL citus.enable_unsafe_triggers = on');
        await trx.raw(sql);
      });
    await unsafeTriggers(`CREATE TRIGGER herald_test_refuse_event BEFORE INSERT ON events FOR EACH ROW WHEN (NEW.data->>'utr' = '${utr}') EXECUTE FUNCTION herald_test_refuse_event()`);
    try {
      const res = await api(app, a).get(`/automations/set-live?utr=${utr}`);
      expect(res.status).toBe(500);
      expect(res.body.status).toBe('failed');
    } finally {
      await unsafeTriggers('DROP TRIGGER herald_test_refuse_event ON events');
      await db.raw('DROP FUNCTION herald_test_refuse_event()');
    }
    expect((await details(a, utr)).status).toBe(2);
    expect(await events()).toEqual(['automation.live', 'automation.paused']);
  });

  it('refuses to pause a draft and leaves it a draft', async () => {
    const utr = await ready();
    const before = await details(a, utr);
    const res = await api(app, a).get(`/automations/pause?utr=${utr}`);
    expectFailed(res, 422, PAUSE_REFUSED);
    expect(await details(a, utr)).toEqual(before);
  });

  it('answers NF2 for unknown, malformed, missing, deleted and other accounts’ utrs, leaving them unchanged', async () => {
    const other = await ready(b, B);
    expectSuccess(await api(app, b).get(`/automations/set-live?utr=${other}`));
    for (const utr of [...(await strangers()), other]) expectNF2(await api(app, a).get(`/automations/pause?utr=${utr}`));
    expectNF2(await api(app, a).get('/automations/pause'));
    expect((await details(b, other)).status).toBe(1);
    const gone = await ready();
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${gone}`));
    expectSuccess(await api(app, a).delete(`/automations/delete?utr=${gone}`));
    expectNF2(await api(app, a).get(`/automations/pause?utr=${gone}`));
  });

  it('answers AUTH without keys and changes nothing', async () => {
    const utr = await ready();
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    expectAuthMissing(await api(app).get(`/automations/pause?utr=${utr}`));
    expect((await details(a, utr)).status).toBe(1);
  });
});

describe('GET /automations/duplicate', () => {
  it('copies a live automation and its emails as a draft named “<name> (copy)” with new utrs', async () => {
    const utr = await create(a, A, { automation_name: 'Onboarding', type: 'custom', automation_for: `segments_${A.segment}`, exit_criteria: 1 });
    await addEmail(a, A, utr, { subject: 'One', template_html: '<p>one</p>' });
    await addEmail(a, A, utr, {
      subject: 'Two',
      waiting_type: 'days',
      waiting_period: 3,
      template_id: 2,
      preview_img: 'template-newsletter.png',
      template_html: undefined,
      template_json: '{"rows":[]}',
    });
    await addEmail(a, A, utr, { subject: 'Three', waiting_type: 'hours', waiting_period: 12 });
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    const original = await details(a, utr);
    const originalEmails = await schedulesOf(a, utr);

    const res = await api(app, a).get(`/automations/duplicate?utr=${utr}`);
    expectSuccess(res);
    expect(Object.keys(res.body.message)).toEqual(['utr']);
    const copyUtr = res.body.message.utr as string;
    expect(copyUtr).toMatch(UUID);
    expect(copyUtr).not.toBe(utr);

    const copy = await details(a, copyUtr);
    expect(copy).toEqual({
      ...original,
      id: expect.any(Number),
      utr: copyUtr,
      automation_name: 'Onboarding (copy)',
      status: 0,
      live_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(copy.id).not.toBe(original.id);

    const copied = await schedulesOf(a, copyUtr);
    expect(copied).toHaveLength(3);
    const strip = ({ id: _i, utr: _u, automation_id: _a, created_at: _c, updated_at: _up, design_url: _d, ...rest }: Schedule) => rest;
    expect(copied.map(strip)).toEqual(originalEmails.map(strip));
    for (const s of copied) {
      expectShape(scheduleRecord, s);
      expect(s.automation_id).toBe(copy.id);
      expect(s.design_url).toBe(`http://herald.test/design/${s.utr}`);
    }
    const oldUtrs = new Set(originalEmails.map((s) => s.utr));
    for (const s of copied) expect(oldUtrs.has(s.utr)).toBe(false);
    expect(await countOf(a, copyUtr)).toBe(3);

    // The original is untouched.
    expect(await details(a, utr)).toEqual(original);
    expect(await schedulesOf(a, utr)).toEqual(originalEmails);
  });

  it('makes UUIDv7 utrs (version 7, RFC variant) for automations, emails and copies, in creation order', async () => {
    const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const utr = await create(a, A);
    await addEmail(a, A, utr, { subject: 'One' });
    await addEmail(a, A, utr, { subject: 'Two' });
    const copyUtr = (await api(app, a).get(`/automations/duplicate?utr=${utr}`)).body.message.utr as string;
    const emails = (await schedulesOf(a, utr)).map((s) => s.utr);
    const copiedEmails = (await schedulesOf(a, copyUtr)).map((s) => s.utr);
    const made = [utr, ...emails, copyUtr, ...copiedEmails];
    for (const u of made) expect(u).toMatch(V7);
    expect([...made.slice(0, 3)].reverse().sort()).toEqual(made.slice(0, 3));
    expect([...copiedEmails].reverse().sort()).toEqual(copiedEmails);
    expect([copyUtr, utr].sort()).toEqual([utr, copyUtr]);
  });

  it('still finds an automation and an email whose utrs are version-4 UUIDs, made before UUIDv7', async () => {
    const utr = await ready();
    const [email] = await schedulesOf(a, utr);
    const [v4, v4Email] = [randomUUID(), randomUUID()];
    await db('automations').where({ utr }).update({ utr: v4 });
    await db('automation_schedules').where({ utr: email.utr }).update({ utr: v4Email });
    expect((await details(a, v4)).utr).toBe(v4);
    expect((await schedulesOf(a, v4.toUpperCase())).map((s) => s.utr)).toEqual([v4Email]);
  });

  it('answers NF2 for unknown, malformed, missing, deleted and other accounts’ utrs, copying nothing', async () => {
    const before = (await listOf(a)).length;
    const beforeB = (await listOf(b)).length;
    const utrs = await strangers();
    for (const utr of utrs) expectNF2(await api(app, a).get(`/automations/duplicate?utr=${utr}`));
    expectNF2(await api(app, a).get('/automations/duplicate'));
    const gone = await create(a, A);
    expectSuccess(await api(app, a).delete(`/automations/delete?utr=${gone}`));
    expectNF2(await api(app, a).get(`/automations/duplicate?utr=${gone}`));
    expect((await listOf(a)).length).toBe(before);
    expect((await listOf(b)).length).toBe(beforeB + 1);
  });

  it('answers AUTH without keys and copies nothing', async () => {
    const utr = await create(a, A);
    const before = (await listOf(a)).length;
    expectAuthMissing(await api(app).get(`/automations/duplicate?utr=${utr}`));
    expect((await listOf(a)).length).toBe(before);
  });
});

describe('DELETE /automations/delete', () => {
  it('hides the automation from the list, details and every utr route', async () => {
    const utr = await ready();
    const [email] = await schedulesOf(a, utr);
    expect((await request(app).get(`/design/${email.utr}`)).status).toBe(200);
    const res = await api(app, a).delete(`/automations/delete?utr=${utr}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Deleted Successfully' } });
    expect((await listOf(a)).map((x) => x.utr)).not.toContain(utr);
    expectNF1(await api(app, a).get(`/automations/details?utr=${utr}`));
    expectNF2(await api(app, a).get(`/automations/schedule?utr=${utr}`));
    expectNF2(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    expectNF2(await api(app, a).get(`/automations/contacts?utr=${utr}`));
    expectNF2(await api(app, a).delete(`/automations/schedule/delete?utr=${email.utr}`));
    expectNF2(await api(app, a).delete(`/automations/delete?utr=${utr}`));
    expectFailed(await api(app, a).form('/automations/schedule/create', emailFields(utr, A)), 422, { utr: ['The selected utr is invalid.'] });
    expect((await request(app).get(`/design/${email.utr}`)).status).toBe(404);
    // Soft delete: the row stays.
    expect((await db('automations').where({ utr }).first()).deleted_at).not.toBeNull();
  });

  it('deletes a live automation', async () => {
    const utr = await ready();
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    expectSuccess(await api(app, a).delete(`/automations/delete?utr=${utr}`), 'Deleted Successfully');
    expectNF1(await api(app, a).get(`/automations/details?utr=${utr}`));
  });

  it('answers NF2 for unknown, malformed, missing and other accounts’ utrs, leaving them in place', async () => {
    const utrs = await strangers();
    const other = utrs[utrs.length - 1];
    for (const utr of utrs) expectNF2(await api(app, a).delete(`/automations/delete?utr=${utr}`));
    expectNF2(await api(app, a).delete('/automations/delete'));
    expect((await details(b, other)).deleted_at).toBeNull();
    expect(await countOf(b, other)).toBe(1);
  });

  it('answers AUTH without keys and deletes nothing', async () => {
    const utr = await create(a, A);
    expectAuthMissing(await api(app).delete(`/automations/delete?utr=${utr}`));
    expect((await details(a, utr)).utr).toBe(utr);
  });
});

describe('POST /automations/bulk-delete', () => {
  const body = (keys: Array<string | number>) => keys.map((k, i) => `strIds%5B${i}%5D=${encodeURIComponent(String(k))}`).join('&');

  it('deletes by utrs (urlencoded, as the spec sends it)', async () => {
    const x = await create(a, A);
    const y = await ready();
    const keep = await create(a, A);
    const res = await api(app, a).urlencoded('/automations/bulk-delete', body([x, y]));
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Deleted Successfully' } });
    const left = (await listOf(a)).map((r) => r.utr);
    expect(left).not.toContain(x);
    expect(left).not.toContain(y);
    expect(left).toContain(keep);
    expectNF1(await api(app, a).get(`/automations/details?utr=${x}`));
    expectNF1(await api(app, a).get(`/automations/details?utr=${y}`));
  });

  it('deletes by ids, and by ids and utrs mixed (multipart too)', async () => {
    const x = await create(a, A);
    const y = await create(a, A);
    const z = await create(a, A);
    const [ix, iy] = [(await details(a, x)).id, (await details(a, y)).id];
    expectSuccess(await api(app, a).urlencoded('/automations/bulk-delete', body([ix, iy])), 'Deleted Successfully');
    expectNF1(await api(app, a).get(`/automations/details?utr=${x}`));
    expectNF1(await api(app, a).get(`/automations/details?utr=${y}`));
    const w = await create(a, A);
    const iw = (await details(a, w)).id;
    expectSuccess(await api(app, a).form('/automations/bulk-delete', { strIds: [iw, z] }), 'Deleted Successfully');
    const left = (await listOf(a)).map((r) => r.utr);
    expect(left).not.toContain(z);
    expect(left).not.toContain(w);
  });

  it('is all or nothing: one unknown, malformed, deleted or other account’s key deletes none', async () => {
    const x = await create(a, A);
    const y = await create(a, A);
    const ix = (await details(a, x)).id;
    const other = await create(b, B);
    const otherId = (await details(b, other)).id;
    const gone = await create(a, A);
    expectSuccess(await api(app, a).delete(`/automations/delete?utr=${gone}`));
    for (const bad of [randomUUID(), 'nope', '2000000000', '2147483648', '9999999999', other, String(otherId), gone, '-1', '1.5']) {
      expectNF2(await api(app, a).urlencoded('/automations/bulk-delete', body([x, ix, y, bad])));
      expectNF2(await api(app, a).urlencoded('/automations/bulk-delete', body([bad])));
    }
    expect((await details(a, x)).deleted_at).toBeNull();
    expect((await details(a, y)).deleted_at).toBeNull();
    expect((await details(b, other)).deleted_at).toBeNull();
  });

  it('refuses a missing strIds with VAL', async () => {
    expectFailed(await api(app, a).urlencoded('/automations/bulk-delete', ''), 422, { strIds: ['The str ids field is required.'] });
  });

  it('answers AUTH without keys and deletes nothing', async () => {
    const x = await create(a, A);
    expectAuthMissing(await api(app).urlencoded('/automations/bulk-delete', body([x])));
    expect((await details(a, x)).utr).toBe(x);
  });
});

describe('GET /automations/schedule', () => {
  it('lists the emails in creation order with exactly the spec’s fields, design_url and image', async () => {
    const utr = await create(a, A);
    const automation = await details(a, utr);
    await addEmail(a, A, utr, { subject: 'First', waiting_type: 'instantly', waiting_period: 1 });
    await addEmail(a, A, utr, {
      subject: 'Second',
      waiting_type: 'days',
      waiting_period: 2,
      template_id: 2,
      preview_img: 'template-newsletter.png',
      template_html: undefined,
      template_json: '{"body":{"rows":[]}}',
    });
    await addEmail(a, A, utr, { subject: 'Third', waiting_type: 'hours', waiting_period: 6, template_html: undefined });
    const list = await schedulesOf(a, utr);
    expect(list.map((s) => s.subject)).toEqual(['First', 'Second', 'Third']);
    for (const s of list) {
      expectShape(scheduleRecord, s);
      expect(s.utr).toMatch(UUID);
      expect(s.design_url).toBe(`http://herald.test/design/${s.utr}`);
      expect(s.image).toBe(`http://herald.test/images/${s.preview_img}`);
    }
    expect(list[0]).toEqual({
      id: expect.any(Number),
      user_id: a.id,
      automation_id: automation.id,
      sender_id: A.sender,
      subject: 'First',
      waiting_period: 1,
      waiting_type: 'instantly',
      utr: expect.any(String),
      template_id: 3,
      preview_img: 'template-welcome.png',
      template_json: null,
      template_html: HTML,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      design_url: `http://herald.test/design/${list[0].utr}`,
      image: 'http://herald.test/images/template-welcome.png',
    });
    expect(list[1]).toMatchObject({ waiting_type: 'days', waiting_period: 2, template_id: 2, template_json: '{"body":{"rows":[]}}', template_html: null });
    expect(list[2]).toMatchObject({ waiting_type: 'hours', waiting_period: 6, template_json: null, template_html: null });
    expect(new Set(list.map((s) => s.utr)).size).toBe(3);
    expect(await countOf(a, utr)).toBe(3);
  });

  it('answers NF2 for unknown, malformed, missing and other accounts’ utrs, and for a schedule utr', async () => {
    for (const utr of await strangers()) expectNF2(await api(app, a).get(`/automations/schedule?utr=${utr}`));
    expectNF2(await api(app, a).get('/automations/schedule'));
    const utr = await ready();
    const [email] = await schedulesOf(a, utr);
    expectNF2(await api(app, a).get(`/automations/schedule?utr=${email.utr}`));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get(`/automations/schedule?utr=${await ready()}`));
  });
});

describe('POST /automations/schedule/create', () => {
  it('adds an email and answers `Schedule Added`', async () => {
    const utr = await create(a, A);
    const res = await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { subject: '  Hello ((first_name))  ' }));
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Schedule Added' } });
    const [email] = await schedulesOf(a, utr);
    expect(email).toMatchObject({ subject: 'Hello ((first_name))', sender_id: A.sender, template_html: HTML, template_json: null });
  });

  it('takes the automation utr in any case and keeps designs byte for byte', async () => {
    const utr = await create(a, A);
    const html = '  <p>\r\n spaced </p>  ';
    await addEmail(a, A, utr.toUpperCase(), { template_html: html });
    expect((await schedulesOf(a, utr))[0].template_html).toBe(html);
  });

  it('reports every missing field of an empty body', async () => {
    const res = await api(app, a).form('/automations/schedule/create', {});
    expectVal(res, {
      utr: ['The utr field is required.'],
      sender_id: ['The sender id field is required.'],
      subject: ['The subject field is required.'],
      waiting_period: ['The waiting period field is required.'],
      waiting_type: ['The waiting type field is required.'],
      template_id: ['The template id field is required.'],
      preview_img: ['The preview img field is required.'],
    });
  });

  it('reports a missing subject and a bad waiting type with the spec’s words, adding nothing', async () => {
    const utr = await create(a, A);
    expectFailed(await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { subject: undefined })), 422, {
      subject: ['The subject field is required.'],
    });
    expectFailed(await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { waiting_type: undefined })), 422, {
      waiting_type: ['The waiting type field is required.'],
    });
    for (const waiting_type of ['weeks', 'DAYS', 'minutes']) {
      expectFailed(await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { waiting_type })), 422, {
        waiting_type: ['The selected waiting type is invalid.'],
      });
    }
    expect(await schedulesOf(a, utr)).toEqual([]);
  });

  it('refuses a missing, unverified, unknown, deleted or other account’s sender', async () => {
    const utr = await create(a, A);
    const deleted = await makeSender(db, a);
    await db('senders').where({ id: deleted }).update({ deleted_at: db.fn.now() });
    expectFailed(await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { sender_id: undefined })), 422, {
      sender_id: ['The sender id field is required.'],
    });
    expectFailed(await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { sender_id: A.unverified })), 422, {
      sender_id: ['The selected sender id is not verified.'],
    });
    for (const sender_id of [B.sender, B.unverified, 2_000_000_000, deleted]) {
      expectFailed(await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { sender_id })), 422, {
        sender_id: ['The selected sender id is invalid.'],
      });
    }
    expect(await schedulesOf(a, utr)).toEqual([]);
  });

  it('refuses an unknown, malformed, deleted or other account’s automation utr with exactly {utr: [...]}', async () => {
    const other = await create(b, B);
    const gone = await create(a, A);
    expectSuccess(await api(app, a).delete(`/automations/delete?utr=${gone}`));
    for (const utr of [randomUUID(), 'not-a-utr', '12', other, gone]) {
      const res = await api(app, a).form('/automations/schedule/create', emailFields(utr, A));
      expectFailed(res, 422, { utr: ['The selected utr is invalid.'] });
    }
    expect(await schedulesOf(b, other)).toEqual([]);
  });

  it('refuses template_json and template_html together', async () => {
    const utr = await create(a, A);
    expectFailed(await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { template_json: '{"rows":[]}' })), 422, {
      template_html: ['The template html field is prohibited when template json is present.'],
    });
    expect(await schedulesOf(a, utr)).toEqual([]);
  });

  it('refuses an unknown template, a bad waiting period, and reports several fields together', async () => {
    const utr = await create(a, A);
    expectFailed(await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { template_id: 999_999 })), 422, {
      template_id: ['The selected template id is invalid.'],
    });
    expectFailed(
      await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { waiting_type: 'days', waiting_period: 0 })),
      422,
      { waiting_period: ['The waiting period must be at least 1.'] },
    );
    expectVal(await api(app, a).form('/automations/schedule/create', emailFields(utr, A, { waiting_period: 'soon' })), {
      waiting_period: ['The waiting period must be an integer.'],
    });
    expectFailed(
      await api(app, a).form('/automations/schedule/create', emailFields(randomUUID(), A, { sender_id: A.unverified, template_json: '{}' })),
      422,
      {
        utr: ['The selected utr is invalid.'],
        sender_id: ['The selected sender id is not verified.'],
        template_html: ['The template html field is prohibited when template json is present.'],
      },
    );
    expect(await schedulesOf(a, utr)).toEqual([]);
  });

  it('answers AUTH without keys and adds nothing', async () => {
    const utr = await create(a, A);
    expectAuthMissing(await api(app).form('/automations/schedule/create', emailFields(utr, A)));
    expect(await schedulesOf(a, utr)).toEqual([]);
  });
});

describe('DELETE /automations/schedule/delete', () => {
  it('removes the email from the schedule list, the count and the design view', async () => {
    const utr = await create(a, A);
    await addEmail(a, A, utr, { subject: 'Keep one' });
    await addEmail(a, A, utr, { subject: 'Drop' });
    await addEmail(a, A, utr, { subject: 'Keep two' });
    const list = await schedulesOf(a, utr);
    expect(await countOf(a, utr)).toBe(3);
    const drop = list[1];
    const res = await api(app, a).delete(`/automations/schedule/delete?utr=${drop.utr}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Deleted Successfully' } });
    expect((await schedulesOf(a, utr)).map((s) => s.subject)).toEqual(['Keep one', 'Keep two']);
    expect(await countOf(a, utr)).toBe(2);
    expect((await request(app).get(`/design/${drop.utr}`)).status).toBe(404);
    expectNF2(await api(app, a).delete(`/automations/schedule/delete?utr=${drop.utr}`));
  });

  it('answers NF2 for unknown, malformed, missing and other accounts’ schedule utrs, and for an automation utr', async () => {
    const other = await ready(b, B);
    const [otherEmail] = await schedulesOf(b, other);
    for (const utr of [randomUUID(), ...MALFORMED.map(encodeURIComponent), otherEmail.utr, other]) {
      expectNF2(await api(app, a).delete(`/automations/schedule/delete?utr=${utr}`));
    }
    expectNF2(await api(app, a).delete('/automations/schedule/delete'));
    expect(await schedulesOf(b, other)).toEqual([otherEmail]);
    expect(await countOf(b, other)).toBe(1);
  });

  it('answers AUTH without keys and removes nothing', async () => {
    const utr = await ready();
    const [email] = await schedulesOf(a, utr);
    expectAuthMissing(await api(app).delete(`/automations/schedule/delete?utr=${email.utr}`));
    expect(await schedulesOf(a, utr)).toEqual([email]);
  });
});

describe('GET /automations/contacts (extension)', () => {
  it('lists each entered contact with its next email, hiding the ones set aside', async () => {
    const utr = await ready();
    const automation = await details(a, utr);
    const [email] = await schedulesOf(a, utr);
    expect(Object.keys((await api(app, a).get(`/automations/contacts?utr=${utr}`)).body.message)).toEqual(['contacts']);
    const list = await makeContactType(db, a, 'Entered');
    const [c1, c2, c3] = await makeContacts(db, a, list, [
      { email: 'one@example.com' },
      { email: 'two@example.com' },
      { email: 'three@example.com' },
    ]);
    await db('automation_contacts').insert([
      { user_id: a.id, automation_id: automation.id, contact_id: c1, email: 'one@example.com', next_schedule_id: email.id, next_due_at: db.fn.now() },
      { user_id: a.id, automation_id: automation.id, contact_id: c2, email: 'two@example.com', state: 'exited', exit_reason: 'unsubscribed' },
      { user_id: a.id, automation_id: automation.id, contact_id: c3, email: 'three@example.com', state: 'skipped' },
    ]);
    const res = await api(app, a).get(`/automations/contacts?utr=${utr}`);
    expectSuccess(res);
    const rows = res.body.message.contacts as Array<ReturnType<typeof automationContactRecord.parse>>;
    expect(rows.map((r) => r.email)).toEqual(['two@example.com', 'one@example.com']);
    for (const r of rows) expectShape(automationContactRecord, r);
    expect(rows[1]).toMatchObject({ contact_id: c1, state: 'active', exit_reason: null, next_email_utr: email.utr, last_sent_at: null });
    expect(rows[1].next_due_at).not.toBeNull();
    expect(rows[0]).toMatchObject({ contact_id: c2, state: 'exited', exit_reason: 'unsubscribed', next_email_utr: null, next_due_at: null });
    // Another account sees none of it.
    expectNF2(await api(app, b).get(`/automations/contacts?utr=${utr}`));
  });

  it('answers NF2 for unknown, malformed, missing and other accounts’ utrs', async () => {
    for (const utr of await strangers()) expectNF2(await api(app, a).get(`/automations/contacts?utr=${utr}`));
    expectNF2(await api(app, a).get('/automations/contacts'));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get(`/automations/contacts?utr=${await create(a, A)}`));
  });
});

describe('GET /design/<schedule utr>', () => {
  it('serves the email’s HTML, without keys, sandboxed by Content-Security-Policy', async () => {
    const utr = await ready();
    const [email] = await schedulesOf(a, utr);
    const res = await request(app).get(new URL(email.design_url).pathname);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toMatch(/^sandbox; default-src 'none'; style-src /);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.text).toBe(HTML);
    // The same with the utr in upper case.
    expect((await request(app).get(`/design/${email.utr.toUpperCase()}`)).text).toBe(HTML);
  });

  it('serves the built-in template’s HTML for an email designed without template_html', async () => {
    const utr = await create(a, A);
    await addEmail(a, A, utr, { template_id: 4, preview_img: 'template-announcement.png', template_html: undefined, template_json: '{"rows":[]}' });
    const [email] = await schedulesOf(a, utr);
    const template = await db('templates').where({ id: 4 }).first('html_code');
    const res = await request(app).get(`/design/${email.utr}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-security-policy']).toMatch(/^sandbox; default-src 'none'; style-src /);
    expect(res.text).toBe(template.html_code);
  });

  it('answers a 404 HTML page for unknown, malformed, deleted emails and emails of deleted automations', async () => {
    const utr = await create(a, A);
    await addEmail(a, A, utr, { subject: 'Deleted email' });
    await addEmail(a, A, utr, { subject: 'Deleted automation' });
    const [deletedEmail, ofDeletedAutomation] = await schedulesOf(a, utr);
    expectSuccess(await api(app, a).delete(`/automations/schedule/delete?utr=${deletedEmail.utr}`));
    expectSuccess(await api(app, a).delete(`/automations/delete?utr=${utr}`));
    for (const key of [randomUUID(), 'not-a-utr', '12', deletedEmail.utr, ofDeletedAutomation.utr, utr]) {
      const res = await request(app).get(`/design/${key}`);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('Design not found');
      expect(res.text).not.toContain(HTML);
    }
  });
});
