import { recordMessageEvents } from '../../src/events/record';
import type { MessageEvent } from '../../src/events/types';
import { countQueued, readCounters, readEmailCounters, readLinks, readSentByDay, readSeries, readTotals, type Counts, type EventCounts } from '../../src/statistics';
import { SendStatus } from '../../src/states';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { DRIP_EMAIL_COUNTS, makeDrip, recordDripFacts, type Drip } from '../helpers/drip';
import { makeContactType, makeGroup, makeSendRow } from '../helpers/fixtures';
import { createAutomation } from '../helpers/sends';

/**
 * src/statistics read back what its writer made of recorded events: an owner's counters, its
 * links, and any account's counters over a window of hours, per hour or per day of a time zone
 * (what a dashboard shows). The stats endpoints' own tests are in events.test.ts.
 */
afterAll(async () => {
  await db('automations').where({ user_id: a.id }).update({ deleted_at: db.fn.now() });
});
const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;
const send = { one: 0, two: 0, other: 0 };
let sendUtr: string;
let automation: number;
let link: number;

const ZERO: EventCounts = {
  delivered: 0,
  unique_opens: 0,
  opens: 0,
  bounces: 0,
  unsubscribes: 0,
  deferred: 0,
  dropped: 0,
  bounced_hard: 0,
  bounced_soft: 0,
  unique_clicks: 0,
  total_clicks: 0,
  complaints: 0,
};
const SEND_ONE: EventCounts = {
  ...ZERO,
  delivered: 3,
  opens: 3,
  unique_opens: 2,
  total_clicks: 2,
  unique_clicks: 1,
  bounces: 1,
  bounced_hard: 1,
  deferred: 1,
  complaints: 1,
  unsubscribes: 1,
};
const SEND_TWO: EventCounts = { ...ZERO, delivered: 1, bounces: 1, bounced_soft: 1 };
const AUTOMATION: EventCounts = { ...ZERO, delivered: 1, dropped: 1 };

/** The rollup's hours keep every counter; `triggered` (rows queued) is none of these events'. */
const hours = (c: EventCounts): Counts => ({ triggered: 0, ...c });

function add(...all: EventCounts[]): EventCounts {
  const out = { ...ZERO };
  for (const c of all) for (const k of Object.keys(out) as Array<keyof EventCounts>) out[k] += c[k];
  return out;
}

