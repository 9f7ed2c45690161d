import type { Knex } from 'knex';
import { chunkSize, fanOutChunk, FIRST_CHUNK, MAX_CHUNK } from '../../src/delivery/audience';
import { onCitus } from '../../src/db/per-account';
import { claimBatch, recordOutcomes, releaseClaimed, type ClaimedRow } from '../../src/deliveries/queue';
import { suppress, unsubscribeFromGroup, unsubscribeGlobally, type Suppression } from '../../src/suppression';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { anyFanOutRunning } from '../../src/single-sends/schedule';

/**
 * The queue's SQL against the real database (src/deliveries/queue.ts): claims take due rows
 * only and never the same row twice, a lease that ran out gives its rows back, a release
 * undoes the claim, and outcomes apply only to the claim they belong to. The file has a
 * database of its own (no worker runs here): a claim takes every due row of its database.
 */
const { db } = setupApp({}, 'queue');
const LEASE_MS = 60_000;
let a: TestAccount;
/** On Citus a claim names its account (src/db/per-account.ts); on one server it takes any account's rows. */
let citus = false;
const claim = (limit: number, leaseMs: number) => claimBatch(db, limit, leaseMs, citus ? a.id : undefined);
let sendId: number;
let typeId: number;
let groupId: number;

beforeAll(async () => {
  citus = await onCitus(db);
  a = await makeAccount(db);
  const sender = await makeSender(db, a);
  const group = await makeGroup(db, a);
  groupId = group;
  typeId = await makeContactType(db, a);
  const [send] = await db('single_sends')
    .insert({
      user_id: a.id,
      utr: '00000000-0000-4000-8000-000000000001',
      template_id: 1,
      sender_id: sender,
      unsubscribe_group_id: group,
      single_send_name: 'Queue',
      subject: 'Hello ((first_name))',
      preheader: '',
      from_sender: 'news@acme.test',
      reply_to: 'reply@acme.test',
      status: 2,
    })
    .returning('id');
  sendId = send.id;
});

beforeEach(async () => {
  await db('deliveries').delete();
  await db('single_sends').where({ id: sendId }).update({ delivered: 0, bounces: 0 });
});

/** Recipient rows of the send, due `dueInMs` from now (negative: already due). */
async function queue(emails: string[], dueInMs = -1000, contactIds?: number[]): Promise<number[]> {
  const rows = await db('deliveries')
    .insert(
      emails.map((email, i) => ({
        user_id: a.id,
        single_send_id: sendId,
        contact_id: contactIds?.[i] ?? null,
        email,
        next_attempt_at: db.raw(`now() + (? * interval '1 millisecond')`, [dueInMs]),
      })),
    )
    .returning('id');
  return rows.map((r: { id: number }) => r.id);
}

const statusOf = async (ids: number[]) =>
  Object.fromEntries(
    ((await db('deliveries').whereIn('id', ids).select('id', 'status', 'attempts')) as Array<{ id: number; status: string; attempts: number }>).map((r) => [
      r.id,
      `${r.status}/${r.attempts}`,
    ]),
  );

