import { randomBytes } from 'node:crypto';
import { purgeTeamRows } from '../../src/audit/retention';
import { auditRecord } from '../../src/resources/audit-log/audit-log.router';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess, expectVal } from '../helpers/expect';
import { addMember, type AddedMember } from '../helpers/team';

/**
 * GET /audit-log (issue 37): one account's entries newest first, filtered by user (id, email — also
 * of a user removed since — or the keys), action (exact or a kind's prefix) and time, paged; VAL
 * for each filter; never another account's. And the worker's retention of the teams' rows.
 */
const { app, db } = setupApp();
let a: TestAccount;
let ada: AddedMember;
let ids: number[];

interface Row {
  member_id: number | null;
  actor: string;
  via: 'api' | 'dashboard' | 'cli';
  action: string;
  minutesAgo: number;
}

async function insert(account: TestAccount, rows: Row[]): Promise<number[]> {
  const made = await db('audit_log')
    .insert(
      rows.map((r, i) => ({
        user_id: account.id,
        member_id: r.member_id,
        actor: r.actor,
        via: r.via,
        address: r.via === 'cli' ? null : '203.0.113.9',
        action: r.action,
        object_kind: r.action.split('.')[0],
        object_id: String(i),
        summary: `entry ${i}`,
        at: db.raw(`now() - make_interval(mins => ?)`, [r.minutesAgo]),
      })),
    )
    .returning('id');
  return made.map((m: { id: number }) => Number(m.id));
}

beforeAll(async () => {
  a = await makeAccount(db, 'Audit log');
  ada = await addMember(db, a.id, 'admin', { email: `Ada.${randomBytes(3).toString('hex')}@audit.test` });
  ids = await insert(a, [
    { member_id: null, actor: 'API keys', via: 'api', action: 'single_send.created', minutesAgo: 50 },
    { member_id: ada.id, actor: ada.email, via: 'dashboard', action: 'single_send.scheduled', minutesAgo: 40 },
    { member_id: null, actor: 'operator (CLI)', via: 'cli', action: 'user.created', minutesAgo: 30 },
    { member_id: ada.id, actor: ada.email, via: 'dashboard', action: 'contact.erased', minutesAgo: 20 },
    { member_id: null, actor: 'API keys', via: 'api', action: 'single_sender.x', minutesAgo: 10 },
  ]);
  const other = await makeAccount(db, 'Other log');
  await insert(other, [{ member_id: null, actor: 'API keys', via: 'api', action: 'single_send.created', minutesAgo: 5 }]);
});

const entryIds = async (query: string) => {
  const res = await api(app, a).get(`/audit-log${query}`);
  expectSuccess(res);
  return (res.body.message.entries as Array<{ id: number }>).map((e) => e.id).filter((id) => ids.includes(id));
};

