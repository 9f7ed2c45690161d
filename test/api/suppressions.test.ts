import { randomBytes } from 'node:crypto';
import { applyOutcomes, type ReportedOutcome } from '../../src/bounces/apply';
import { secret } from '../../src/db/secrets';
import { purgeBounceReports } from '../../src/events/retention';
import { createLogger } from '../../src/logger';
import { recipientToken } from '../../src/recipient-token';
import { SendStatus } from '../../src/states';
import { suppressedAmong } from '../../src/suppression';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType, makeSendRow } from '../helpers/fixtures';

/**
 * applyOutcomes (src/bounces/apply.ts) on recipient rows made by hand — matching, the policy,
 * idempotence, the kept report — and the /suppressions endpoints. The whole path through real
 * SMTP servers is test/delivery/bounces.test.ts.
 */
const { app, db, config } = setupApp({ SOFT_BOUNCE_LIMIT: '3', SOFT_BOUNCE_DAYS: '30' });
const deps = { db, config, logger: createLogger('silent') };
let a: TestAccount;
let b: TestAccount;
let key: Buffer;
let sendId: number;
let sendUtr: string;

const makeSend = (account: TestAccount) => makeSendRow(db, account, { name: 'Bounced', status: SendStatus.Draft });

/** A recipient row as the worker leaves it once SMTP accepted the message, and its token. */
async function sentRow(account: TestAccount, send: number, email: string): Promise<{ id: number; token: string }> {
  const [row] = await db('deliveries').insert({ user_id: account.id, single_send_id: send, email, status: 'sent', attempts: 1 }).returning('id');
  return { id: Number(row.id), token: recipientToken(key, { deliveryId: Number(row.id), userId: account.id }) };
}

function hard(token: string, email: string | null, extra: Partial<ReportedOutcome> = {}): ReportedOutcome {
  return { kind: 'hard', match: { token }, email, status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 No such user', source: 'dsn', raw: `Report for ${email}`, ...extra };
}

const eventsOf = (email: string) =>
  db('events').where({ user_id: a.id, email: email.toLowerCase() }).whereIn('type', ['bounced', 'deferred', 'complained']).orderBy('id').select('type', 'data');

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  key = await secret(db, 'tracking');
  ({ id: sendId, utr: sendUtr } = await makeSend(a));
  await makeContactType(db, a);
});