describe('claimBatch', () => {
  it('takes due queued rows only, oldest first, marks them sending with a lease, and returns the contact’s current values', async () => {
    const [contact] = await makeContacts(db, a, typeId, [{ email: 'ada@example.com', first_name: 'Ada', city: 'London' }]);
    const [later] = await queue(['later@example.com'], 60_000);
    const [older] = await queue(['ada@example.com'], -5000, [contact]);
    const [newer] = await queue(['grace@example.com'], -1000);
    await db('contacts').where({ id: contact }).update({ first_name: 'Augusta' });
    const claimed = await claim(10, LEASE_MS);
    expect(claimed.map((r) => r.id)).toEqual([older, newer]);
    expect(claimed[0]).toMatchObject({ email: 'ada@example.com', attempts: 1, first_name: 'Augusta', city: 'London', token: null, data: null });
    expect(claimed[1]).toMatchObject({ email: 'grace@example.com', contact_id: null, first_name: null });
    expect(await statusOf([older, newer, later])).toEqual({ [older]: 'sending/1', [newer]: 'sending/1', [later]: 'queued/0' });
    const lease = await db('deliveries').where({ id: older }).first(db.raw('extract(epoch FROM next_attempt_at - now()) * 1000 AS ms'), 'locked_until');
    expect(Number(lease.ms)).toBeGreaterThan(LEASE_MS - 5000);
    expect(lease.locked_until).not.toBeNull();
    expect(await claim(10, LEASE_MS)).toEqual([]);
  });

  it('stops at the limit', async () => {
    await queue(Array.from({ length: 5 }, (_, i) => `r${i}@example.com`));
    expect(await claim(3, LEASE_MS)).toHaveLength(3);
    expect(await claim(3, LEASE_MS)).toHaveLength(2);
  });

  it('skips rows another claimer holds: two concurrent claims share the rows, none twice', async () => {
    const ids = await queue(Array.from({ length: 40 }, (_, i) => `c${i}@example.com`));
    // The first claimer holds its rows' locks in an open transaction while the second claims.
    const trx = await db.transaction();
    try {
      const first = (await trx.raw(`SELECT id FROM deliveries WHERE status = 'queued' AND user_id = ${a.id} ORDER BY next_attempt_at LIMIT 25 FOR UPDATE SKIP LOCKED`)).rows as Array<{ id: number }>;
      const second = await claim(40, LEASE_MS);
      expect(first).toHaveLength(25);
      expect(second).toHaveLength(15);
      expect(new Set([...first.map((r) => r.id), ...second.map((r) => r.id)])).toEqual(new Set(ids));
    } finally {
      await trx.rollback();
    }
    const [x, y] = await Promise.all([claim(30, LEASE_MS), claim(30, LEASE_MS)]);
    const taken = [...x, ...y].map((r) => r.id);
    expect(taken).toHaveLength(25);
    expect(new Set(taken).size).toBe(25);
  });

  it('takes over a row whose lease ran out (its worker died), as a new attempt; a live lease is left alone', async () => {
    const [dead, live] = await queue(['dead@example.com', 'live@example.com']);
    await claim(10, LEASE_MS);
    await db('deliveries').where({ id: dead }).update({ next_attempt_at: db.raw(`now() - interval '1 second'`) });
    const again = await claim(10, LEASE_MS);
    expect(again.map((r) => [r.id, r.attempts])).toEqual([[dead, 2]]);
    expect(await statusOf([dead, live])).toEqual({ [dead]: 'sending/2', [live]: 'sending/1' });
  });
});

describe('claimBatch of one account (the claim on Citus)', () => {
  it('takes only that account’s due rows; the others stay queued for their own claims', async () => {
    const b = await makeAccount(db, 'Other');
    const [mine] = await queue(['mine@example.com'], -5000);
    const [theirs] = await db('deliveries').insert({ user_id: b.id, email: 'theirs@example.com', next_attempt_at: db.raw(`now() - interval '10 seconds'`) }).returning('id');
    expect((await claimBatch(db, 10, LEASE_MS, a.id)).map((r) => r.id)).toEqual([mine]);
    expect(await statusOf([mine, theirs.id])).toEqual({ [mine]: 'sending/1', [theirs.id]: 'queued/0' });
    expect((await claimBatch(db, 10, LEASE_MS, b.id)).map((r) => [r.id, r.user_id])).toEqual([[theirs.id, b.id]]);
  });
});

