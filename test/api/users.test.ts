import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Actor } from '../../src/context';
import { AppError } from '../../src/http/errors';
import { runRoute } from '../../src/http/routes';
import { createLogger } from '../../src/logger';
import { userRoutes } from '../../src/resources/users/users.router';
import { invitation, userRecord } from '../../src/resources/users/users.schemas';
import { LAST_OWNER, NOT_INVITED, TAKEN } from '../../src/resources/users/users.service';
import { peekToken } from '../../src/team/members';
import { refusedMessage, type Role } from '../../src/team/permissions';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectNF1, expectSuccess, expectVal } from '../helpers/expect';
import { addMember, type AddedMember } from '../helpers/team';

/**
 * The users routes (issue 37) with the API keys (which act as the owner), and as other roles
 * through runRoute (what a dashboard session does): success, each failure, another account's ids
 * (404), the owner rules, the sessions a change ends, and the audit entry of each change.
 */
const { app, db, config, mailer } = setupApp();
const deps = { config, db, mailer, logger: createLogger('silent') };
let a: TestAccount;
let b: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db, 'Team');
  b = await makeAccount(db, 'Other team');
});
beforeEach(() => mailer.clear());

const uniqueEmail = (tag: string) => `${tag}.${randomBytes(4).toString('hex')}@users.test`;

/** A dashboard session of the user (what signing in makes), to see which changes end it. */
async function addSession(account: TestAccount, memberId: number): Promise<Buffer> {
  const token_hash = randomBytes(32);
  await db('dashboard_sessions').insert({ user_id: account.id, token_hash, public_key: account.public_key, csrf_token: randomBytes(16).toString('hex'), member_id: memberId, via: 'password' });
  return token_hash;
}
const sessionsOf = async (account: TestAccount, memberId: number) => Number((await db('dashboard_sessions').where({ user_id: account.id, member_id: memberId }).count({ n: '*' }).first())?.n);

const lastAudit = (account: TestAccount) => db('audit_log').where({ user_id: account.id }).orderBy('id', 'desc').first();

/** A route run as a signed-in user of `role` (a dashboard session's actor). */
async function asUser(account: TestAccount, who: AddedMember, path: string, body: Record<string, unknown>) {
  const def = userRoutes.find((d) => d.path === path)!;
  const actor: Actor = { memberId: who.id, role: who.role, label: who.email, via: 'dashboard', address: '127.0.0.1' };
  try {
    const envelope = await runRoute(def, { query: {}, body }, { ctx: { userId: account.id, db, actor }, deps, req: {} as Request, res: {} as Response });
    return { status: 200, envelope };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { status: err.status, errors: err.errors };
  }
}

async function invite(account: TestAccount, role: Role, email = uniqueEmail(role)) {
  const res = await api(app, account).form('/users/invite', { email, role, name: `New ${role}` });
  expectSuccess(res);
  return res.body.message as { user: { id: number; email: string }; expires_at: string };
}

describe('GET /users', () => {
  it('lists the account’s users with role, status and second factor, never a hash or a secret; not another account’s', async () => {
    const account = await makeAccount(db, 'Listing');
    const active = await addMember(db, account.id, 'owner', { totp: true });
    const invited = await addMember(db, account.id, 'viewer', { password: null });
    await addMember(db, b.id, 'admin');
    const res = await api(app, account).get('/users');
    expectSuccess(res);
    const users = res.body.message.users as unknown[];
    expect(users).toHaveLength(2);
    users.forEach((u) => expectShape(userRecord, u));
    expect(users).toEqual([
      expect.objectContaining({ id: active.id, email: active.email, role: 'owner', status: 'active', two_factor: true, last_sign_in_at: null }),
      expect.objectContaining({ id: invited.id, email: invited.email, role: 'viewer', status: 'invited', two_factor: false }),
    ]);
    expect(res.text).not.toMatch(/hash|secret|recovery|totp/i);
  });
});