describe('applyOutcomes', () => {
  it('applies a hard bounce once: a bounced event, the counters, a suppression with its report', async () => {
    const r = await sentRow(a, sendId, 'Gone@Example.com');
    expect(await applyOutcomes(deps, [hard(r.token, 'gone@example.com')])).toBe(1);
    // The same report again (an SMTP retry, a mailbox read twice), and twice in one batch: nothing more.
    expect(await applyOutcomes(deps, [hard(r.token, 'gone@example.com'), hard(r.token.toUpperCase(), null)])).toBe(0);
    expect(await eventsOf('gone@example.com')).toEqual([
      { type: 'bounced', data: { kind: 'hard', status: '5.1.1', diagnostic: 'smtp; 550 5.1.1 No such user', source: 'dsn' } },
    ]);
    expect(await db('single_sends').where({ id: sendId }).first('bounces', 'bounced_hard', 'delivered')).toEqual({ bounces: 1, bounced_hard: 1, delivered: 0 });
    // The message stays as SMTP left it (sent): a later bounce does not rewrite history.
    expect(await db('deliveries').where({ id: r.id }).first('status')).toEqual({ status: 'sent' });
    const sup = await db('suppressions').where({ user_id: a.id, email: 'Gone@Example.com' }).first();
    expect(sup).toMatchObject({ type: 'bounce', reason: 'hard bounce', source: 'dsn', single_send_id: sendId, diagnostic: '5.1.1 smtp; 550 5.1.1 No such user' });
    expect(await suppressedAmong(db, [{ userId: a.id, email: 'GONE@example.com', groupId: null }])).toEqual(new Map([[0, 'bounced']]));
    // Another account's rule is its own.
    expect(await suppressedAmong(db, [{ userId: b.id, email: 'gone@example.com', groupId: null }])).toEqual(new Map());
  });

  it('matches by the Message-ID Herald gave the message, with or without <>', async () => {
    const r1 = await sentRow(a, sendId, 'mid1@example.com');
    const r2 = await sentRow(a, sendId, 'mid2@example.com');
    expect(
      await applyOutcomes(deps, [
        { ...hard('', 'mid1@example.com'), match: { messageId: `<${r1.token}@acme.test>` } },
        { ...hard('', null), match: { messageId: `${r2.token}@acme.test` } },
      ]),
    ).toBe(2);
    expect(await db('suppressions').where({ user_id: a.id }).whereIn('email', ['mid1@example.com', 'mid2@example.com']).count('* as n').first()).toEqual({ n: 2 });
  });

  it('ignores a report naming another address, a forged token, another installation’s token, and junk', async () => {
    const r = await sentRow(a, sendId, 'kept@example.com');
    const forged = r.token.slice(0, 24) + 'f'.repeat(32);
    const foreign = recipientToken(randomBytes(32), { deliveryId: r.id, userId: a.id });
    expect(
      await applyOutcomes(deps, [
        hard(r.token, 'someone-else@example.com'),
        hard(forged, null),
        hard(foreign, 'kept@example.com'),
        hard('not-a-token', null),
        { ...hard('', null), match: { messageId: '<abc@example.com>' } },
      ]),
    ).toBe(0);
    expect(await eventsOf('kept@example.com')).toEqual([]);
    expect(await db('suppressions').where({ user_id: a.id, email: 'kept@example.com' })).toEqual([]);
  });

  it('counts soft bounces and suppresses at SOFT_BOUNCE_LIMIT within SOFT_BOUNCE_DAYS; a delay is only a deferred event', async () => {
    // One address across three messages of three sends.
    const rows = [await sentRow(a, sendId, 'full@example.com')];
    for (let i = 0; i < 2; i++) rows.push(await sentRow(a, (await makeSend(a)).id, 'full@example.com'));
    const soft = (token: string): ReportedOutcome => ({ kind: 'soft', match: { token }, email: 'full@example.com', status: '4.2.2', diagnostic: 'mailbox full', source: 'dsn' });
    const delayed: ReportedOutcome = { ...soft(rows[0].token), kind: 'deferred' };
    expect(await applyOutcomes(deps, [delayed, soft(rows[0].token)])).toBe(2);
    expect(await applyOutcomes(deps, [soft(rows[1].token)])).toBe(1);
    expect(await db('suppressions').where({ user_id: a.id, email: 'full@example.com' })).toEqual([]);
    expect(await applyOutcomes(deps, [soft(rows[2].token)])).toBe(1);
    expect(await db('suppressions').where({ user_id: a.id, email: 'full@example.com' }).first('type', 'reason')).toEqual({
      type: 'bounce',
      reason: '3 soft bounces within 30 days',
    });
    expect((await eventsOf('full@example.com')).map((e) => [e.type, e.data.kind ?? null])).toEqual([
      ['deferred', null],
      ['bounced', 'soft'],
      ['bounced', 'soft'],
      ['bounced', 'soft'],
    ]);
  });

  it('applies a complaint: a complained event, a complaint suppression and a global unsubscriber', async () => {
    const r = await sentRow(a, sendId, 'Angry@example.com');
    const complaint: ReportedOutcome = { kind: 'complaint', match: { token: r.token }, email: null, status: null, diagnostic: '', source: 'arf', raw: 'ARF', feedbackType: 'abuse' };
    expect(await applyOutcomes(deps, [complaint])).toBe(1);
    expect(await applyOutcomes(deps, [complaint])).toBe(0);
    expect(await eventsOf('angry@example.com')).toEqual([{ type: 'complained', data: { source: 'arf', feedback_type: 'abuse' } }]);
    expect(await db('suppressions').where({ user_id: a.id, email: 'Angry@example.com' }).first('type', 'source', 'reason')).toEqual({
      type: 'complaint',
      source: 'arf',
      reason: 'complaint (abuse)',
    });
    expect(await db('global_unsubscribers').where({ user_id: a.id }).whereRaw("lower(email_address) = 'angry@example.com'")).toHaveLength(1);
    expect(await db('single_sends').where({ id: sendId }).first('complaints')).toEqual({ complaints: 1 });
  });

  it('writes concurrent calls together, each told its own count; a call that fails fails alone', async () => {
    const rows = [];
    for (let i = 0; i < 12; i++) rows.push(await sentRow(a, sendId, `batch${i}@example.com`));
    const bad = { ...hard(rows[0].token, null), source: 'carrier-pigeon' } as unknown as ReportedOutcome;
    const calls = [
      ...rows.map((r) => applyOutcomes(deps, [hard(r.token, null)])),
      applyOutcomes(deps, [hard(rows[1].token, null)]),
      applyOutcomes(deps, [bad]),
    ];
    const settled = await Promise.allSettled(calls);
    const values = settled.map((x) => (x.status === 'fulfilled' ? x.value : 'failed'));
    // Each row once (the duplicate of row 1 applies to nothing, whichever call came first), the bad one alone failed.
    expect(values.slice(2, 12)).toEqual(Array(10).fill(1));
    expect(values[0]).toBe(1);
    expect((values[1] as number) + (values[12] as number)).toBe(1);
    expect(values[13]).toBe('failed');
    expect(await db('suppressions').where({ user_id: a.id }).where('email', 'like', 'batch%').count('* as n').first()).toEqual({ n: 12 });
  });

  it('keeps at most 256 KB of a report', async () => {
    const r = await sentRow(a, sendId, 'big@example.com');
    expect(await applyOutcomes(deps, [hard(r.token, null, { raw: Buffer.alloc(300 * 1024, 'x') })])).toBe(1);
    const row = await db('bounce_reports').where({ user_id: a.id, delivery_id: r.id }).first(db.raw('octet_length(raw) AS n'));
    expect(row).toEqual({ n: 256 * 1024 });
  });
});