describe('GET /audit-log', () => {
  it('answers the account’s entries newest first, in the documented shape, never another account’s', async () => {
    const res = await api(app, a).get('/audit-log');
    expectSuccess(res);
    const entries = res.body.message.entries as unknown[];
    entries.forEach((e) => expectShape(auditRecord, e));
    expect(entries.map((e) => (e as { id: number }).id)).toEqual([...ids].reverse());
    expect(entries[1]).toMatchObject({ actor: ada.email, actor_user_id: ada.id, via: 'dashboard', address: '203.0.113.9', action: 'contact.erased', object_kind: 'contact', object_id: '3', summary: 'entry 3' });
    expect(entries[2]).toMatchObject({ actor: 'operator (CLI)', actor_user_id: null, via: 'cli', address: null });
    expect(res.body.message.pagination).toBeUndefined();
  });

  it('filters by user: an id, an email (any case; also once the user is removed), or the keys (not the CLI)', async () => {
    expect(await entryIds(`?user=${ada.id}`)).toEqual([ids[3], ids[1]]);
    expect(await entryIds(`?user=${encodeURIComponent(ada.email.toUpperCase())}`)).toEqual([ids[3], ids[1]]);
    expect(await entryIds('?user=keys')).toEqual([ids[4], ids[0]]);
    expect(await entryIds('?user=999999')).toEqual([]);
    await db('members').where({ user_id: a.id, id: ada.id }).delete();
    await db('member_logins').where({ user_id: a.id, member_id: ada.id }).delete();
    expect(await entryIds(`?user=${encodeURIComponent(ada.email)}`)).toEqual([ids[3], ids[1]]);
  });

  it('filters by action (exact, or a kind with its dot, which is not a prefix of another kind) and since', async () => {
    expect(await entryIds('?action=single_send.scheduled')).toEqual([ids[1]]);
    expect(await entryIds('?action=single_send.')).toEqual([ids[1], ids[0]]);
    expect(await entryIds('?action=user.')).toEqual([ids[2]]);
    const since = new Date(Date.now() - 35 * 60_000).toISOString();
    expect(await entryIds(`?since=${encodeURIComponent(since)}`)).toEqual([ids[4], ids[3], ids[2]]);
    expect(await entryIds(`?since=${encodeURIComponent(since)}&action=single_send.`)).toEqual([]);
  });

  it('pages like the other lists', async () => {
    const res = await api(app, a).get('/audit-log?page=2&per_page=2');
    expectSuccess(res);
    expect(res.body.message.pagination).toEqual({ page: 2, per_page: 2, total: 5 });
    expect(res.body.message.entries.map((e: { id: number }) => e.id)).toEqual([ids[2], ids[1]]);
    expectVal(await api(app, a).get('/audit-log?per_page=0'), { per_page: ['The per page must be an integer between 1 and 1000.'] });
  });

  it('VAL for a since that is not a date, a user that is neither id, email nor keys, an action of another shape', async () => {
    expectVal(await api(app, a).get('/audit-log?since=yesterday&user=bob&action=DROP%20TABLE'), {
      since: ['The since is not a valid date.'],
      user: ['The user must be a user id, an email address or keys.'],
      action: ['The action format is invalid.'],
    });
    expectVal(await api(app, a).get('/audit-log?since=2026-13-45'), { since: ['The since is not a valid date.'] });
    expectVal(await api(app, a).get('/audit-log?action=%25'), { action: ['The action format is invalid.'] });
  });
});

describe('retention (the worker, hourly)', () => {
  it('deletes audit entries older than AUDIT_RETENTION_DAYS, expired links and sign-in failures older than a day; nothing newer', async () => {
    const account = await makeAccount(db, 'Retention');
    const [old, kept] = await insert(account, [
      { member_id: null, actor: 'API keys', via: 'api', action: 'contact.erased', minutesAgo: 31 * 24 * 60 },
      { member_id: null, actor: 'API keys', via: 'api', action: 'contact.erased', minutesAgo: 29 * 24 * 60 },
    ]);
    const member = await addMember(db, account.id, 'viewer', { password: null });
    const token = (ago: string) => ({ user_id: account.id, member_id: member.id, token_hash: randomBytes(32), purpose: 'invite', expires_at: db.raw(`now() + interval '${ago}'`) });
    await db('member_tokens').insert([token('-1 minute'), token('1 hour')]);
    const hash = randomBytes(32);
    await db('member_sign_in_failures').insert([
      { email_hash: hash, failed_at: db.raw(`now() - interval '25 hours'`) },
      { email_hash: hash, failed_at: db.raw(`now() - interval '23 hours'`) },
    ]);

    const purged = await purgeTeamRows(db, 30);
    expect(purged.auditEntries).toBeGreaterThanOrEqual(1);
    expect(purged.memberTokens).toBeGreaterThanOrEqual(1);
    expect(purged.signInFailures).toBeGreaterThanOrEqual(1);
    expect((await db('audit_log').where({ user_id: account.id }).pluck('id')).map(Number)).toEqual([kept]);
    expect(old).not.toBe(kept);
    expect(await db('member_tokens').where({ user_id: account.id, member_id: member.id }).count({ n: '*' }).first()).toEqual({ n: 1 });
    expect(await db('member_sign_in_failures').where({ email_hash: hash }).count({ n: '*' }).first()).toEqual({ n: 1 });
    // The other account's entries of this file are minutes old: kept.
    expect(await entryIds('')).toHaveLength(5);
  });
});
