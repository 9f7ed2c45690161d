import { down, up } from '../../migrations/202612040100_hourly-counters';
import * as rollups from '../../migrations/202612090200_queued-and-email-counters';
import { recordMessageEvents } from '../../src/events/record';
import type { MessageEvent } from '../../src/events/types';
import { countQueued, readEmailCounters } from '../../src/statistics';
import { SendStatus } from '../../src/states';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { DRIP_EMAIL_COUNTS, makeDrip, recordDripFacts, type Drip } from '../helpers/drip';
import { makeSendRow } from '../helpers/fixtures';

/**
 * Migration 202612040100 gives the hours recorded before it the counters the hourly rollup did not
 * keep then, from the events: the same numbers the statistics' writer makes of the same events.
 * Run in a database of its own: the migration is taken down and up again here.
 */
const { db } = setupApp({}, 'statistics');
let a: TestAccount;
let sendId: number;

const ADDED = ['unique_opens', 'bounces', 'deferred', 'dropped', 'bounced_hard', 'bounced_soft', 'unique_clicks', 'complaints'];
const hourly = () => db('message_stats_hourly').where({ user_id: a.id }).orderBy(['owner_type', 'owner_id', 'hour']).select('owner_type', 'owner_id', 'hour', 'delivered', 'opens', 'clicks', 'unsubscribes', ...ADDED);

beforeAll(async () => {
  a = await makeAccount(db);
  ({ id: sendId } = await makeSendRow(db, a, { name: 'Backfilled', status: SendStatus.Completed }));
  const [{ id: link }] = await db('tracked_links').insert({ user_id: a.id, single_send_id: sendId, url: 'https://example.com/' }).returning('id');
  const rows = await db('deliveries')
    .insert(['p@example.com', 'q@example.com', 'r@example.com'].map((email) => ({ user_id: a.id, single_send_id: sendId, email, status: 'sent', attempts: 1 })))
    .returning(['id', 'email']);
  const ref = (i: number) => ({ userId: a.id, singleSendId: sendId, automationId: null, deliveryId: Number(rows[i].id), email: rows[i].email as string });
  const click = (i: number, bot: boolean) => ({ ...ref(i), type: 'clicked', linkId: Number(link), data: { url: 'https://example.com/', suspected_bot: bot } });
  const smtp = { status: '5.1.1', diagnostic: 'no', source: 'smtp' };
  await db.transaction((trx) =>
    recordMessageEvents(trx, [
      { ...ref(0), type: 'delivered' },
      { ...ref(1), type: 'delivered' },
      { ...ref(0), type: 'opened' },
      { ...ref(0), type: 'opened' },
      { ...ref(1), type: 'opened', data: { via: 'click' } },
      click(2, true),
      click(1, false),
      click(1, false),
      { ...ref(2), type: 'bounced', data: { ...smtp, kind: 'hard' } },
      { ...ref(2), type: 'deferred', data: smtp },
      { ...ref(0), type: 'complained' },
      { ...ref(1), deliveryId: null, type: 'dropped', data: { reason: 'suppressed' } },
    ] as MessageEvent[]),
  );
  // The bot's click came first but never makes a unique one; a person's first click does.
  await db.transaction((trx) => recordMessageEvents(trx, [click(2, false), { ...ref(1), type: 'bounced', data: { ...smtp, kind: 'soft' } }] as MessageEvent[]));
});

it('gives each hour already recorded the counters the writer would have kept, and adds the hours only those counters had', async () => {
  const written = await hourly();
  expect(written).toHaveLength(1);
  expect(written[0]).toMatchObject({ delivered: 2, opens: 3, unique_opens: 2, clicks: 4, unique_clicks: 2, bounces: 2, bounced_hard: 1, bounced_soft: 1, deferred: 1, dropped: 1, complaints: 1 });
  // An older hour in which only a deferral happened: the rollup had no row for it before.
  const earlier = await db('events')
    .insert({ user_id: a.id, type: 'deferred', email: 'late@example.com', single_send_id: sendId, occurred_at: '2026-01-05T10:20:00Z', data: {} })
    .returning('id');
  expect(earlier).toHaveLength(1);

  await down(db);
  await up(db);

  expect(await hourly()).toEqual([
    { owner_type: 'single_send', owner_id: sendId, hour: '2026-01-05T10:00:00.000000Z', delivered: 0, opens: 0, clicks: 0, unsubscribes: 0, ...Object.fromEntries(ADDED.map((c) => [c, 0])), deferred: 1 },
    ...written,
  ]);
});

/**
 * Migration 202612090200 runs after 202612040100 (whose columns are there already) and adds what
 * is still missing: the rows queued per hour and each automation email's counters, filled from the
 * recipient rows and the events still kept — the numbers countQueued and the writer keep.
 */
describe('202612090200: rows queued per hour and each automation email’s counters', () => {
  let c: TestAccount;
  let send: number;
  let drip: Drip;
  const queuedHours = () =>
    db('message_stats_hourly').where({ user_id: c.id }).where('queued', '>', 0).orderBy(['owner_type', 'owner_id', 'hour']).select('owner_type', 'owner_id', 'hour', 'queued');

  beforeAll(async () => {
    c = await makeAccount(db);
    ({ id: send } = await makeSendRow(db, c, { name: 'Queued', status: SendStatus.Completed }));
    drip = await makeDrip(db, c);
    await recordDripFacts(db, c, drip);
    // A send's audience, written and counted in one transaction as fan-out does.
    await db.transaction(async (trx) => {
      await trx('deliveries').insert(['s1@example.com', 's2@example.com'].map((email) => ({ user_id: c.id, single_send_id: send, email, status: 'sent', attempts: 1 })));
      await countQueued(trx, [{ userId: c.id, source: { kind: 'single_send', singleSendId: send }, n: 2 }]);
    });
  });

  it('gives each hour the rows queued in it, and each email what its messages did, as they were kept', async () => {
    const hours = await queuedHours();
    expect(hours.map((h) => [h.owner_type, h.owner_id, h.queued])).toEqual([
      ['automation', drip.automation, 4],
      ['single_send', send, 2],
    ]);
    const counted = await readEmailCounters(db, c.id, drip.emails);
    expect(drip.emails.map((id) => counted.get(id))).toEqual(DRIP_EMAIL_COUNTS);
    // An older row of which the rollup knew nothing: its hour gets a row.
    await db('deliveries').insert({ user_id: c.id, single_send_id: send, email: 'old@example.com', status: 'sent', attempts: 1, created_at: '2026-01-05T10:20:00Z' });

    await rollups.down(db);
    await rollups.up(db);

    expect(await queuedHours()).toEqual([hours[0], { owner_type: 'single_send', owner_id: send, hour: '2026-01-05T10:00:00.000000Z', queued: 1 }, hours[1]]);
    expect(await readEmailCounters(db, c.id, drip.emails)).toEqual(counted);
  });
});