describe('BOUNCE_RETENTION_DAYS', () => {
  it('purges kept reports older than the retention; their suppressions stay, without a message', async () => {
    const r = await sentRow(a, sendId, 'old-report@example.com');
    expect(await applyOutcomes(deps, [hard(r.token, null)])).toBe(1);
    await db('bounce_reports').where({ user_id: a.id, delivery_id: r.id }).update({ created_at: db.raw("now() - interval '181 days'") });
    expect(await purgeBounceReports(db, 180)).toBeGreaterThanOrEqual(1);
    expect(await db('bounce_reports').where({ user_id: a.id, delivery_id: r.id })).toEqual([]);
    const listed = (await api(app, a).get('/suppressions/list?email=old-report@example.com')).body.message.suppressions;
    expect(listed).toEqual([expect.objectContaining({ email: 'old-report@example.com', has_message: 0 })]);
    expectNF1(await api(app, a).get(`/suppressions/message?id=${listed[0].id}`));
  });
});

describe('GET /suppressions/list', () => {
  it('lists the account’s suppressions newest first, filtered by type and address, with paging', async () => {
    const res = await api(app, a).get('/suppressions/list');
    expectSuccess(res);
    const list = res.body.message.suppressions as Array<Record<string, unknown>>;
    expect(list.length).toBeGreaterThanOrEqual(5);
    const gone = list.find((s) => s.email === 'Gone@Example.com')!;
    expect(gone).toEqual({
      id: expect.any(Number),
      email: 'Gone@Example.com',
      type: 'bounce',
      reason: 'hard bounce',
      diagnostic: '5.1.1 smtp; 550 5.1.1 No such user',
      source: 'dsn',
      single_send_utr: sendUtr,
      automation_utr: null,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
      has_message: 1,
    });
    const ids = list.map((s) => s.id as number);
    expect([...ids].sort((x, y) => y - x)).toEqual(ids);
    const complaints = (await api(app, a).get('/suppressions/list?type=complaint')).body.message.suppressions;
    expect(complaints.map((s: { email: string }) => s.email)).toEqual(['Angry@example.com']);
    const one = (await api(app, a).get('/suppressions/list?email=GONE@example.com')).body.message.suppressions;
    expect(one.map((s: { id: number }) => s.id)).toEqual([gone.id]);
    const page = (await api(app, a).get('/suppressions/list?page=1&per_page=2')).body.message;
    expect(page.suppressions).toHaveLength(2);
    expect(page.pagination).toEqual({ page: 1, per_page: 2, total: list.length });
  });

  it('answers VAL for an unknown type or bad paging, AUTH without keys, and shows nothing of another account', async () => {
    expectVal(await api(app, a).get('/suppressions/list?type=spam'), { type: ['The selected type is invalid.'] });
    expect((await api(app, a).get('/suppressions/list?per_page=0')).status).toBe(422);
    expectAuthMissing(await api(app).get('/suppressions/list'));
    expectSuccess(await api(app, b).get('/suppressions/list'), { suppressions: [] });
  });
});

describe('GET /suppressions/message', () => {
  it('returns the kept report', async () => {
    const sup = await db('suppressions').where({ user_id: a.id, email: 'Gone@Example.com' }).first('id');
    expectSuccess(await api(app, a).get(`/suppressions/message?id=${sup.id}`), { raw: 'Report for gone@example.com' });
  });

  it('is NF1 for another account’s id, an unknown or missing id, and a suppression without a kept report', async () => {
    const sup = await db('suppressions').where({ user_id: a.id, email: 'Gone@Example.com' }).first('id');
    expectNF1(await api(app, b).get(`/suppressions/message?id=${sup.id}`));
    expectNF1(await api(app, a).get('/suppressions/message?id=999999999'));
    expectNF1(await api(app, a).get('/suppressions/message?id=abc'));
    expectNF1(await api(app, a).get('/suppressions/message'));
    await api(app, a).form('/suppressions/add', { emails: 'by-hand@example.com' });
    const manual = await db('suppressions').where({ user_id: a.id, email: 'by-hand@example.com' }).first('id');
    expectNF1(await api(app, a).get(`/suppressions/message?id=${manual.id}`));
  });
});

