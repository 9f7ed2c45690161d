import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { routeState, useRouting } from '../helpers/relays';
import { waitFor } from '../helpers/wait';
import { waitForSend } from '../helpers/worker';
import { bulkContacts, createSend, deliveryStatuses, few, minus, NONE } from '../faults/lib/campaign';

/**
 * Failover (issue 36): of two routes, one relay stops in the middle of a send (its port then
 * refuses connections). Nothing is lost: its messages move to the other route at once, without
 * using an attempt, and the route is marked `down`. When the relay is back, a probe (every
 * ROUTE_PROBE_SECONDS, here 1) brings the route `up` and it carries traffic again.
 *
 * What may use an attempt: a message whose body the stopped relay had started to take when it
 * went away (half-sent: retried as today). Those are among the addresses the relay saw a RCPT TO
 * for and never accepted — the bound the test holds every other row to.
 */
const N = 600;

const rig = useRouting({
  isolated: 'routes_failover',
  db: () => db,
  relays: ['primary', 'backup'],
  routes: (r) => [
    { name: 'primary', url: r.primary.url, weight: 1 },
    { name: 'backup', url: r.backup.url, weight: 1 },
  ],
  env: { ROUTE_PROBE_SECONDS: '1', SEND_BATCH_SIZE: '40', SEND_CONCURRENCY: '8', MAX_ATTEMPTS: '5' },
});
const { app, db } = setupApp({}, 'routes_failover');

let a: TestAccount;
let sender: number;
let group: number;

beforeAll(async () => {
  a = await makeAccount(db, 'Failover');
  sender = await makeSender(db, a);
  group = await makeGroup(db, a, 'News');
});

const onDomain = (domain: string) => (t: string) => t.endsWith(`@${domain}`);

describe('a relay stopped in the middle of a send', () => {
  it('loses nothing, is marked down, its messages go out through the other route with no attempt used; back, it is probed up and carries traffic', async () => {
    const { primary, backup } = rig.relays;
    // A slower primary: messages are in flight on it when it stops.
    primary.delayMs = 10;
    const list = await makeContactType(db, a, 'Failover');
    const audience = await bulkContacts(db, a, list, N, 'f', 'failover.test');
    const send = await createSend(app, db, a, { sender, group, list, name: 'Failover' });
    const mine = onDomain('failover.test');
    await waitFor('the primary relay to take a sixth of the send', () => primary.recipients().filter(mine).length >= N / 6, { timeoutMs: 60_000, intervalMs: 5 });
    // It goes away with messages in its hands: their bodies in, never answered (half-sent).
    primary.hold();
    await waitFor('the primary relay to hold messages', () => primary.held() > 0, { timeoutMs: 30_000, intervalMs: 5 });
    await primary.stop();
    const stoppedAt = Date.now();
    primary.release();

    await waitFor('the primary route to be marked down', async () => (await routeState(db, 'primary'))?.status === 'down', {
      timeoutMs: 30_000,
      describe: () => routeState(db, 'primary'),
    });
    const down = await routeState(db, 'primary');
    expect(down).toMatchObject({ status: 'down' });
    expect(down?.down_since).not.toBeNull();
    await waitForSend(db, send.utr, 3, 60_000);

    // Nothing lost: every recipient accepted by one relay or the other.
    const viaPrimary = primary.recipients().filter(mine);
    const viaBackup = backup.recipients().filter(mine);
    expect(few(minus(audience, new Set([...viaPrimary, ...viaBackup])))).toEqual(NONE);
    expect(await deliveryStatuses(db, { single_send_id: send.id })).toEqual({ sent: N });
    // Only what was in flight on the primary when it stopped may have gone out twice, or used an attempt.
    const accepted = new Set(viaPrimary);
    const inFlight = new Set([...primary.rcptSeen.keys()].filter((t) => mine(t) && !accepted.has(t)));
    const counts = new Map<string, number>();
    for (const t of [...viaPrimary, ...viaBackup]) counts.set(t, (counts.get(t) ?? 0) + 1);
    const duplicates = [...counts].filter(([, n]) => n > 1).map(([t]) => t);
    expect(few(minus(duplicates, inFlight))).toEqual(NONE);
    const retried = (await db('deliveries').where({ single_send_id: send.id }).where('attempts', '>', 1).select(db.raw('lower(email) AS email'))).map(
      (r: { email: string }) => r.email,
    );
    expect(few(minus(retried, inFlight))).toEqual(NONE);
    // The primary's share after the stop went through the backup, each message on its first attempt.
    const movedAfterStop = backup.accepted.filter((m) => mine(m.to) && m.at > stoppedAt).map((m) => m.to);
    expect(movedAfterStop.length).toBeGreaterThan(0);
    const moved = new Set(movedAfterStop.filter((t) => !inFlight.has(t)));
    const firstTry = (await db('deliveries').where({ single_send_id: send.id, attempts: 1 }).select(db.raw('lower(email) AS email'))).map(
      (r: { email: string }) => r.email,
    );
    expect(few(minus(moved, new Set(firstTry)))).toEqual(NONE);
    // No bounce, no suppression: the relay's absence says nothing about the recipients.
    expect(await db('events').where({ user_id: a.id, type: 'bounced' })).toEqual([]);
    expect(await db('suppressions').where({ user_id: a.id })).toEqual([]);
    // Each delivered event names the route the relay that took it stands for.
    const viaBackupEvents = await db('events')
      .where({ user_id: a.id, single_send_id: send.id, type: 'delivered' })
      .whereRaw(`data->>'route' = 'backup'`)
      .count('* as n')
      .first();
    expect(Number(viaBackupEvents?.n)).toBeGreaterThanOrEqual(movedAfterStop.length - duplicates.length);
    process.stderr.write(
      `[routes] failover: primary took ${viaPrimary.length}, backup ${viaBackup.length}; in flight at the stop ${inFlight.size}, retried ${retried.length}, duplicates ${duplicates.length}\n`,
    );

    // Back: probed up within a few ROUTE_PROBE_SECONDS, and it carries traffic again.
    await primary.start();
    await waitFor('the primary route to be probed back up', async () => (await routeState(db, 'primary'))?.status === 'up', {
      timeoutMs: 30_000,
      describe: () => routeState(db, 'primary'),
    });
    expect((await routeState(db, 'primary'))?.recovered_at).not.toBeNull();
    const again = await makeContactType(db, a, 'After');
    const second = await bulkContacts(db, a, again, 200, 'g', 'after.test');
    const next = await createSend(app, db, a, { sender, group, list: again, name: 'After' });
    await waitForSend(db, next.utr, 3, 60_000);
    const back = primary.recipients().filter(onDomain('after.test'));
    const other = backup.recipients().filter(onDomain('after.test'));
    expect(few(minus(second, new Set([...back, ...other])))).toEqual(NONE);
    // Carrying half its weight for its first 5 minutes back (≈ 1/3 of 200 here), but carrying.
    expect(back.length).toBeGreaterThan(0);
    process.stderr.write(`[routes] failover, back: primary ${back.length}, backup ${other.length} of 200\n`);
  });
});