describe('claimBatch of an A/B send’s held rest', () => {
  /** The send's A/B test row, a subject test, in `state`. */
  const abTest = (state: Record<string, unknown>) =>
    db('ab_tests').insert({
      user_id: a.id,
      single_send_id: sendId,
      type: 'subject',
      test_percentage: 20,
      duration_minutes: 60,
      winner_criteria: 'click',
      confidence: 0.95,
      if_inconclusive: 'send_leader',
      ...state,
    });

  afterEach(async () => {
    await db('ab_tests').where({ single_send_id: sendId }).delete();
    await db('single_send_variations').where({ single_send_id: sendId }).delete();
  });

  it('leaves held rows alone while the test runs; once decided, takes them to the winner, due since the decision, with the queue in order', async () => {
    await abTest({ status: 'testing' });
    const variations = (await db('single_send_variations')
      .insert([0, 1].map((idx) => ({ user_id: a.id, single_send_id: sendId, idx, subject: `Subject ${idx}` })))
      .returning('id')) as Array<{ id: number }>;
    const held = (await db('deliveries')
      .insert(['h1@example.com', 'h2@example.com'].map((email) => ({ user_id: a.id, single_send_id: sendId, email, status: 'held' })))
      .returning('id')) as Array<{ id: number }>;
    const [older] = await queue(['older@example.com'], -10_000);
    const [newer] = await queue(['newer@example.com'], -1000);
    expect((await claim(10, LEASE_MS)).map((r) => r.id)).toEqual([older, newer]);
    await releaseClaimed(db, await db('deliveries').whereIn('id', [older, newer]).select('id', 'user_id', 'attempts'));
    await db('deliveries').where({ id: older }).update({ next_attempt_at: db.raw(`now() - interval '10 seconds'`) });

    // Decided five seconds ago, B the winner: the held rows are due since then, between the two queued rows.
    await db('ab_tests')
      .where({ single_send_id: sendId })
      .update({ status: 'decided', winner: 1, decided_by: 'manual', decided_at: db.raw(`now() - interval '5 seconds'`), releasing: true });
    const claimed = await claim(10, LEASE_MS);
    expect(claimed).toHaveLength(4);
    expect(claimed[0].id).toBe(older);
    expect(new Set(claimed.slice(1, 3).map((r) => r.id))).toEqual(new Set(held.map((h) => h.id)));
    expect(claimed[3].id).toBe(newer);
    for (const row of claimed.slice(1, 3)) expect(row).toMatchObject({ ab_variation_id: variations[1].id, ab_phase: 2, attempts: 1 });
    expect(claimed[0]).toMatchObject({ ab_variation_id: null, ab_phase: null });
    expect(await statusOf(held.map((h) => h.id))).toEqual(Object.fromEntries(held.map((h) => [h.id, 'sending/1'])));
    expect(await claim(10, LEASE_MS)).toEqual([]);
  });

  it('takes nothing of a test that is no longer releasing (its send completed or was deleted)', async () => {
    await abTest({
      status: 'decided',
      winner: 0,
      decided_by: 'manual',
      decided_at: db.fn.now(),
      releasing: false,
    });
    await db('single_send_variations').insert({ user_id: a.id, single_send_id: sendId, idx: 0, subject: 'A' });
    const [row] = await db('deliveries').insert({ user_id: a.id, single_send_id: sendId, email: 'left@example.com', status: 'held' }).returning('id');
    expect(await claim(10, LEASE_MS)).toEqual([]);
    expect(await statusOf([row.id])).toEqual({ [row.id]: 'held/0' });
  });
});

describe('releaseClaimed', () => {
  it('puts claimed rows back, due at once, the attempt undone; a row taken over since is left alone', async () => {
    const [kept, takenOver] = await queue(['kept@example.com', 'over@example.com'], -1000);
    const claims = await claim(10, LEASE_MS);
    await db('deliveries').where({ id: takenOver }).update({ attempts: 2 }); // another claim since
    await releaseClaimed(db, claims);
    expect(await statusOf([kept, takenOver])).toEqual({ [kept]: 'queued/0', [takenOver]: 'sending/2' });
    expect((await claim(10, LEASE_MS)).map((r) => r.id)).toEqual([kept]);
  });
});

