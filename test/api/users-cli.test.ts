import { randomBytes } from 'node:crypto';
import { LAST_OWNER } from '../../src/resources/users/users.service';
import { userRecord } from '../../src/resources/users/users.schemas';
import { createFirstAccount } from '../../src/server';
import { peekToken } from '../../src/team/members';
import { expectShape, makeAccount, setupApp } from '../helpers/app';
import { addMember } from '../helpers/team';
import { runHerald, type CliRun } from '../helpers/cli';

/**
 * The operators' side of issue 37: `herald user list|create|remove|link`, the audit entries the
 * CLI writes ("operator (CLI)") including `account rotate-keys`, and the first start's owner with
 * its setup link printed beside the keys.
 */
const { db, config } = setupApp();

/** `herald <args>` in-process against the test database: what it printed and its exit code (a usage error: exit code 1). */
async function herald(...args: string[]): Promise<CliRun> {
  try {
    return await runHerald(args, { PUBLIC_URL: 'https://herald.example' });
  } catch (caught) {
    // commander's usage errors (exitOverride): what it wrote to stderr, exit code 1.
    if (!(caught instanceof Error && 'exitCode' in caught)) throw caught;
    return { out: '', err: caught.message, exitCode: Number((caught as { exitCode: number }).exitCode) || 1 };
  }
}

const email = (tag: string) => `${tag}.${randomBytes(4).toString('hex')}@cli.test`;
const lastAudit = (userId: number) => db('audit_log').where({ user_id: userId }).orderBy('id', 'desc').first();
const CLI = { member_id: null, actor: 'operator (CLI)', via: 'cli', address: null };

describe('herald user create', () => {
  it('adds a user and prints them with a one-time setup link valid 24 hours; audited as the operator', async () => {
    const account = await makeAccount(db, 'Cli');
    const address = email('Owner');
    const { out, err, exitCode } = await herald('user', 'create', '--account', String(account.id), '--email', address, '--role', 'owner', '--name', 'Olu');
    expect({ err, exitCode }).toEqual({ err: '', exitCode: 0 });
    const printed = JSON.parse(out);
    expect(Object.keys(printed)).toEqual(['user', 'setup_link', 'expires_at']);
    expectShape(userRecord, printed.user);
    expect(printed.user).toMatchObject({ email: address, name: 'Olu', role: 'owner', status: 'invited' });
    expect(printed.setup_link).toMatch(new RegExp(`^https://herald\\.example/app/welcome/${account.id}\\.[A-Za-z0-9_-]{43}$`));
    const hours = (Date.parse(printed.expires_at) - Date.now()) / 3600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
    const link = printed.setup_link.split('/').pop();
    expect(await peekToken(db, link, ['setup'])).toEqual({ userId: account.id, memberId: printed.user.id, purpose: 'setup' });
    expect(await lastAudit(account.id)).toMatchObject({ ...CLI, action: 'user.created', object_id: String(printed.user.id), summary: `${address} as owner, with a setup link` });
    expect((await lastAudit(account.id)).summary).not.toContain(link.split('.')[1]);
  });

  it('refuses a taken address, an unknown role, a bad address and an unknown account (exit code 1, nothing made)', async () => {
    const account = await makeAccount(db, 'Cli refusals');
    const taken = await addMember(db, account.id, 'viewer');
    expect(await herald('user', 'create', '--account', String(account.id), '--email', taken.email, '--role', 'viewer')).toEqual({ out: '', err: 'This email address is already a user’s.\n', exitCode: 1 });
    const role = await herald('user', 'create', '--account', String(account.id), '--email', email('x'), '--role', 'boss');
    expect(role.exitCode).toBe(1);
    expect(role.err).toContain('must be one of owner, admin, sender, editor, viewer');
    const bad = await herald('user', 'create', '--account', String(account.id), '--email', 'not-an-address', '--role', 'viewer');
    expect(bad.exitCode).toBe(1);
    expect(bad.err).toContain('is not an email address');
    expect(await herald('user', 'create', '--account', '2000000000', '--email', email('x'), '--role', 'viewer')).toEqual({ out: '', err: 'No account with id 2000000000\n', exitCode: 1 });
    expect(await db('members').where({ user_id: account.id }).count({ n: '*' }).first()).toEqual({ n: 1 });
  });
});