describe('POST /users/invite', () => {
  it('adds an invited user and mails a one-time link valid 72 hours; the answer has the expiry, never the link; audited as the API keys', async () => {
    const email = uniqueEmail('Invitee');
    const res = await api(app, a).form('/users/invite', { email, name: 'Ada', role: 'editor' });
    expectSuccess(res);
    const answer = expectShape(invitation, res.body.message);
    expect(answer.user).toMatchObject({ email, name: 'Ada', role: 'editor', status: 'invited', two_factor: false });
    const hours = (Date.parse(answer.expires_at) - Date.now()) / 3600_000;
    expect(hours).toBeGreaterThan(71.9);
    expect(hours).toBeLessThanOrEqual(72);

    const [mail] = await mailer.parsed();
    expect(mailer.sent).toHaveLength(1);
    expect(mail.to).toMatchObject({ value: [expect.objectContaining({ address: email })] });
    const link = /http:\/\/herald\.test\/app\/welcome\/(\d+\.[A-Za-z0-9_-]{43})/.exec(String(mail.text))?.[1];
    expect(link).toBeDefined();
    expect(res.text).not.toContain(link!.split('.')[1]);
    expect(await peekToken(db, link!, ['invite'])).toEqual({ userId: a.id, memberId: answer.user.id, purpose: 'invite' });

    expect(await lastAudit(a)).toMatchObject({ action: 'user.invited', member_id: null, actor: 'API keys', via: 'api', object_kind: 'user', object_id: String(answer.user.id), summary: `${email} as editor` });
    expect((await lastAudit(a)).summary).not.toContain(link!.split('.')[1]);
  });

  it('VAL: email and role required, a valid address, a known role, an address that is nobody’s yet (any account)', async () => {
    expectVal(await api(app, a).form('/users/invite', {}), { email: ['The email field is required.'], role: ['The role field is required.'] });
    expectVal(await api(app, a).form('/users/invite', { email: 'not-an-address', role: 'boss' }), {
      email: ['The email must be a valid email address.'],
      role: ['The selected role is invalid.'],
    });
    const mine = await addMember(db, a.id, 'viewer');
    const theirs = await addMember(db, b.id, 'viewer');
    expectVal(await api(app, a).form('/users/invite', { email: mine.email.toUpperCase(), role: 'viewer' }), { email: [TAKEN] });
    expectVal(await api(app, a).form('/users/invite', { email: theirs.email, role: 'viewer' }), { email: [TAKEN] });
    expect(mailer.sent).toHaveLength(0);
  });

  it('keeps nothing when the mail server refuses the invitation (503, Retry-After)', async () => {
    const email = uniqueEmail('unlucky');
    const send = jest.spyOn(mailer, 'send').mockRejectedValueOnce(new Error('421 try later'));
    try {
      const res = await api(app, a).form('/users/invite', { email, role: 'viewer' });
      expect({ status: res.status, body: res.body, retry: res.headers['retry-after'] }).toEqual({
        status: 503,
        body: { status: 'failed', errors: 'The invitation mail could not be sent. Try again later.' },
        retry: '60',
      });
    } finally {
      send.mockRestore();
    }
    expect(await db('members').where({ user_id: a.id, email }).first()).toBeUndefined();
    expect(await db('member_logins').where({ email }).first()).toBeUndefined();
    expect(await db('audit_log').where({ user_id: a.id, action: 'user.invited' }).whereLike('summary', `${email}%`).first()).toBeUndefined();
  });

  it('an admin invites any role but owner; inviting an owner needs account:manage', async () => {
    const admin = await addMember(db, a.id, 'admin');
    const made = await asUser(a, admin, '/users/invite', { email: uniqueEmail('by-admin'), role: 'admin' });
    expect(made.status).toBe(200);
    expect(await lastAudit(a)).toMatchObject({ action: 'user.invited', member_id: admin.id, actor: admin.email, via: 'dashboard', address: '127.0.0.1' });
    expect(await asUser(a, admin, '/users/invite', { email: uniqueEmail('owner-by-admin'), role: 'owner' })).toEqual({ status: 403, errors: refusedMessage('account:manage') });
    const editor = await addMember(db, a.id, 'editor');
    expect(await asUser(a, editor, '/users/invite', { email: uniqueEmail('by-editor'), role: 'viewer' })).toEqual({ status: 403, errors: refusedMessage('users:manage') });
  });
});

