import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { routeState, useRouting } from '../helpers/relays';
import { sleep, waitFor } from '../helpers/wait';
import { bulkContacts, createSend, deliveryStatuses, few, minus, NONE } from '../faults/lib/campaign';

/**
 * Warm-up (issue 36): a route on day 0 of its schedule (`start` is today, UTC) takes at most the
 * day's cap in any hour — 20 here (schedule [20, 40]). Of 25 messages, 20 go and the 21st waits:
 * queued, due in the next hour, its `deferred` event saying `warmup`, the send not completed.
 *
 * The next hour, without waiting an hour: the route's hourly counter is what holds the cap
 * (route_usage, period 'hour', period_start = the current clock hour), so the test stops the
 * worker (its mailer returns unused reservations), moves that counter's period_start back one hour
 * — this hour's counter is then empty, as it is when the clock reaches the next hour — and makes
 * the waiting rows due now; a new worker (nothing of the old one's memory) then sends them. The
 * day stays day 0 (the schedule's `start` is untouched): the cap is still 20, and 5 fit.
 */
const N = 25;
const CAP = 20;
const today = new Date().toISOString().slice(0, 10);

const rig = useRouting({
  isolated: 'routes_warmup',
  db: () => db,
  relays: ['fresh'],
  routes: (r) => [{ name: 'fresh', url: r.fresh.url, warmup: { start: today, schedule: [CAP, 40] } }],
  // One claim takes all 25 rows (half of SEND_BATCH_SIZE): the 5 over the cap are claimed and deferred, visibly.
  env: { SEND_BATCH_SIZE: '50', SEND_CONCURRENCY: '4' },
});
const { app, db } = setupApp({}, 'routes_warmup');

let a: TestAccount;
let sender: number;
let group: number;

beforeAll(async () => {
  a = await makeAccount(db, 'Warm-up');
  sender = await makeSender(db, a);
  group = await makeGroup(db, a, 'News');
});

describe('a route on day 0 of its warm-up, capped at 20 an hour', () => {
  it('sends 20, the 21st waits (deferred: warmup) until the next hour, and goes then', async () => {
    // The hour must not turn during the first part: start it 40 s or more before the hour's end.
    const intoHour = Date.now() % 3600_000;
    if (intoHour > 3600_000 - 40_000) await sleep(3600_000 - intoHour + 1000);
    const hourEnd = new Date(Math.floor(Date.now() / 3600_000) * 3600_000 + 3600_000);

    const fresh = rig.relays.fresh;
    const list = await makeContactType(db, a, 'Warm-up');
    const audience = await bulkContacts(db, a, list, N, 'u', 'warmup.test');
    const send = await createSend(app, db, a, { sender, group, list, name: 'Warm-up' });
    const where = { single_send_id: send.id };

    await waitFor('the hour’s cap to reach the relay', () => fresh.recipients().length >= CAP, { timeoutMs: 60_000 });
    await waitFor(
      'the rest to wait, deferred',
      async () => {
        const rows = await deliveryStatuses(db, where);
        return rows.sent === CAP && rows.queued === N - CAP && !rows.sending;
      },
      { timeoutMs: 30_000, describe: () => deliveryStatuses(db, where) },
    );
    await sleep(1000);
    expect(fresh.recipients()).toHaveLength(CAP);

    // Visible as deferred: queued, due in the next hour (not now, not later than a minute past it),
    // their attempt given back, a `deferred` event each with reason warmup and the route.
    const waiting = await db('deliveries').where(where).where({ status: 'queued' }).select('email', 'attempts', 'next_attempt_at');
    expect(waiting).toHaveLength(N - CAP);
    for (const w of waiting) {
      expect(w.attempts).toBe(0);
      expect(new Date(w.next_attempt_at).getTime()).toBeGreaterThan(Date.now());
      expect(new Date(w.next_attempt_at).getTime()).toBeLessThanOrEqual(hourEnd.getTime() + 60_000);
    }
    const deferred = await db('events').where({ user_id: a.id, single_send_id: send.id, type: 'deferred' });
    expect(new Set(deferred.map((e) => e.email))).toEqual(new Set(waiting.map((w) => w.email.toLowerCase())));
    for (const e of deferred) expect(e.data).toMatchObject({ reason: 'warmup', route: 'fresh' });
    expect((await db('single_sends').where({ id: send.id }).first('status')).status).not.toBe(3);
    // Warming is not failing.
    expect(await routeState(db, 'fresh')).toMatchObject({ status: 'up' });
    expect(await db('events').where({ user_id: a.id, type: 'bounced' })).toEqual([]);

    // The next hour (see the file's comment for the technique).
    await rig.worker!.stop();
    await db('route_usage').where({ route: 'fresh', period: 'hour' }).update({ period_start: db.raw(`period_start - interval '1 hour'`) });
    await db('deliveries').where(where).where({ status: 'queued' }).update({ next_attempt_at: db.fn.now() });
    await rig.restart();
    await waitFor('the send to be completed', async () => (await db('single_sends').where({ id: send.id }).first('status')).status === 3, {
      timeoutMs: 60_000,
      describe: () => deliveryStatuses(db, where),
    });
    expect(few(minus(audience, new Set(fresh.recipients())))).toEqual(NONE);
    expect(fresh.recipients()).toHaveLength(N);
    expect(await deliveryStatuses(db, where)).toEqual({ sent: N });
  });
});
