import { LAST_OWNER } from '../../src/resources/users/users.service';
import { refusedMessage } from '../../src/team/permissions';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { addMember, signInAs, type SignedIn } from '../helpers/team';

/**
 * The dashboard's Team page (/app/team) and Activity page (/app/activity), issue 37: what each role
 * sees, every form of the Team page through its API route (the route's rules and words), the
 * sessions a change ends, the audit entries with the signed-in user, and another account's ids.
 */
const { app, db, mailer } = setupApp();
let account: TestAccount;
let other: TestAccount;
let owner: SignedIn;
let admin: SignedIn;

beforeAll(async () => {
  account = await makeAccount(db, 'Team pages');
  other = await makeAccount(db, 'Elsewhere');
  owner = await signInAs(app, db, account.id, 'owner');
  admin = await signInAs(app, db, account.id, 'admin');
});
beforeEach(() => mailer.clear());

const unescape = (html: string) => html.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n))).replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>');
const post = (who: SignedIn, path: string, fields: Record<string, string | number> = {}) =>
  who.agent
    .post(path)
    .type('form')
    .send({ _csrf: who.csrf, ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)])) });
const lastAudit = () => db('audit_log').where({ user_id: account.id }).orderBy('id', 'desc').first();

describe('the navigation', () => {
  it('shows Team and Activity only to roles that may open them', async () => {
    const links = async (who: SignedIn) => {
      const html = (await who.agent.get('/app/sends')).text;
      return { team: html.includes('href="/app/team"'), activity: html.includes('href="/app/activity"') };
    };
    expect(await links(owner)).toEqual({ team: true, activity: true });
    expect(await links(admin)).toEqual({ team: true, activity: true });
    for (const role of ['sender', 'editor', 'viewer'] as const) {
      expect({ role, ...(await links(await signInAs(app, db, account.id, role))) }).toEqual({ role, team: false, activity: false });
    }
  });
});

describe('GET /app/team', () => {
  it('the owner sees every user with role and status, the invitation form and the second-factor switch', async () => {
    const invited = await addMember(db, account.id, 'viewer', { password: null });
    const res = await owner.agent.get('/app/team');
    expect(res.status).toBe(200);
    const html = unescape(res.text);
    expect(html).toContain(owner.member.email);
    expect(html).toContain(invited.email);
    expect(html).toContain('data-status="invited"');
    expect(html).toContain('action="/app/team/invite"');
    expect(html).toContain('action="/app/team/two-factor"');
    expect(html).toContain(`action="/app/team/${invited.id}/resend"`);
    expect(html).toContain('<option value="owner"');
    expect(html).toContain('href="/app/team"');
    expect(html).toContain('href="/app/activity"');
    expect(html).toContain(`href="/app/activity?user=${invited.id}"`);
    expect(res.text).not.toMatch(/password_hash|totp_secret/);
  });

  it('an admin sees no switch, cannot act on an owner, and cannot give the owner role', async () => {
    const res = await admin.agent.get('/app/team');
    expect(res.status).toBe(200);
    const html = unescape(res.text);
    expect(html).not.toContain('action="/app/team/two-factor"');
    expect(html).not.toContain(`action="/app/team/${owner.member.id}/role"`);
    expect(html).toContain('Only an owner changes an owner.');
    expect(html).not.toContain('<option value="owner"');
  });

  it('refuses the roles without users:manage (403, naming it); the Activity page those without audit:read', async () => {
    for (const role of ['sender', 'editor', 'viewer'] as const) {
      const who = await signInAs(app, db, account.id, role);
      const team = await who.agent.get('/app/team');
      expect({ role, status: team.status }).toEqual({ role, status: 403 });
      expect(unescape(team.text)).toContain(refusedMessage('users:manage'));
      const activity = await who.agent.get('/app/activity');
      expect({ role, status: activity.status }).toEqual({ role, status: 403 });
      expect(unescape(activity.text)).toContain(refusedMessage('audit:read'));
      expect((await post(who, '/app/team/invite', { email: 'x@team-pages.test', role: 'viewer' })).status).toBe(403);
    }
  });
});

