import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { routeState, useRouting } from '../helpers/relays';
import { sleep, waitFor } from '../helpers/wait';
import { waitForSend } from '../helpers/worker';
import { bulkContacts, createSend, deliveryStatuses, few, minus, NONE } from '../faults/lib/campaign';

/**
 * Pinning (issue 36): an account pinned to a subset of the routes (accounts.routes) never uses
 * another — not by weight, and not when its own route is down: its messages then wait for it —
 * while an account that is not pinned uses them all.
 */
const N = 80;

const rig = useRouting({
  isolated: 'routes_pinned',
  db: () => db,
  relays: ['first', 'second'],
  routes: (r) => [
    { name: 'first', url: r.first.url },
    { name: 'second', url: r.second.url },
  ],
  env: { ROUTE_PROBE_SECONDS: '1', ROUTE_DOWN_AFTER: '2' },
});
const { app, db } = setupApp({}, 'routes_pinned');

interface Acct {
  a: TestAccount;
  sender: number;
  group: number;
}
let pinned: Acct;
let free: Acct;

async function account(name: string): Promise<Acct> {
  const a = await makeAccount(db, name);
  return { a, sender: await makeSender(db, a), group: await makeGroup(db, a, 'News') };
}

beforeAll(async () => {
  pinned = await account('Pinned');
  free = await account('Free');
  // As `herald account routes --id … --routes second` leaves it.
  await db('accounts').where({ id: pinned.a.id }).update({ routes: db.raw(`ARRAY['second']::text[]`) });
});

async function send(who: Acct, name: string, domain: string, n: number) {
  const list = await makeContactType(db, who.a, name);
  const audience = await bulkContacts(db, who.a, list, n, `${name.toLowerCase()}-`, domain);
  const s = await createSend(app, db, who.a, { sender: who.sender, group: who.group, list, name });
  return { ...s, audience };
}

describe('an account pinned to one route', () => {
  it('sends only through it, while an account not pinned uses both', async () => {
    const { first, second } = rig.relays;
    const p = await send(pinned, 'Pinned', 'pinned.test', N);
    const f = await send(free, 'Free', 'free.test', N);
    await waitForSend(db, p.utr, 3, 60_000);
    await waitForSend(db, f.utr, 3, 60_000);

    expect(first.recipients().filter((t) => t.endsWith('@pinned.test'))).toEqual([]);
    expect(few(minus(p.audience, new Set(second.recipients())))).toEqual(NONE);
    const freeFirst = first.recipients().filter((t) => t.endsWith('@free.test'));
    const freeSecond = second.recipients().filter((t) => t.endsWith('@free.test'));
    expect(few(minus(f.audience, new Set([...freeFirst, ...freeSecond])))).toEqual(NONE);
    expect(freeFirst.length).toBeGreaterThan(0);
    expect(freeSecond.length).toBeGreaterThan(0);
  });

  it('waits for its route when that route is down, rather than use another', async () => {
    const { first, second } = rig.relays;
    await second.stop();
    // The free account's send finds `second` refusing connections and marks it down.
    const f = await send(free, 'Free2', 'free2.test', 40);
    await waitForSend(db, f.utr, 3, 60_000);
    await waitFor('the second route to be marked down', async () => (await routeState(db, 'second'))?.status === 'down', {
      timeoutMs: 30_000,
      describe: () => routeState(db, 'second'),
    });
    expect(few(minus(f.audience, new Set(first.recipients())))).toEqual(NONE);

    const p = await send(pinned, 'Pinned2', 'pinned2.test', 10);
    await sleep(3000);
    expect(first.recipients().filter((t) => t.endsWith('@pinned2.test'))).toEqual([]);
    const rows = await deliveryStatuses(db, { single_send_id: p.id });
    expect(rows.sent ?? 0).toBe(0);
    expect(rows.failed ?? 0).toBe(0);
    expect(rows.bounced ?? 0).toBe(0);

    await second.start();
    await waitForSend(db, p.utr, 3, 60_000);
    expect(few(minus(p.audience, new Set(second.recipients())))).toEqual(NONE);
    expect(first.recipients().filter((t) => t.endsWith('@pinned2.test'))).toEqual([]);
    const deferred = await db('events').where({ user_id: pinned.a.id, single_send_id: p.id, type: 'deferred' });
    // Its messages waited for `second` (down); none was ever tried on `first`.
    for (const e of deferred) expect(e.data.route).not.toBe('first');
  });
});
