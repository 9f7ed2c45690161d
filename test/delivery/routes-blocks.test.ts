import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { PROVIDER_DOMAINS, useRouting, type Relay } from '../helpers/relays';
import { waitForSend } from '../helpers/worker';
import { bulkContacts, createSend, deliveryStatuses, few, minus, NONE } from '../faults/lib/campaign';

/**
 * Blocks (issue 36): a relay answers a block text — of the sending IP, not of the recipient — to
 * one receiving provider's recipients. The provider is the recipient domain's MX, resolved through
 * DNS_SERVERS (a DNS server on loopback: outlook-like.test's MX is under protection.outlook.com,
 * so Microsoft; gmail-like.test's under google.com). That provider stops on that route (a
 * route_blocks row), its recipients go through the other route, other providers' recipients still
 * go through the blocked one, no recipient bounces or is suppressed, and the account gets one
 * `route.blocked` event.
 */
const PER_PROVIDER = 60;
const CONCURRENCY = 4;
const S3150 =
  '5.7.1 Unfortunately, messages from [203.0.113.7] weren’t sent. Please contact your Internet service provider since part of their network is on our block list (S3150).';
const TSS09 = '5.7.2 [TSS09] All messages from 203.0.113.7 will be permanently deferred; Retrying will NOT succeed. See https://senders.yahooinc.com/tss09/';

const rig = useRouting({
  isolated: 'routes_blocks',
  db: () => db,
  relays: ['left', 'right'],
  routes: (r) => [
    { name: 'left', url: r.left.url },
    { name: 'right', url: r.right.url },
  ],
  env: { SEND_BATCH_SIZE: '20', SEND_CONCURRENCY: String(CONCURRENCY) },
});
const { app, db } = setupApp({}, 'routes_blocks');

let a: TestAccount;
let sender: number;
let group: number;

beforeAll(async () => {
  a = await makeAccount(db, 'Blocks');
  sender = await makeSender(db, a);
  group = await makeGroup(db, a, 'News');
});

const on = (domain: string) => (t: string) => t.endsWith(`@${domain}`);

/** A send to PER_PROVIDER recipients of each of `domains`, awaited to completion; returns the audience by domain. */
async function sendTo(name: string, domains: string[]): Promise<{ id: number; audience: Map<string, string[]> }> {
  const list = await makeContactType(db, a, name);
  const audience = new Map<string, string[]>();
  for (const d of domains) audience.set(d, await bulkContacts(db, a, list, PER_PROVIDER, `${name.toLowerCase()}-`, d));
  const send = await createSend(app, db, a, { sender, group, list, name });
  await waitForSend(db, send.utr, 3, 90_000);
  return { id: send.id, audience };
}

/** Each recipient of `audience` accepted exactly once, by `left` or `right`. */
function expectEachOnce(audience: string[]): void {
  const mine = new Set(audience);
  const all = [...rig.relays.left.recipients(), ...rig.relays.right.recipients()].filter((t) => mine.has(t));
  expect(few(minus(audience, new Set(all)))).toEqual(NONE);
  expect(all).toHaveLength(audience.length);
}

/** The block answers `relay` gave to `domain`'s recipients: after the first, at most the messages then already on their way. */
function blockAnswers(relay: Relay, domain: string): number {
  return relay.refused.filter((r) => on(domain)(r.to)).length;
}