describe('POST /users/resend-invitation', () => {
  it('mails a new link; the earlier one stops working; audited', async () => {
    const { user } = await invite(a, 'viewer');
    const first = /\/app\/welcome\/(\S+)/.exec(String((await mailer.parsed())[0].text))![1].replace(/[^\w.-].*$/, '');
    mailer.clear();
    const res = await api(app, a).form('/users/resend-invitation', { id: user.id });
    expectSuccess(res);
    expectShape(invitation, res.body.message);
    const second = /\/app\/welcome\/(\S+)/.exec(String((await mailer.parsed())[0].text))![1].replace(/[^\w.-].*$/, '');
    expect(second).not.toBe(first);
    expect(await peekToken(db, first, ['invite'])).toBeUndefined();
    expect(await peekToken(db, second, ['invite'])).toMatchObject({ memberId: user.id });
    expect(await lastAudit(a)).toMatchObject({ action: 'user.invitation_resent', object_id: String(user.id), summary: user.email, actor: 'API keys' });
  });

  it('refuses a user who set a password (422), an id of another account or none (404), a missing id (VAL)', async () => {
    const active = await addMember(db, a.id, 'viewer');
    const res = await api(app, a).form('/users/resend-invitation', { id: active.id });
    expect({ status: res.status, body: res.body }).toEqual({ status: 422, body: { status: 'failed', errors: NOT_INVITED } });
    const theirs = await addMember(db, b.id, 'viewer', { password: null });
    expectNF1(await api(app, a).form('/users/resend-invitation', { id: theirs.id }));
    expectNF1(await api(app, a).form('/users/resend-invitation', { id: 2_000_000_000 }));
    expectNF1(await api(app, a).form('/users/resend-invitation', { id: 'abc' }));
    expectVal(await api(app, a).form('/users/resend-invitation', {}), { id: ['The id field is required.'] });
    expect(mailer.sent).toHaveLength(0);
  });
});

