import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { useRouting } from '../helpers/relays';
import { waitForSend } from '../helpers/worker';
import { bulkContacts, createSend, deliveryStatuses, few, minus, NONE } from '../faults/lib/campaign';

/**
 * Weights (issue 36): two healthy routes weighted 2:1, no quotas, share one send of 3,000
 * messages by weight. Each message picks its route at random by weight, so the heavy route's
 * count is binomial (n = 3,000, p = 2/3): mean 2,000, standard deviation √(n·p·(1−p)) ≈ 25.8.
 * The test allows 4 standard deviations either way (a correct router fails it about once in
 * 16,000 runs); a router that ignores the weights (1:1, mean 1,500) or sends everything to one
 * route is 20 standard deviations or more away.
 */
const N = 3_000;
const P = 2 / 3;

const rig = useRouting({
  isolated: 'routes_weights',
  db: () => db,
  relays: ['heavy', 'light'],
  routes: (r) => [
    { name: 'heavy', url: r.heavy.url, weight: 2 },
    { name: 'light', url: r.light.url, weight: 1 },
  ],
  env: { SEND_BATCH_SIZE: '100' },
});
const { app, db } = setupApp({}, 'routes_weights');

let a: TestAccount;
let sender: number;
let group: number;

beforeAll(async () => {
  a = await makeAccount(db, 'Weights');
  sender = await makeSender(db, a);
  group = await makeGroup(db, a, 'News');
});

describe('two routes weighted 2:1', () => {
  it('split 3,000 messages 2:1 within a binomial tolerance, each message once', async () => {
    const list = await makeContactType(db, a, 'Weights');
    const audience = await bulkContacts(db, a, list, N, 'w', 'weights.test');
    const send = await createSend(app, db, a, { sender, group, list, name: 'Weights' });
    await waitForSend(db, send.utr, 3, 120_000);

    const heavy = rig.relays.heavy.recipients().filter((t) => t.endsWith('@weights.test'));
    const light = rig.relays.light.recipients().filter((t) => t.endsWith('@weights.test'));
    // Each recipient exactly once, through one route or the other.
    const all = [...heavy, ...light];
    expect(all).toHaveLength(N);
    expect(few(minus(audience, new Set(all)))).toEqual(NONE);
    expect(await deliveryStatuses(db, { single_send_id: send.id })).toEqual({ sent: N });

    const mean = N * P;
    const sd = Math.sqrt(N * P * (1 - P));
    process.stderr.write(`[routes] weights 2:1 over ${N}: heavy ${heavy.length}, light ${light.length} (expected ${mean} ± ${(4 * sd).toFixed(0)})\n`);
    expect(Math.abs(heavy.length - mean)).toBeLessThanOrEqual(4 * sd);

    // Each delivered event names the route the message went through, and agrees with the relays.
    const byRoute = (await db('events')
      .where({ user_id: a.id, single_send_id: send.id, type: 'delivered' })
      .groupByRaw(`data->>'route'`)
      .select(db.raw(`data->>'route' AS route`), db.raw('count(*)::int AS n'))) as Array<{ route: string; n: number }>;
    expect(Object.fromEntries(byRoute.map((r) => [r.route, r.n]))).toEqual({ heavy: heavy.length, light: light.length });
    // Neither route ever failed.
    expect(await db('route_state').whereIn('name', ['heavy', 'light']).whereNot({ status: 'up' }).select('name', 'status')).toEqual([]);
  });
});
