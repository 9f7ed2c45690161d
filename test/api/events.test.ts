import { recordAccountEvent } from '../../src/events/account-events';
import { recordMessageEvents } from '../../src/events/record';
import type { MessageEvent } from '../../src/events/types';
import { eventRecord } from '../../src/resources/events/events.schemas';
import { automationStats, singleSendStats } from '../../src/resources/reports/reports.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { createAutomation, createSend as createSendViaApi } from '../helpers/sends';

/**
 * GET /events and the stats endpoints, on events recorded through src/events/record.ts (the
 * worker's own recording is tested against a real SMTP server in test/delivery/events.test.ts).
 */
const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;
let sendUtr: string;
let sendId: number;
let automationUtr: string;
let automationId: number;
let otherUtr: string;

async function createSend(account: TestAccount): Promise<{ utr: string; id: number }> {
  const refs = { sender: await makeSender(db, account), group: await makeGroup(db, account), list: await makeContactType(db, account) };
  const fields = { template_html: '<html><body><p>Hi</p></body></html>', single_send_name: 'Stats', subject: 'Stats', preheader: 'Stats' };
  return createSendViaApi(app, db, account, refs, fields);
}

function message(type: MessageEvent['type'], email: string, extra: Partial<MessageEvent> = {}): MessageEvent {
  return { type, userId: a.id, deliveryId: null, singleSendId: sendId, automationId: null, email, ...extra } as MessageEvent;
}

async function record(events: MessageEvent[]): Promise<void> {
  await db.transaction((trx) => recordMessageEvents(trx, events));
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  ({ utr: sendUtr, id: sendId } = await createSend(a));
  ({ utr: otherUtr } = await createSend(b));
  const list = await makeContactType(db, a, 'Automation list');
  ({ utr: automationUtr, id: automationId } = await createAutomation(app, db, a, { group: await makeGroup(db, a, 'Drip group'), list }));

  await record([
    message('delivered', 'Ada@Example.com'),
    message('delivered', 'grace@example.com'),
    message('deferred', 'slow@example.com', { data: { status: '4.2.2', smtp_code: 451, diagnostic: '451 4.2.2 later', source: 'smtp' } } as Partial<MessageEvent>),
    message('bounced', 'hard@example.com', { data: { kind: 'hard', status: '5.1.1', smtp_code: 550, diagnostic: '550 5.1.1 no such user', source: 'smtp' } } as Partial<MessageEvent>),
    message('bounced', 'slow@example.com', { data: { kind: 'soft', status: null, smtp_code: 451, diagnostic: 'gave up', source: 'smtp' } } as Partial<MessageEvent>),
    message('dropped', 'out@example.com', { data: { reason: 'unsubscribed' } } as Partial<MessageEvent>),
    message('opened', 'ada@example.com'),
    message('complained', 'grace@example.com'),
  ]);
  await recordAccountEvent({ db }, a.id, 'automation.live', 'Automation “Drip” is live', { automation: 'Drip', utr: automationUtr });
  await record([message('dropped', 'auto@example.com', { singleSendId: null, automationId, data: { reason: 'group_unsubscribed' } } as Partial<MessageEvent>)]);
  await db.transaction((trx) =>
    recordMessageEvents(trx, [{ type: 'delivered', userId: b.id, deliveryId: null, singleSendId: null, automationId: null, email: 'ada@example.com' }]),
  );
});

async function events(query: string, account = a) {
  const res = await api(app, account).get(`/events${query}`);
  expectSuccess(res);
  for (const e of res.body.message.events) expectShape(eventRecord, e);
  return res.body.message as { events: Array<Record<string, unknown>>; next_cursor: string | null };
}

describe('GET /events', () => {
  it('lists the account’s events oldest first, message and account events alike', async () => {
    const { events: all, next_cursor } = await events('');
    expect(next_cursor).toBeNull();
    expect(all.map((e) => e.type)).toEqual([
      'delivered',
      'delivered',
      'deferred',
      'bounced',
      'bounced',
      'dropped',
      'opened',
      'complained',
      'automation.live',
      'dropped',
    ]);
    expect(all[0]).toMatchObject({ email: 'ada@example.com', single_send_utr: sendUtr, automation_utr: null, data: {} });
    expect(all[3].data).toEqual({ kind: 'hard', status: '5.1.1', smtp_code: 550, diagnostic: '550 5.1.1 no such user', source: 'smtp' });
    expect(all[8]).toMatchObject({ email: null, single_send_utr: null, data: { automation: 'Drip', utr: automationUtr } });
    expect(all[9]).toMatchObject({ automation_utr: automationUtr, data: { reason: 'group_unsubscribed' } });
    const ids = all.map((e) => e.id as number);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
  });

  it('pages by cursor: next_cursor continues, and is null once nothing more exists', async () => {
    const first = await events('?limit=4');
    expect(first.events).toHaveLength(4);
    expect(first.next_cursor).toBe(String(first.events[3].id));
    const second = await events(`?limit=4&cursor=${first.next_cursor}`);
    const third = await events(`?limit=4&cursor=${second.next_cursor}`);
    expect(third.events).toHaveLength(2);
    expect(third.next_cursor).toBeNull();
    expect([...first.events, ...second.events, ...third.events].map((e) => e.id)).toEqual((await events('')).events.map((e) => e.id));
  });

  it('filters by type list, email (any case), single send, automation and time', async () => {
    expect((await events('?type=bounced,dropped')).events.map((e) => e.email)).toEqual([
      'hard@example.com',
      'slow@example.com',
      'out@example.com',
      'auto@example.com',
    ]);
    expect((await events('?email=ADA@example.COM')).events.map((e) => e.type)).toEqual(['delivered', 'opened']);
    expect((await events(`?single_send_utr=${sendUtr}`)).events).toHaveLength(8);
    expect((await events(`?automation_utr=${automationUtr.toUpperCase()}`)).events.map((e) => e.email)).toEqual(['auto@example.com']);
    expect((await events('?since=2000-01-01&until=2000-01-02')).events).toEqual([]);
    expect((await events(`?since=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}`)).events).toHaveLength(10);
  });

  it('answers VAL for a bad type, limit, date or cursor, in the Laravel wording', async () => {
    expectVal(await api(app, a).get('/events?type=delivered,exploded'), { type: ['The selected type is invalid.'] });
    expectVal(await api(app, a).get('/events?limit=0'), { limit: ['The limit must be at least 1.'] });
    expectVal(await api(app, a).get('/events?limit=1001'), { limit: ['The limit must not be greater than 1000.'] });
    expectVal(await api(app, a).get('/events?limit=many'), { limit: ['The limit must be an integer.'] });
    expectVal(await api(app, a).get('/events?since=yesterday'), { since: ['The since is not a valid date.'] });
    expectVal(await api(app, a).get('/events?cursor=abc'), { cursor: ['The cursor is invalid.'] });
  });

  it('another account sees none of these events, and another account’s utr is not found', async () => {
    const theirs = await events('', b);
    expect(theirs.events.map((e) => e.type)).toEqual(['delivered']);
    expectNF1(await api(app, b).get(`/events?single_send_utr=${sendUtr}`));
    expectNF1(await api(app, a).get(`/events?single_send_utr=${otherUtr}`));
    expectNF1(await api(app, a).get('/events?automation_utr=not-a-utr'));
    expectAuthMissing(await api(app).get('/events'));
  });
});

