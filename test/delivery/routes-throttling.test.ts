import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { routeState, useRouting } from '../helpers/relays';
import { waitFor } from '../helpers/wait';
import { bulkContacts, createSend, deliveryStatuses, few, minus, NONE } from '../faults/lib/campaign';

/**
 * Throttling (issue 36): the one route's relay answers SES's `454 Throttling failure` to every
 * other message (listmonk #2273 lost half a campaign to exactly this). Everything is delivered,
 * nothing bounces or is suppressed, the route is marked `throttled` with its rate cut, and the
 * send is `completed` only once the last message is out. After ROUTE_THROTTLE_MINUTES the rate
 * climbs back: the test moves `throttled_at` back by that much and more instead of waiting (the
 * technique: the route's recovery is computed from throttled_at, so an older throttled_at is a
 * later clock for that route alone).
 */
const N = 30;
const RATE = 20;
const THROTTLING = '4.7.0 Throttling failure: Maximum sending rate exceeded.';

const rig = useRouting({
  isolated: 'routes_throttling',
  db: () => db,
  relays: ['ses'],
  routes: (r) => [{ name: 'ses', url: r.ses.url, max_per_second: RATE }],
  env: { SEND_BATCH_SIZE: '20', SEND_CONCURRENCY: '4', ROUTE_THROTTLE_MINUTES: '15' },
});
const { app, db } = setupApp({}, 'routes_throttling');

let a: TestAccount;
let sender: number;
let group: number;

beforeAll(async () => {
  a = await makeAccount(db, 'Throttled');
  sender = await makeSender(db, a);
  group = await makeGroup(db, a, 'News');
});

describe('a relay answering 454 Throttling to every other message', () => {
  it('gets everything delivered, no bounce, no suppression, the route throttled, the send completed only when the last message is out', async () => {
    const ses = rig.relays.ses;
    ses.answers = [{ at: 'rcpt', code: 454, message: THROTTLING, every: 2 }];
    const list = await makeContactType(db, a, 'Throttled');
    const audience = await bulkContacts(db, a, list, N, 't', 'throttled.test');
    const send = await createSend(app, db, a, { sender, group, list, name: 'Throttled' });
    const mine = () => ses.recipients().filter((t) => t.endsWith('@throttled.test'));

    // Watched while the send runs: the route's state, and what the relay had when the send first read completed.
    let sawThrottled = null as Record<string, unknown> | null;
    let atCompletion = undefined as { accepted: number; rows: Record<string, number> } | undefined;
    await waitFor(
      'the send to be completed',
      async () => {
        const state = await routeState(db, 'ses');
        if (state?.status === 'throttled') sawThrottled ??= state;
        const { status } = await db('single_sends').where({ id: send.id }).first('status');
        if (status !== 3) return false;
        atCompletion = { accepted: mine().length, rows: await deliveryStatuses(db, { single_send_id: send.id }) };
        return true;
      },
      { timeoutMs: 120_000, intervalMs: 20, describe: async () => ({ rows: await deliveryStatuses(db, { single_send_id: send.id }), state: await routeState(db, 'ses') }) },
    );
    // Completed only with every message out: the relay had them all, every row was sent.
    expect(atCompletion).toEqual({ accepted: N, rows: { sent: N } });
    expect(few(minus(audience, new Set(mine())))).toEqual(NONE);
    expect(mine()).toHaveLength(N);
    expect(ses.refused.length).toBeGreaterThan(0);

    // The route was throttled, its rate cut below its quota.
    expect(sawThrottled).toMatchObject({ status: 'throttled' });
    expect(Number(sawThrottled?.throttled_rate)).toBeLessThanOrEqual(RATE / 2);
    expect(sawThrottled?.throttled_at).not.toBeNull();

    // A throttling answer is the relay's, not the recipient's: no bounce, no suppression, nothing failed.
    expect(await db('events').where({ user_id: a.id, type: 'bounced' })).toEqual([]);
    expect(await db('suppressions').where({ user_id: a.id })).toEqual([]);
    const s = await db('single_sends').where({ id: send.id }).first('status', 'delivered', 'bounces');
    expect(s).toEqual({ status: 3, delivered: N, bounces: 0 });
    // The throttled messages waited (deferred, reason throttled, on this route) and their attempt was given back.
    const deferred = await db('events').where({ user_id: a.id, single_send_id: send.id, type: 'deferred' });
    expect(deferred.length).toBeGreaterThan(0);
    for (const e of deferred) expect(e.data).toMatchObject({ route: 'ses', reason: 'throttled' });
    const attempts = await db('deliveries').where({ single_send_id: send.id }).max('attempts as max').first();
    expect(Number(attempts?.max)).toBe(1);

    // Recovery: the relay stops throttling; once ROUTE_THROTTLE_MINUTES (and the +10 % a minute
    // climb back) are behind the route, it is `up` at its full quota again.
    ses.answers = [];
    await db('route_state')
      .where({ name: 'ses' })
      .whereNotNull('throttled_at')
      .update({ throttled_at: db.raw(`throttled_at - interval '2 hours'`) });
    const after = await makeContactType(db, a, 'Recovered');
    const later = await bulkContacts(db, a, after, 10, 'r', 'recovered.test');
    const next = await createSend(app, db, a, { sender, group, list: after, name: 'Recovered' });
    await waitFor('the second send to be completed', async () => (await db('single_sends').where({ id: next.id }).first('status')).status === 3, {
      timeoutMs: 60_000,
    });
    expect(few(minus(later, new Set(ses.recipients())))).toEqual(NONE);
    await waitFor('the route to be up again', async () => (await routeState(db, 'ses'))?.status === 'up', {
      timeoutMs: 30_000,
      describe: () => routeState(db, 'ses'),
    });
  });
});