describe('POST /suppressions/add and DELETE /suppressions/delete', () => {
  it('adds manual suppressions (source api), keeps existing entries, and the rule refuses them', async () => {
    const res = await api(app, a).form('/suppressions/add', { emails: 'm1@example.com, M2@example.com;gone@example.com m1@example.com' });
    expectSuccess(res, 'Added Successfully');
    const rows = await db('suppressions').where({ user_id: a.id }).whereRaw('lower(email) = ANY (?)', [['m1@example.com', 'm2@example.com', 'gone@example.com']]).orderBy('id').select('email', 'type', 'source', 'reason');
    expect(rows).toEqual([
      { email: 'Gone@Example.com', type: 'bounce', source: 'dsn', reason: 'hard bounce' },
      { email: 'm1@example.com', type: 'manual', source: 'api', reason: 'added by API' },
      { email: 'M2@example.com', type: 'manual', source: 'api', reason: 'added by API' },
    ]);
    expect(await suppressedAmong(db, [{ userId: a.id, email: 'm2@example.com', groupId: null }])).toEqual(new Map([[0, 'suppressed']]));
    // Another account's list is untouched; it can add the same address for itself.
    expectSuccess(await api(app, b).json('/suppressions/add', { emails: 'm1@example.com' }), 'Added Successfully');
    expect(await db('suppressions').where({ user_id: b.id }).pluck('email')).toEqual(['m1@example.com']);
  });

  it('answers VAL for a missing or invalid address and adds nothing', async () => {
    expectVal(await api(app, a).form('/suppressions/add', {}), { emails: ['The emails field is required.'] });
    const bad = await api(app, a).form('/suppressions/add', { emails: 'ok@example.com, not-an-address' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.emails[0]).toMatch(/^The emails must be a valid email address/);
    expect(await db('suppressions').where({ user_id: a.id, email: 'ok@example.com' })).toEqual([]);
  });

  it('lifts suppressions (query or body), ignores addresses not on the list, and leaves other accounts alone', async () => {
    expectSuccess(await api(app, a).delete('/suppressions/delete?emails=M1@example.com,nobody@example.com'), 'Deleted Successfully');
    expectSuccess(await api(app, a).delete('/suppressions/delete').type('form').send('emails=m2%40example.com'), 'Deleted Successfully');
    expect(await db('suppressions').where({ user_id: a.id }).whereRaw('lower(email) = ANY (?)', [['m1@example.com', 'm2@example.com']])).toEqual([]);
    expect(await db('suppressions').where({ user_id: b.id }).pluck('email')).toEqual(['m1@example.com']);
    expect(await suppressedAmong(db, [{ userId: a.id, email: 'm1@example.com', groupId: null }])).toEqual(new Map());
  });

  it('answers bad shapes of input with the envelope, never a 500', async () => {
    for (const body of [{ emails: ['x@example.com'] }, { emails: { a: 1 } }, { emails: 42 }, { emails: null }]) {
      const res = await api(app, a).json('/suppressions/add', body);
      expect([200, 422]).toContain(res.status);
      expect(res.body.status).toBe(res.status === 200 ? 'success' : 'failed');
    }
    for (const url of ['/suppressions/list?type[]=bounce', '/suppressions/list?email[a]=b', `/suppressions/list?email=${'a'.repeat(300)}`, '/suppressions/message?id[]=1']) {
      const res = await api(app, a).get(url);
      // `type[]=bounce` reads as `type=bounce` (docs/decisions.md, "Conventions": array spellings are accepted).
      expect([200, 404, 422]).toContain(res.status);
      expect(res.body.status).toBe(res.status === 200 ? 'success' : 'failed');
    }
    const del = await api(app, a).delete('/suppressions/delete').send({ emails: { nested: 'x' } });
    expect(del.status).toBe(422);
  });

  it('answers VAL without addresses and AUTH without keys', async () => {
    expectVal(await api(app, a).delete('/suppressions/delete'), { emails: ['The emails field is required.'] });
    expect((await api(app, a).delete('/suppressions/delete?emails=nope')).status).toBe(422);
    expectAuthMissing(await api(app).delete('/suppressions/delete?emails=a@example.com'));
    expectAuthMissing(await api(app).form('/suppressions/add', { emails: 'a@example.com' }));
  });
});