describe('event ids in commit order', () => {
  it('a writer of the same account waits for an earlier uncommitted one, so a reader by id never passes a late commit', async () => {
    const c = await makeAccount(db);
    const ev = (email: string): MessageEvent => ({ type: 'delivered', userId: c.id, deliveryId: null, singleSendId: null, automationId: null, email });
    const first = await db.transaction();
    try {
      await recordMessageEvents(first, [ev('first@example.com')]);
      let secondDone = false;
      const second = db.transaction((trx) => recordMessageEvents(trx, [ev('second@example.com')])).then(() => (secondDone = true));
      await new Promise((r) => setTimeout(r, 300));
      // Still waiting on the first writer's lock: nothing of the second is visible, nor can its id be below a later commit.
      expect(secondDone).toBe(false);
      expect(await db('events').where({ user_id: c.id }).pluck('email')).toEqual([]);
      await first.commit();
      await second;
    } finally {
      if (!first.isCompleted()) await first.rollback();
    }
    const rows = await db('events').where({ user_id: c.id }).orderBy('id').pluck('email');
    expect(rows).toEqual(['first@example.com', 'second@example.com']);
    // Another account is never held up by it.
    const d = await makeAccount(db);
    const held = await db.transaction();
    try {
      await recordMessageEvents(held, [ev('held@example.com')]);
      await db.transaction((trx) => recordMessageEvents(trx, [{ ...ev('free@example.com'), userId: d.id }]));
    } finally {
      await held.rollback();
    }
    expect(await db('events').where({ user_id: d.id }).pluck('email')).toEqual(['free@example.com']);
  });
});

describe('GET /single/send/stats', () => {
  it('gives the spec’s counters and Herald’s own, made from the same events, with an hourly timeline', async () => {
    const res = await api(app, a).get(`/single/send/stats?utr=${sendUtr}`);
    expectSuccess(res);
    const stats = expectShape(singleSendStats, res.body.message);
    expect(stats).toMatchObject({
      utr: sendUtr,
      delivered: 2,
      bounces: 2,
      bounced_hard: 1,
      bounced_soft: 1,
      deferred: 1,
      dropped: 1,
      total_opens: 1,
      complaints: 1,
      unique_clicks: 0,
      total_clicks: 0,
      links: [],
    });
    expect(stats.timeline).toHaveLength(1);
    expect(stats.timeline[0]).toMatchObject({ delivered: 2, opens: 1, clicks: 0, unsubscribes: 0 });
    expect(stats.timeline[0].hour).toMatch(/T\d{2}:00:00\.000000Z$/);
  });

  it('answers NF1 for an unknown, malformed, missing or another account’s utr', async () => {
    expectNF1(await api(app, a).get('/single/send/stats?utr=00000000-0000-4000-8000-000000000000'));
    expectNF1(await api(app, a).get('/single/send/stats?utr=nope'));
    expectNF1(await api(app, a).get('/single/send/stats'));
    expectNF1(await api(app, a).get(`/single/send/stats?utr=${otherUtr}`));
    expectNF1(await api(app, b).get(`/single/send/stats?utr=${sendUtr}`));
    expectAuthMissing(await api(app).get(`/single/send/stats?utr=${sendUtr}`));
  });
});

describe('GET /automations/stats', () => {
  it('gives the automation’s counters under the spec’s names, and its drops', async () => {
    const res = await api(app, a).get(`/automations/stats?utr=${automationUtr}`);
    expectSuccess(res);
    expect(expectShape(automationStats, res.body.message)).toMatchObject({ utr: automationUtr, total_delivered: 0, dropped: 1, timeline: [] });
  });

  it('answers NF1 for an unknown or another account’s utr', async () => {
    expectNF1(await api(app, b).get(`/automations/stats?utr=${automationUtr}`));
    expectNF1(await api(app, a).get('/automations/stats?utr=00000000-0000-4000-8000-000000000000'));
  });
});