async function delivery(sendId: number, email: string): Promise<number> {
  const [row] = await db('deliveries').insert({ user_id: a.id, single_send_id: sendId, email, status: 'sent', attempts: 1 }).returning('id');
  return Number(row.id);
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  ({ id: send.one, utr: sendUtr } = await makeSendRow(db, a, { name: 'One', status: SendStatus.Completed }));
  ({ id: send.two } = await makeSendRow(db, a, { name: 'Two', status: SendStatus.Completed }));
  ({ id: send.other } = await makeSendRow(db, b, { name: 'Other', status: SendStatus.Completed }));
  ({ id: automation } = await createAutomation(app, db, a, { group: await makeGroup(db, a), list: await makeContactType(db, a) }));
  [{ id: link }] = await db('tracked_links').insert({ user_id: a.id, single_send_id: send.one, url: 'https://example.com/a' }).returning('id');
  link = Number(link);

  const [d1, d2, d3] = [await delivery(send.one, 'one@example.com'), await delivery(send.one, 'two@example.com'), await delivery(send.one, 'three@example.com')];
  const one = { userId: a.id, singleSendId: send.one, automationId: null };
  const two = { userId: a.id, singleSendId: send.two, automationId: null };
  const auto = { userId: a.id, singleSendId: null, automationId: automation };
  const smtp = { status: null, diagnostic: 'no', source: 'smtp' };
  const events = [
    { ...one, deliveryId: d1, email: 'one@example.com', type: 'delivered' },
    { ...one, deliveryId: d2, email: 'two@example.com', type: 'delivered' },
    { ...one, deliveryId: d3, email: 'three@example.com', type: 'delivered' },
    { ...one, deliveryId: d1, email: 'one@example.com', type: 'opened' },
    { ...one, deliveryId: d1, email: 'one@example.com', type: 'opened' },
    { ...one, deliveryId: d2, email: 'two@example.com', type: 'opened' },
    { ...one, deliveryId: d1, email: 'one@example.com', type: 'clicked', linkId: link, data: { url: 'https://example.com/a', suspected_bot: false } },
    { ...one, deliveryId: d3, email: 'three@example.com', type: 'clicked', linkId: link, data: { url: 'https://example.com/a', suspected_bot: true } },
    { ...one, deliveryId: null, email: 'hard@example.com', type: 'bounced', data: { ...smtp, kind: 'hard' } },
    { ...one, deliveryId: null, email: 'slow@example.com', type: 'deferred', data: smtp },
    { ...one, deliveryId: d2, email: 'two@example.com', type: 'complained' },
    { ...one, deliveryId: d2, email: 'two@example.com', type: 'unsubscribed', data: { group_id: null } },
    { ...two, deliveryId: null, email: 'x@example.com', type: 'delivered' },
    { ...two, deliveryId: null, email: 'y@example.com', type: 'bounced', data: { ...smtp, kind: 'soft' } },
    { ...auto, deliveryId: null, email: 'z@example.com', type: 'dropped', data: { reason: 'unsubscribed' } },
    { ...auto, deliveryId: null, email: 'w@example.com', type: 'delivered' },
    { userId: b.id, singleSendId: send.other, automationId: null, deliveryId: null, email: 'b@example.com', type: 'delivered' },
  ] as MessageEvent[];
  await db.transaction((trx) => recordMessageEvents(trx, events));
  await db('single_sends').where({ id: send.one }).update({ triggered: 3 });
});

describe('an owner’s counters and links', () => {
  it('reads every counter of several owners of a kind under one name, the spec’s columns whatever they are called', async () => {
    const sends = await readCounters(db, a.id, 'single_send', [send.one, send.two, send.other]);
    expect([...sends.keys()].sort()).toEqual([send.one, send.two].sort());
    expect(sends.get(send.one)).toEqual({ triggered: 3, ...SEND_ONE });
    expect(sends.get(send.two)).toEqual({ triggered: 0, ...SEND_TWO });
    expect((await readCounters(db, a.id, 'automation', [automation])).get(automation)).toEqual({ triggered: 0, ...AUTOMATION });
    expect((await readCounters(db, b.id, 'automation', [automation])).size).toBe(0);
  });

  it('reads the links of an owner with their clicks; another owner’s are not among them', async () => {
    expect(await readLinks(db, a.id, { kind: 'single_send', id: send.one })).toEqual([{ url: 'https://example.com/a', unique_clicks: 1, total_clicks: 2 }]);
    expect(await readLinks(db, a.id, { kind: 'single_send', id: send.two })).toEqual([]);
    expect(await readLinks(db, b.id, { kind: 'single_send', id: send.one })).toEqual([]);
  });
});