describe('POST /users/role', () => {
  it('changes the role and ends the user’s sessions (not others’); audited with both roles', async () => {
    const user = await addMember(db, a.id, 'viewer');
    const other = await addMember(db, a.id, 'viewer');
    await addSession(a, user.id);
    await addSession(a, user.id);
    await addSession(a, other.id);
    expectSuccess(await api(app, a).form('/users/role', { id: user.id, role: 'sender' }), 'Updated Successfully');
    expect((await db('members').where({ user_id: a.id, id: user.id }).first()).role).toBe('sender');
    expect(await sessionsOf(a, user.id)).toBe(0);
    expect(await sessionsOf(a, other.id)).toBe(1);
    expect(await lastAudit(a)).toMatchObject({ action: 'user.role_changed', object_kind: 'user', object_id: String(user.id), summary: `${user.email}: viewer → sender` });
  });

  it('VAL for a missing or unknown role and a missing id; 404 for another account’s user', async () => {
    const user = await addMember(db, a.id, 'viewer');
    expectVal(await api(app, a).form('/users/role', { id: user.id }), { role: ['The role field is required.'] });
    expectVal(await api(app, a).form('/users/role', { id: user.id, role: 'superuser' }), { role: ['The selected role is invalid.'] });
    expectVal(await api(app, a).form('/users/role', { role: 'viewer' }), { id: ['The id field is required.'] });
    const theirs = await addMember(db, b.id, 'viewer');
    await addSession(b, theirs.id);
    expectNF1(await api(app, a).form('/users/role', { id: theirs.id, role: 'admin' }));
    expect((await db('members').where({ user_id: b.id, id: theirs.id }).first()).role).toBe('viewer');
    expect(await sessionsOf(b, theirs.id)).toBe(1);
  });

  it('keeps an owner: the last owner is not demoted; with a second owner (with a password) it is', async () => {
    const account = await makeAccount(db, 'Owners');
    const first = await addMember(db, account.id, 'owner');
    const res = await api(app, account).form('/users/role', { id: first.id, role: 'admin' });
    expect({ status: res.status, body: res.body }).toEqual({ status: 422, body: { status: 'failed', errors: LAST_OWNER } });
    // An invited owner (no password yet) does not stand in for the only owner who has one.
    const invitedOwner = await addMember(db, account.id, 'owner', { password: null });
    expect((await api(app, account).form('/users/role', { id: first.id, role: 'admin' })).status).toBe(422);
    // …but the invited one may go while an owner with a password stays.
    expectSuccess(await api(app, account).form('/users/role', { id: invitedOwner.id, role: 'viewer' }));
    const second = await addMember(db, account.id, 'owner');
    expectSuccess(await api(app, account).form('/users/role', { id: first.id, role: 'admin' }));
    expect((await api(app, account).form('/users/role', { id: second.id, role: 'admin' })).status).toBe(422);
  });

  it('an admin neither changes an owner nor makes one; changes anybody else; an owner does both', async () => {
    const account = await makeAccount(db, 'Admin rules');
    const owner = await addMember(db, account.id, 'owner');
    await addMember(db, account.id, 'owner');
    const admin = await addMember(db, account.id, 'admin');
    const editor = await addMember(db, account.id, 'editor');
    expect(await asUser(account, admin, '/users/role', { id: owner.id, role: 'viewer' })).toEqual({ status: 403, errors: refusedMessage('account:manage') });
    expect(await asUser(account, admin, '/users/role', { id: editor.id, role: 'owner' })).toEqual({ status: 403, errors: refusedMessage('account:manage') });
    expect((await asUser(account, admin, '/users/role', { id: editor.id, role: 'sender' })).status).toBe(200);
    expect(await lastAudit(account)).toMatchObject({ action: 'user.role_changed', member_id: admin.id, actor: admin.email, summary: `${editor.email}: editor → sender` });
    expect((await asUser(account, owner, '/users/role', { id: editor.id, role: 'owner' })).status).toBe(200);
    expect((await asUser(account, owner, '/users/role', { id: editor.id, role: 'viewer' })).status).toBe(200);
    expect((await db('members').where({ user_id: account.id, id: owner.id }).first()).role).toBe('owner');
  });
});

describe('POST /users/delete', () => {
  it('removes the user, their sign-in address, links and sessions; their audit entries stay', async () => {
    const { user } = await invite(a, 'editor');
    const member = await addMember(db, a.id, 'sender');
    await addSession(a, member.id);
    await db('audit_log').insert({ user_id: a.id, member_id: member.id, actor: member.email, via: 'dashboard', action: 'design.created', summary: 'x' });
    expectSuccess(await api(app, a).form('/users/delete', { id: member.id }), 'Deleted Successfully');
    expect(await db('members').where({ user_id: a.id, id: member.id }).first()).toBeUndefined();
    expect(await db('member_logins').where({ email: member.email.toLowerCase() }).first()).toBeUndefined();
    expect(await sessionsOf(a, member.id)).toBe(0);
    expect(await db('audit_log').where({ user_id: a.id, member_id: member.id, action: 'design.created' }).first()).toBeDefined();
    expect(await lastAudit(a)).toMatchObject({ action: 'user.removed', object_id: String(member.id), summary: `${member.email} (sender)`, actor: 'API keys' });

    expectSuccess(await api(app, a).form('/users/delete', { id: user.id }));
    expect(await db('member_tokens').where({ user_id: a.id, member_id: user.id }).first()).toBeUndefined();
    // The address is free again.
    await invite(a, 'viewer', user.email);
  });

  it('404 for another account’s user and an unknown id; VAL without an id; the last owner stays', async () => {
    const theirs = await addMember(db, b.id, 'viewer');
    expectNF1(await api(app, a).form('/users/delete', { id: theirs.id }));
    expect(await db('members').where({ user_id: b.id, id: theirs.id }).first()).toBeDefined();
    expectNF1(await api(app, a).form('/users/delete', { id: 2_000_000_001 }));
    expectVal(await api(app, a).form('/users/delete', {}), { id: ['The id field is required.'] });

    const account = await makeAccount(db, 'Sole owner');
    const owner = await addMember(db, account.id, 'owner');
    const res = await api(app, account).form('/users/delete', { id: owner.id });
    expect({ status: res.status, body: res.body }).toEqual({ status: 422, body: { status: 'failed', errors: LAST_OWNER } });
    const admin = await addMember(db, account.id, 'admin');
    expect(await asUser(account, admin, '/users/delete', { id: owner.id })).toEqual({ status: 403, errors: refusedMessage('account:manage') });
    expect(await db('members').where({ user_id: account.id, id: owner.id }).first()).toBeDefined();
  });
});