describe('a block text for one provider’s recipients', () => {
  it('(Microsoft S3150 at RCPT) stops that provider on that route; other providers still go there; nobody bounces or is suppressed', async () => {
    const { left } = rig.relays;
    const outlook = PROVIDER_DOMAINS.microsoft.domain;
    const gmail = PROVIDER_DOMAINS.google.domain;
    left.answers = [{ at: 'rcpt', code: 550, message: S3150, to: on(outlook) }];
    const send = await sendTo('Blocked', [outlook, gmail]);

    expectEachOnce(send.audience.get(outlook)!);
    expectEachOnce(send.audience.get(gmail)!);
    expect(await deliveryStatuses(db, { single_send_id: send.id })).toEqual({ sent: 2 * PER_PROVIDER });
    // Microsoft stopped on `left`: none accepted there, and after the first block answer only the
    // messages already on their way were still tried there (one per lane, and those the lanes
    // started while the block was being recorded: at most twice SEND_CONCURRENCY).
    expect(left.recipients().filter(on(outlook))).toEqual([]);
    const answered = blockAnswers(left, outlook);
    expect(answered).toBeGreaterThanOrEqual(1);
    expect(answered).toBeLessThanOrEqual(2 * CONCURRENCY);
    // Google's recipients still went through `left`, after the block too.
    const firstBlock = left.refused[0].at;
    expect(left.accepted.filter((m) => on(gmail)(m.to) && m.at > firstBlock).length).toBeGreaterThan(0);

    const blocks = await db('route_blocks').select('route', 'provider', 'until', 'last_error');
    expect(blocks.map((b) => [b.route, b.provider])).toEqual([['left', 'microsoft']]);
    expect(new Date(blocks[0].until).getTime()).toBeGreaterThan(Date.now() + 3600_000);

    // Never the recipient's fault: no bounce, no suppression, no attempt used.
    expect(await db('events').where({ user_id: a.id, type: 'bounced' })).toEqual([]);
    expect(await db('suppressions').where({ user_id: a.id })).toEqual([]);
    expect(await db('single_sends').where({ id: send.id }).first('delivered', 'bounces')).toEqual({ delivered: 2 * PER_PROVIDER, bounces: 0 });
    expect(Number((await db('deliveries').where({ single_send_id: send.id }).max('attempts as m').first())?.m)).toBe(1);
    const deferred = await db('events').where({ user_id: a.id, single_send_id: send.id, type: 'deferred' });
    for (const e of deferred) expect(e.data).toMatchObject({ reason: 'blocked', route: 'left' });

    // One route.blocked event for the account, naming the route, the provider and the answer.
    const events = await db('events').where({ user_id: a.id, type: 'route.blocked' });
    expect(events).toHaveLength(1);
    expect(events[0].data).toMatchObject({ route: 'left', provider: 'microsoft' });
    expect(String(events[0].data.diagnostic)).toContain('S3150');
  });

  it('(Yahoo TSS09 after DATA) stops Yahoo on that route too, and a route blocked by Microsoft still carries no Microsoft mail', async () => {
    const { left, right } = rig.relays;
    const yahoo = PROVIDER_DOMAINS.yahoo.domain;
    const outlook = PROVIDER_DOMAINS.microsoft.domain;
    const outlookAtLeft = left.rcptSeen.size;
    right.answers = [{ at: 'data', code: 553, message: TSS09, to: on(yahoo) }];
    const send = await sendTo('Yahoo', [yahoo, outlook]);

    expectEachOnce(send.audience.get(yahoo)!);
    expect(right.recipients().filter(on(yahoo))).toEqual([]);
    const answered = blockAnswers(right, yahoo);
    expect(answered).toBeGreaterThanOrEqual(1);
    expect(answered).toBeLessThanOrEqual(2 * CONCURRENCY);
    // Microsoft's block on `left` still holds: this send's Microsoft recipients all went through `right`.
    expectEachOnce(send.audience.get(outlook)!);
    expect([...left.rcptSeen.keys()].slice(outlookAtLeft).filter(on(outlook))).toEqual([]);

    const blocks = await db('route_blocks').orderBy('route').select('route', 'provider');
    expect(blocks).toEqual([
      { route: 'left', provider: 'microsoft' },
      { route: 'right', provider: 'yahoo' },
    ]);
    expect(await db('suppressions').where({ user_id: a.id })).toEqual([]);
    expect(await db('events').where({ user_id: a.id, type: 'bounced' })).toEqual([]);
    const events = await db('events').where({ user_id: a.id, type: 'route.blocked' }).orderBy('id');
    expect(events.map((e) => [e.data.route, e.data.provider])).toEqual([
      ['left', 'microsoft'],
      ['right', 'yahoo'],
    ]);
    expect(String(events[1].data.diagnostic)).toContain('TSS09');
  });
});