describe('recordOutcomes', () => {
  it('writes each outcome and counts delivered and bounces on the send, once per row that was still its claim’s', async () => {
    const ids = await queue(['sent@example.com', 'bounced@example.com', 'failed@example.com', 'retry@example.com', 'stale@example.com', 'done@example.com']);
    const claims = (await claim(10, LEASE_MS)).sort((p, q) => p.id - q.id);
    // stale: taken over by another claim meanwhile; done: recorded already (by that claim, say).
    await db('deliveries').where({ id: ids[4] }).increment('attempts', 1);
    await db('deliveries').where({ id: ids[5] }).update({ status: 'sent' });
    const retryAt = new Date(Date.now() + 3600_000);
    const applied = await recordOutcomes(db, claims, [
      { status: 'sent', messageId: '<a@acme.test>' },
      { status: 'bounced', error: '550 No such user' },
      { status: 'failed', error: '421 Busy' },
      { status: 'queued', error: '451 Later', retryAt },
      { status: 'sent', messageId: '<stale@acme.test>' },
      { status: 'bounced', error: 'late' },
    ]);
    expect(applied).toBe(4);
    const rows = (await db('deliveries').whereIn('id', ids).orderBy('id').select('status', 'message_id', 'last_error', 'sent_at', 'locked_until')) as Array<
      Record<string, unknown>
    >;
    expect(rows.map((r) => r.status)).toEqual(['sent', 'bounced', 'failed', 'queued', 'sending', 'sent']);
    expect(rows[0]).toMatchObject({ message_id: '<a@acme.test>', last_error: null, locked_until: null });
    expect(rows[0].sent_at).not.toBeNull();
    expect(rows[1]).toMatchObject({ last_error: '550 No such user', sent_at: null });
    expect(rows[4]).toMatchObject({ message_id: null });
    const retry = await db('deliveries').where({ id: ids[3] }).first(db.raw('extract(epoch FROM next_attempt_at) * 1000 AS at'));
    expect(Math.abs(Number(retry.at) - retryAt.getTime())).toBeLessThan(5);
    expect(await db('single_sends').where({ id: sendId }).first('delivered', 'bounces')).toEqual({ delivered: 1, bounces: 2 });
    // Recording the same claims again changes nothing and counts nothing.
    expect(await recordOutcomes(db, claims, claims.map(() => ({ status: 'sent' as const, messageId: '<x@y>' })))).toBe(0);
    expect(await db('single_sends').where({ id: sendId }).first('delivered', 'bounces')).toEqual({ delivered: 1, bounces: 2 });
  });
});