describe('an account’s hours added up', () => {
  it('keeps every event counter per owner and hour, equal to the owner’s own counters', async () => {
    expect(await readTotals(db, a.id, { owner: { kind: 'single_send', id: send.one } })).toEqual(hours(SEND_ONE));
    expect(await readTotals(db, a.id, { owner: { kind: 'automation', id: automation } })).toEqual(hours(AUTOMATION));
  });

  it('adds up every owner of the account, or of one kind; never another account’s', async () => {
    expect(await readTotals(db, a.id)).toEqual(hours(add(SEND_ONE, SEND_TWO, AUTOMATION)));
    expect(await readTotals(db, a.id, { kind: 'single_send' })).toEqual(hours(add(SEND_ONE, SEND_TWO)));
    expect(await readTotals(db, b.id)).toEqual(hours({ ...ZERO, delivered: 1 }));
  });

  describe('over a window', () => {
    beforeAll(async () => {
      const move = (owner_type: string, owner_id: number, hour: string) =>
        db('message_stats_hourly').where({ user_id: a.id, owner_type, owner_id }).update({ hour });
      await move('single_send', send.one, '2026-01-01T12:00:00Z');
      await move('single_send', send.two, '2026-01-02T03:00:00Z');
      await move('automation', automation, '2026-01-02T12:00:00Z');
    });

    it('takes the hours from since (inclusive) to until (exclusive); a bound inside an hour takes that hour in', async () => {
      expect(await readTotals(db, a.id, { since: '2026-01-02T00:00:00Z', until: '2026-01-03T00:00:00Z' })).toEqual(hours(add(SEND_TWO, AUTOMATION)));
      expect(await readTotals(db, a.id, { since: new Date('2026-01-02T03:30:00Z') })).toEqual(hours(add(SEND_TWO, AUTOMATION)));
      expect(await readTotals(db, a.id, { until: '2026-01-02T12:00:00Z' })).toEqual(hours(add(SEND_ONE, SEND_TWO)));
      expect(await readTotals(db, a.id, { since: '2026-02-01T00:00:00Z' })).toEqual(hours(ZERO));
    });

    it('gives a series per day of UTC or of another time zone, each day at its midnight there', async () => {
      expect(await readSeries(db, a.id, { bucket: 'day' })).toEqual([
        { at: '2026-01-01T00:00:00.000000Z', ...hours(SEND_ONE) },
        { at: '2026-01-02T00:00:00.000000Z', ...hours(add(SEND_TWO, AUTOMATION)) },
      ]);
      // 03:00 UTC on 2 January is still 1 January in New York (UTC−5).
      expect(await readSeries(db, a.id, { bucket: 'day', timeZone: 'America/New_York' })).toEqual([
        { at: '2026-01-01T05:00:00.000000Z', ...hours(add(SEND_ONE, SEND_TWO)) },
        { at: '2026-01-02T05:00:00.000000Z', ...hours(AUTOMATION) },
      ]);
    });

    it('gives a series per hour, of one owner or within a window', async () => {
      expect(await readSeries(db, a.id, { bucket: 'hour', owner: { kind: 'single_send', id: send.two } })).toEqual([
        { at: '2026-01-02T03:00:00.000000Z', ...hours(SEND_TWO) },
      ]);
      expect(await readSeries(db, a.id, { bucket: 'hour', since: '2026-01-02T00:00:00Z' })).toEqual([
        { at: '2026-01-02T03:00:00.000000Z', ...hours(SEND_TWO) },
        { at: '2026-01-02T12:00:00.000000Z', ...hours(AUTOMATION) },
      ]);
    });
  });
});

describe('GET /single/send/stats timeline', () => {
  it('shows only the hours in which something it counts happened (deliveries, opens, clicks, unsubscribes)', async () => {
    await db('message_stats_hourly').insert({ user_id: a.id, owner_type: 'single_send', owner_id: send.one, hour: '2025-12-31T08:00:00Z', deferred: 2, bounces: 1 });
    const res = await api(app, a).get(`/single/send/stats?utr=${sendUtr}`);
    expectSuccess(res);
    expect(res.body.message.timeline).toEqual([{ hour: '2026-01-01T12:00:00.000000Z', delivered: 3, opens: 3, clicks: 2, unsubscribes: 1 }]);
  });
});