describe('herald user list', () => {
  it('prints the account’s users (never a hash or a secret)', async () => {
    const account = await makeAccount(db, 'Cli list');
    const one = await addMember(db, account.id, 'owner', { totp: true });
    const two = await addMember(db, account.id, 'viewer', { password: null });
    const { out, err, exitCode } = await herald('user', 'list', '--account', String(account.id));
    expect({ err, exitCode }).toEqual({ err: '', exitCode: 0 });
    const { users } = JSON.parse(out);
    users.forEach((u: unknown) => expectShape(userRecord, u));
    expect(users.map((u: { id: number; status: string; two_factor: boolean }) => [u.id, u.status, u.two_factor])).toEqual([
      [one.id, 'active', true],
      [two.id, 'invited', false],
    ]);
    expect(out).not.toMatch(/hash|secret|recovery/i);
    expect(await herald('user', 'list', '--account', '2000000000')).toEqual({ out: '', err: 'No account with id 2000000000\n', exitCode: 1 });
  });
});

describe('herald user remove', () => {
  it('removes by id or by email, ends their sessions, audited; keeps the last owner; another account’s user is not found', async () => {
    const account = await makeAccount(db, 'Cli remove');
    const owner = await addMember(db, account.id, 'owner');
    const byId = await addMember(db, account.id, 'editor');
    const byEmail = await addMember(db, account.id, 'viewer');
    await db('dashboard_sessions').insert({ user_id: account.id, token_hash: randomBytes(32), public_key: account.public_key, csrf_token: 'x', member_id: byId.id, via: 'password' });

    const first = await herald('user', 'remove', '--account', String(account.id), '--id', String(byId.id));
    expect({ err: first.err, exitCode: first.exitCode }).toEqual({ err: '', exitCode: 0 });
    expect(JSON.parse(first.out).removed).toMatchObject({ id: byId.id, email: byId.email, role: 'editor' });
    expect(await db('dashboard_sessions').where({ user_id: account.id, member_id: byId.id }).first()).toBeUndefined();
    expect(await lastAudit(account.id)).toMatchObject({ ...CLI, action: 'user.removed', object_id: String(byId.id), summary: `${byId.email} (editor)` });

    const second = await herald('user', 'remove', '--account', String(account.id), '--email', byEmail.email.toUpperCase());
    expect(second.exitCode).toBe(0);
    expect(await db('members').where({ user_id: account.id }).pluck('id')).toEqual([owner.id]);

    expect(await herald('user', 'remove', '--account', String(account.id), '--id', String(owner.id))).toEqual({ out: '', err: `${LAST_OWNER}\n`, exitCode: 1 });
    const elsewhere = await makeAccount(db, 'Cli elsewhere');
    const theirs = await addMember(db, elsewhere.id, 'viewer');
    expect(await herald('user', 'remove', '--account', String(account.id), '--id', String(theirs.id))).toEqual({ out: '', err: `No such user in account ${account.id}\n`, exitCode: 1 });
    expect(await herald('user', 'remove', '--account', String(account.id), '--email', theirs.email)).toEqual({ out: '', err: `No such user in account ${account.id}\n`, exitCode: 1 });
    const neither = await herald('user', 'remove', '--account', String(account.id));
    expect(neither.exitCode).toBe(1);
    expect(neither.err).toContain('give --id <id> or --email <email>');
    expect(await db('members').where({ user_id: elsewhere.id, id: theirs.id }).first()).toBeDefined();
  });
});