describe('fanOutChunk', () => {
  const target = (): Parameters<typeof fanOutChunk>[1] => ({
    userId: a.id,
    singleSendId: sendId,
    groupId: 0,
    sources: [{ id: String(typeId), table: 'contacts_' }],
    exclusions: [],
    hold: false,
  });
  const fanOut = (after: number, size: number) => db.transaction((trx: Knex.Transaction) => fanOutChunk(trx, target(), { source: 0, after }, size));

  it('grows its chunks from FIRST_CHUNK to MAX_CHUNK with what was written', () => {
    expect([0, 1, FIRST_CHUNK * 3, MAX_CHUNK * 2].map(chunkSize)).toEqual([FIRST_CHUNK, FIRST_CHUNK, FIRST_CHUNK * 3, MAX_CHUNK]);
  });

  it('writes a contact whose address another contact had when its chunk was written once (the chunk is written again skipping it)', async () => {
    await db('contacts').where({ contact_type_id: typeId }).delete();
    const [first, second, third] = await makeContacts(db, a, typeId, [
      { email: 'one@example.com' },
      { email: 'two@example.com' },
      { email: 'three@example.com' },
    ]);
    expect(await fanOut(0, 1)).toEqual({ next: { source: 0, after: first }, inserted: 1 });
    // Between two chunks, the first contact moves to another address and the second takes its old one.
    await db('contacts').where({ id: first }).update({ email: 'moved@example.com' });
    await db('contacts').where({ id: second }).update({ email: 'one@example.com' });
    expect(await fanOut(first, 2)).toEqual({ next: { source: 0, after: third }, inserted: 1 });
    expect(await fanOut(third, 2)).toEqual({ next: { source: 1, after: 0 }, inserted: 0 });
    const written = (await db('deliveries').where({ single_send_id: sendId }).orderBy('id').select('email', 'contact_id')) as ClaimedRow[];
    expect(written.map((r) => [r.email, r.contact_id])).toEqual([
      ['one@example.com', first],
      ['three@example.com', third],
    ]);
  });
  it('writes the candidates the suppression rule refuses as dropped rows with its reason, in contact order, in any case', async () => {
    await db('contacts').where({ contact_type_id: typeId }).delete();
    const emails = ['kept@example.com', 'Bounced@example.com', 'complained@example.com', 'manual@example.com', 'global@example.com', 'group@example.com', 'other-group@example.com'];
    const ids = await makeContacts(db, a, typeId, emails.map((email) => ({ email })));
    const suppression = (email: string, type: Suppression['type']): Suppression => ({ userId: a.id, email, type, reason: '', diagnostic: '', source: 'api' });
    // Each address is also on the lists the rule asks after it: the first list that has it names the reason.
    await suppress(db, [suppression('BOUNCED@example.com', 'bounce'), suppression('complained@example.com', 'complaint'), suppression('Manual@Example.com', 'manual')]);
    await unsubscribeGlobally(db, a.id, ['COMPLAINED@example.com', 'global@example.com']);
    await unsubscribeFromGroup(db, a.id, groupId, ['manual@example.com', 'GLOBAL@example.com', 'Group@example.com']);
    await unsubscribeFromGroup(db, a.id, await makeGroup(db, a, 'Other'), ['other-group@example.com']);
    try {
      const written = await db.transaction((trx: Knex.Transaction) => fanOutChunk(trx, { ...target(), groupId }, { source: 0, after: 0 }, 100));
      expect(written).toEqual({ next: { source: 1, after: 0 }, inserted: 2 });
      const rows = await db('deliveries').where({ single_send_id: sendId }).orderBy('id').select('id', 'contact_id', 'email', 'status', 'last_error');
      expect(rows.map((r) => [r.contact_id, r.email, r.status, r.last_error])).toEqual([
        [ids[0], 'kept@example.com', 'queued', null],
        [ids[1], 'Bounced@example.com', 'dropped', 'bounced'],
        [ids[2], 'complained@example.com', 'dropped', 'complained'],
        [ids[3], 'manual@example.com', 'dropped', 'suppressed'],
        [ids[4], 'global@example.com', 'dropped', 'unsubscribed'],
        [ids[5], 'group@example.com', 'dropped', 'group_unsubscribed'],
        [ids[6], 'other-group@example.com', 'queued', null],
      ]);
      const events = await db('events').where({ single_send_id: sendId, type: 'dropped' }).orderBy('id').select('delivery_id', 'email', 'data');
      expect(events.map((e) => [Number(e.delivery_id), e.email, e.data.reason])).toEqual(
        rows.filter((r) => r.status === 'dropped').map((r) => [Number(r.id), r.email.toLowerCase(), r.last_error]),
      );
    } finally {
      await db('suppressions').where({ user_id: a.id }).delete();
      await db('global_unsubscribers').where({ user_id: a.id }).delete();
      await db('unsubscribe_group_recipients').where({ user_id: a.id }).delete();
    }
  });
});

describe('anyFanOutRunning (the sender paces itself while it is true: src/delivery/fanout-pace.ts)', () => {
  const fanout = (values: Record<string, unknown>) => db('single_sends').where({ id: sendId }).update(values);
  afterEach(() => fanout({ fanout_done_at: null, fanout_retry_at: null, deleted_at: null }));

  it('is true while a running send’s audience is being written, and false once it is complete, parked or deleted', async () => {
    expect(await anyFanOutRunning(db)).toBe(true);
    await fanout({ fanout_done_at: db.fn.now() });
    expect(await anyFanOutRunning(db)).toBe(false);
    await fanout({ fanout_done_at: null, fanout_retry_at: db.raw("now() + interval '1 minute'") });
    expect(await anyFanOutRunning(db)).toBe(false);
    // A parked fan-out whose minute is over is written again.
    await fanout({ fanout_retry_at: db.raw("now() - interval '1 second'") });
    expect(await anyFanOutRunning(db)).toBe(true);
    await fanout({ fanout_retry_at: null, deleted_at: db.fn.now() });
    expect(await anyFanOutRunning(db)).toBe(false);
  });
});