describe('rows queued and each automation email’s own counters', () => {
  let c: TestAccount;
  let sendId: number;
  let drip: Drip;

  beforeAll(async () => {
    c = await makeAccount(db);
    ({ id: sendId } = await makeSendRow(db, c, { name: 'Queued', status: SendStatus.Completed }));
    drip = await makeDrip(db, c);
  });

  it('counts the rows queued in this hour of their owner, and of their email', async () => {
    await db.transaction((trx) =>
      countQueued(trx, [
        { userId: c.id, source: { kind: 'single_send', singleSendId: sendId }, n: 5 },
        { userId: c.id, source: { kind: 'single_send', singleSendId: sendId }, n: 0 },
      ]),
    );
    expect(await readTotals(db, c.id, { owner: { kind: 'single_send', id: sendId } })).toEqual({ ...hours(ZERO), triggered: 5 });
    expect(await readTotals(db, c.id, { kind: 'automation' })).toEqual({ ...hours(ZERO), triggered: 4 });
    const series = await readSeries(db, c.id, { bucket: 'hour' });
    expect(series).toHaveLength(1);
    expect(series[0].triggered).toBe(9);
    const perEmail = await readEmailCounters(db, c.id, [...drip.emails, 999_999_999]);
    expect([...perEmail.keys()].sort()).toEqual([...drip.emails].sort());
    expect(perEmail.get(drip.emails[0])).toMatchObject({ triggered: 3, delivered: 0, opens: 0 });
    expect(perEmail.get(drip.emails[1])).toMatchObject({ triggered: 1, delivered: 0 });
    expect((await readEmailCounters(db, b.id, drip.emails)).size).toBe(0);
  });

  it('moves each email’s counters with its messages’ events, as the automation’s', async () => {
    await recordDripFacts(db, c, drip);
    const perEmail = await readEmailCounters(db, c.id, drip.emails);
    expect(drip.emails.map((id) => perEmail.get(id))).toEqual(DRIP_EMAIL_COUNTS);
    // The emails add up to their automation, but for what has no email (the dropped message).
    const whole = (await readCounters(db, c.id, 'automation', [drip.automation])).get(drip.automation)!;
    expect(whole).toMatchObject({ delivered: 3, unique_opens: 2, opens: 3, bounces: 1, unsubscribes: 1, unique_clicks: 1, total_clicks: 3, complaints: 1, dropped: 1 });
  });

  it('adds up single sends by the day they went out, in a time zone, from a day on; deleted ones too', async () => {
    const at = async (name: string, sentAt: string | null, counts: Record<string, number>, deleted = false) => {
      const { id } = await makeSendRow(db, c, { name, status: SendStatus.Completed });
      await db('single_sends').where({ id }).update({ sent_at: sentAt, deleted_at: deleted ? db.fn.now() : null, ...counts });
    };
    await db('single_sends').where({ user_id: c.id }).update({ sent_at: '2025-06-01T00:00:00Z' });
    await at('Early', '2026-03-01T03:00:00Z', { triggered: 10, delivered: 9, complaints: 1 });
    await at('Late', '2026-03-01T20:00:00Z', { triggered: 5, delivered: 5, unique_opens: 2 }, true);
    await at('Next', '2026-03-02T10:00:00Z', { triggered: 1, bounces: 1, bounced_hard: 1 });
    await at('Draft', null, { triggered: 0 });
    const send = (counts: Partial<Counts>): Counts => ({ ...hours(ZERO), ...counts });
    expect(await readSentByDay(db, c.id, { since: '2026-03-01T00:00:00Z' })).toEqual([
      { at: '2026-03-01T00:00:00.000000Z', ...send({ triggered: 15, delivered: 14, unique_opens: 2, complaints: 1 }) },
      { at: '2026-03-02T00:00:00.000000Z', ...send({ triggered: 1, bounces: 1, bounced_hard: 1 }) },
    ]);
    // 03:00 UTC on 1 March is still 28 February in New York; from its midnight there (05:00 UTC) it is out.
    expect(await readSentByDay(db, c.id, { since: '2026-03-01T05:00:00Z', timeZone: 'America/New_York' })).toEqual([
      { at: '2026-03-01T05:00:00.000000Z', ...send({ triggered: 5, delivered: 5, unique_opens: 2 }) },
      { at: '2026-03-02T05:00:00.000000Z', ...send({ triggered: 1, bounces: 1, bounced_hard: 1 }) },
    ]);
    expect(await readSentByDay(db, b.id, { since: '2026-03-01T00:00:00Z' })).toEqual([]);
  });
});