describe('POST /users/reset-two-factor', () => {
  it('clears TOTP and recovery codes and ends the user’s sessions; audited', async () => {
    const user = await addMember(db, a.id, 'editor', { totp: true });
    await db('members').where({ user_id: a.id, id: user.id }).update({ recovery_codes: ['a', 'b'], totp_last_step: 5 });
    await addSession(a, user.id);
    expectSuccess(await api(app, a).form('/users/reset-two-factor', { id: user.id }), 'Updated Successfully');
    expect(await db('members').where({ user_id: a.id, id: user.id }).first('totp_secret', 'totp_pending', 'totp_last_step', 'recovery_codes')).toEqual({
      totp_secret: null,
      totp_pending: null,
      totp_last_step: null,
      recovery_codes: [],
    });
    expect(await sessionsOf(a, user.id)).toBe(0);
    expect(await lastAudit(a)).toMatchObject({ action: 'user.two_factor_reset', object_id: String(user.id), summary: user.email });
  });

  it('404 for another account’s user, VAL without an id; an admin cannot reset an owner’s', async () => {
    const theirs = await addMember(db, b.id, 'editor', { totp: true });
    expectNF1(await api(app, a).form('/users/reset-two-factor', { id: theirs.id }));
    expectVal(await api(app, a).form('/users/reset-two-factor', {}), { id: ['The id field is required.'] });
    expect((await db('members').where({ user_id: b.id, id: theirs.id }).first()).totp_secret).not.toBeNull();
    const owner = await addMember(db, a.id, 'owner', { totp: true });
    const admin = await addMember(db, a.id, 'admin');
    expect(await asUser(a, admin, '/users/reset-two-factor', { id: owner.id })).toEqual({ status: 403, errors: refusedMessage('account:manage') });
  });
});

describe('POST /account/two-factor', () => {
  it('requires a second factor of every user, and turns it off; needs account:manage; audited', async () => {
    const account = await makeAccount(db, 'Strict');
    expectSuccess(await api(app, account).form('/account/two-factor', { required: 1 }), 'Updated Successfully');
    expect((await db('accounts').where({ id: account.id }).first()).require_two_factor).toBe(true);
    expect(await lastAudit(account)).toMatchObject({ action: 'account.two_factor_changed', summary: 'a second factor is required of every user' });
    expect((await db('accounts').where({ id: b.id }).first()).require_two_factor).toBe(false);
    expectSuccess(await api(app, account).json('/account/two-factor', { required: false }));
    expect((await db('accounts').where({ id: account.id }).first()).require_two_factor).toBe(false);
    expectVal(await api(app, account).form('/account/two-factor', {}), { required: ['The required field is required.'] });
    expectVal(await api(app, account).form('/account/two-factor', { required: 'yes' }), { required: ['The selected required is invalid.'] });
    const admin = await addMember(db, account.id, 'admin');
    expect(await asUser(account, admin, '/account/two-factor', { required: 1 })).toEqual({ status: 403, errors: refusedMessage('account:manage') });
  });
});