describe('herald user link', () => {
  it('issues a new setup link for a user without a password (the earlier one stops working)', async () => {
    const account = await makeAccount(db, 'Cli link');
    const made = JSON.parse((await herald('user', 'create', '--account', String(account.id), '--email', email('late'), '--role', 'owner')).out);
    const { out, exitCode } = await herald('user', 'link', '--account', String(account.id), '--email', made.user.email);
    expect(exitCode).toBe(0);
    const again = JSON.parse(out);
    expect(Object.keys(again)).toEqual(['user', 'purpose', 'link', 'expires_at']);
    expect(again.purpose).toBe('setup');
    expect(again.link).toMatch(new RegExp(`^https://herald\\.example/app/welcome/${account.id}\\.[A-Za-z0-9_-]{43}$`));
    expect(again.link).not.toBe(made.setup_link);
    expect(await peekToken(db, made.setup_link.split('/').pop(), ['setup'])).toBeUndefined();
    expect(await peekToken(db, again.link.split('/').pop(), ['setup'])).toMatchObject({ memberId: made.user.id });
    expect(await lastAudit(account.id)).toMatchObject({ ...CLI, action: 'user.setup_link_issued', object_id: String(made.user.id) });
  });

  it('gives a user who has a password a password-reset link valid 1 hour instead', async () => {
    const account = await makeAccount(db, 'Cli reset link');
    const active = await addMember(db, account.id, 'viewer');
    const { out, exitCode } = await herald('user', 'link', '--account', String(account.id), '--id', String(active.id));
    expect(exitCode).toBe(0);
    const printed = JSON.parse(out);
    expect(printed.purpose).toBe('reset');
    expect(printed.link).toMatch(new RegExp(`^https://herald\\.example/app/reset/${account.id}\\.[A-Za-z0-9_-]{43}$`));
    const hours = (new Date(printed.expires_at).getTime() - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(0.9);
    expect(hours).toBeLessThanOrEqual(1.01);
    expect(await peekToken(db, printed.link.split('/').pop(), ['reset'])).toMatchObject({ memberId: active.id, purpose: 'reset' });
    expect(await peekToken(db, printed.link.split('/').pop(), ['setup', 'invite'])).toBeUndefined();
    expect(await lastAudit(account.id)).toMatchObject({ ...CLI, action: 'user.reset_link_issued', object_id: String(active.id) });
    const other = await makeAccount(db, 'Cli reset other');
    const refused = await herald('user', 'link', '--account', String(other.id), '--id', String(active.id));
    expect(refused.exitCode).toBe(1);
    expect(refused.err).toContain(`No such user in account ${other.id}`);
  });
});

describe('herald account rotate-keys', () => {
  it('writes account.keys_rotated as the operator', async () => {
    const account = await makeAccount(db, 'Cli rotate');
    const { exitCode } = await herald('account', 'rotate-keys', '--id', String(account.id));
    expect(exitCode).toBe(0);
    expect(await lastAudit(account.id)).toMatchObject({ ...CLI, action: 'account.keys_rotated', object_kind: 'account', object_id: String(account.id) });
    expect((await lastAudit(account.id)).summary).not.toMatch(/[A-Za-z0-9]{24,}/);
  });
});

describe('first start', () => {
  it('creates the account’s owner (no password yet) and prints a one-time setup link (24 hours) beside the keys', async () => {
    // The first account's address is a user of that account only: an earlier run's is cleared first.
    const earlier = await db('member_logins').where({ email: 'admin@localhost' }).pluck('user_id');
    if (earlier.length) await db('accounts').whereIn('id', earlier).delete();
    let printed = '';
    const { id } = await createFirstAccount(db, config, (text) => (printed += text));
    try {
      const owners = await db('members').where({ user_id: id });
      expect(owners).toHaveLength(1);
      expect(owners[0]).toMatchObject({ email: 'admin@localhost', role: 'owner', password_hash: null });
      const link = /(http:\/\/herald\.test\/app\/welcome\/(\d+\.[A-Za-z0-9_-]{43}))/.exec(printed);
      expect(link).not.toBeNull();
      expect(printed).toMatch(/PublicKey: \S+/);
      expect(printed).toMatch(/SecretKey: \S+/);
      expect(printed).toContain('works once, for 24 hours');
      expect(await peekToken(db, link![2], ['setup'])).toEqual({ userId: id, memberId: owners[0].id, purpose: 'setup' });
      expect(await lastAudit(id)).toMatchObject({ action: 'user.created', actor: 'Herald (first start)', via: 'cli' });
    } finally {
      await db('accounts').where({ id }).delete();
    }
  });
});