describe('the Team page’s forms', () => {
  it('invites: the mail goes, the page says so; the entry names the signed-in user', async () => {
    const email = `invitee.${Date.now()}@team-pages.test`;
    const res = await post(admin, '/app/team/invite', { email, name: 'Grace', role: 'sender' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app/team?done=invited');
    expect(mailer.sent.map((m) => m.to)).toEqual([email]);
    expect(await lastAudit()).toMatchObject({ action: 'user.invited', member_id: admin.member.id, actor: admin.member.email, via: 'dashboard', summary: `${email} as sender` });
    expect(unescape((await admin.agent.get(res.headers.location)).text)).toContain('The invitation is on its way');
  });

  it('a refused invitation comes back with what was typed and the API’s words beside the fields', async () => {
    const res = await post(owner, '/app/team/invite', { email: 'not an address', name: 'Typed name', role: 'viewer' });
    expect(res.status).toBe(422);
    const html = unescape(res.text);
    expect(html).toContain('The email must be a valid email address.');
    expect(html).toContain('value="Typed name"');
    expect(mailer.sent).toHaveLength(0);
    const owners = await post(admin, '/app/team/invite', { email: `o.${Date.now()}@team-pages.test`, role: 'owner' });
    expect(owners.status).toBe(403);
    expect(unescape(owners.text)).toContain(refusedMessage('account:manage'));
  });

  it('changes a role and ends that user’s sessions; an admin cannot change an owner', async () => {
    const target = await signInAs(app, db, account.id, 'viewer');
    expect((await target.agent.get('/app')).status).toBe(200);
    const res = await post(owner, `/app/team/${target.member.id}/role`, { role: 'editor' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app/team?done=role');
    expect((await db('members').where({ user_id: account.id, id: target.member.id }).first()).role).toBe('editor');
    // The target's session is over: the sign-in page, saying so.
    const after = await target.agent.get('/app');
    expect(after.text).toContain('Your session has ended');
    expect(await lastAudit()).toMatchObject({ action: 'user.role_changed', member_id: owner.member.id, summary: `${target.member.email}: viewer → editor` });

    const refused = await post(admin, `/app/team/${owner.member.id}/role`, { role: 'viewer' });
    expect(refused.status).toBe(403);
    expect(unescape(refused.text)).toContain(refusedMessage('account:manage'));
  });

  it('removes after a confirmation page; the last owner stays (the API’s words on the page)', async () => {
    const target = await addMember(db, account.id, 'editor');
    const confirm = await owner.agent.get(`/app/team/${target.id}/remove`);
    expect(confirm.status).toBe(200);
    expect(unescape(confirm.text)).toContain(`Remove ${target.member.name} (${target.email})?`);
    expect(confirm.text).toContain(`action="/app/team/${target.id}/remove"`);
    const res = await post(owner, `/app/team/${target.id}/remove`);
    expect(res.status).toBe(303);
    expect(await db('members').where({ user_id: account.id, id: target.id }).first()).toBeUndefined();
    expect(await lastAudit()).toMatchObject({ action: 'user.removed', member_id: owner.member.id, object_id: String(target.id) });

    const alone = await makeAccount(db, 'Alone');
    const soleOwner = await signInAs(app, db, alone.id, 'owner');
    const last = await post(soleOwner, `/app/team/${soleOwner.member.id}/remove`);
    expect(last.status).toBe(422);
    expect(unescape(last.text)).toContain(LAST_OWNER);
  });

  it('resets a second factor and resends an invitation', async () => {
    const withTotp = await addMember(db, account.id, 'sender', { totp: true });
    expect((await post(owner, `/app/team/${withTotp.id}/reset-two-factor`)).headers.location).toBe('/app/team?done=reset');
    expect((await db('members').where({ user_id: account.id, id: withTotp.id }).first()).totp_secret).toBeNull();
    const invited = await addMember(db, account.id, 'viewer', { password: null });
    expect((await post(admin, `/app/team/${invited.id}/resend`)).headers.location).toBe('/app/team?done=resent');
    expect(mailer.sent.map((m) => m.to)).toEqual([invited.email]);
  });

  it('the owner requires a second factor of everybody; an admin may not', async () => {
    // An account of its own: once it is required, its users without a second factor are sent to set one up.
    const strict = await makeAccount(db, 'Strict');
    const strictOwner = await signInAs(app, db, strict.id, 'owner');
    const strictAdmin = await signInAs(app, db, strict.id, 'admin');
    // Both have a second factor (set here rather than signing in with a code: this test is not about TOTP).
    await db('members').where({ user_id: strict.id }).update({ totp_secret: Buffer.from('set') });
    expect((await post(strictAdmin, '/app/team/two-factor', { required: '1' })).status).toBe(403);
    const res = await post(strictOwner, '/app/team/two-factor', { required: '1' });
    expect(res.headers.location).toBe('/app/team?done=two-factor-on');
    expect((await db('accounts').where({ id: strict.id }).first()).require_two_factor).toBe(true);
    expect(await db('audit_log').where({ user_id: strict.id }).orderBy('id', 'desc').first()).toMatchObject({ action: 'account.two_factor_changed', member_id: strictOwner.member.id });
    expect(unescape((await strictOwner.agent.get('/app/team')).text)).toMatch(/id="field-required"[^>]*checked/);
    // Unchecked: the box sends nothing.
    expect((await post(strictOwner, '/app/team/two-factor')).headers.location).toBe('/app/team?done=two-factor-off');
    expect((await db('accounts').where({ id: strict.id }).first()).require_two_factor).toBe(false);
  });

  it('another account’s user id in the URL is not found, and nothing changes', async () => {
    const theirs = await addMember(db, other.id, 'viewer');
    for (const path of [`/app/team/${theirs.id}/role`, `/app/team/${theirs.id}/remove`, `/app/team/${theirs.id}/reset-two-factor`, `/app/team/${theirs.id}/resend`]) {
      const res = await post(owner, path, { role: 'admin' });
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
    }
    expect((await owner.agent.get(`/app/team/${theirs.id}/remove`)).status).toBe(404);
    expect(await db('members').where({ user_id: other.id, id: theirs.id }).first()).toMatchObject({ role: 'viewer' });
  });

  it('refuses a form without the page’s token', async () => {
    const res = await owner.agent.post('/app/team/invite').type('form').send({ email: 'no-token@team-pages.test', role: 'viewer' });
    expect(res.status).toBe(403);
    expect(mailer.sent).toHaveLength(0);
  });
});

describe('GET /app/activity', () => {
  it('shows the log newest first, filtered by user, action and time, a page at a time', async () => {
    const acct = await makeAccount(db, 'Activity');
    const me = await signInAs(app, db, acct.id, 'admin');
    const rows = Array.from({ length: 55 }, (_, i) => ({
      user_id: acct.id,
      member_id: i % 2 ? me.member.id : null,
      actor: i % 2 ? me.member.email : 'API keys',
      via: i % 2 ? 'dashboard' : 'api',
      action: i % 3 ? 'single_send.scheduled' : 'contact.erased',
      object_kind: 'single_send',
      object_id: `obj-${i}`,
      summary: `entry ${i}`,
      at: db.raw(`now() - make_interval(mins => ?)`, [60 - i]),
    }));
    await db('audit_log').insert(rows);
    const first = await me.agent.get('/app/activity');
    expect(first.status).toBe(200);
    expect(first.text).toContain('entry 54');
    expect(first.text).not.toContain('entry 4<');
    expect(first.text.indexOf('entry 54')).toBeLessThan(first.text.indexOf('entry 53'));
    expect(unescape(first.text)).toContain('page 1 of 2');
    const second = await me.agent.get('/app/activity?page=2');
    expect(second.text).toContain('entry 0<');

    const keys = await me.agent.get('/app/activity?user=keys&action=contact.');
    const shown = [...keys.text.matchAll(/entry (\d+)</g)].map((m) => Number(m[1]));
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.every((i) => i % 2 === 0 && i % 3 === 0)).toBe(true);

    const mine = await me.agent.get(`/app/activity?user=${me.member.id}&since=${encodeURIComponent(new Date(Date.now() - 10 * 60_000).toISOString())}`);
    const recent = [...mine.text.matchAll(/entry (\d+)</g)].map((m) => Number(m[1]));
    expect(recent.length).toBeGreaterThan(0);
    expect(recent.every((i) => i % 2 === 1 && i >= 49)).toBe(true);

    const bad = await me.agent.get('/app/activity?since=yesterday&action=Bad!');
    expect(bad.status).toBe(422);
    expect(unescape(bad.text)).toContain('The since is not a valid date.');
    expect(unescape(bad.text)).toContain('The action format is invalid.');
  });
});
