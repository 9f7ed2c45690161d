import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import request from 'supertest';
import { createApp } from '../../src/app';
import { createLogger } from '../../src/logger';
import { createMember, issueToken, unsealText } from '../../src/team/members';
import { verifyPassword } from '../../src/team/passwords';
import { LINK_GONE, RESET_ANSWER, TWO_FACTOR_REQUIRED } from '../../src/team/security';
import { SIGN_IN_REFUSED } from '../../src/team/sign-in';
import { totpCode } from '../../src/team/totp';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { addMember, behindProxy, clientAddress, MEMBER_PASSWORD, nextTotpCode, signInAs, TEST_SEAL, type SignedIn } from '../helpers/team';
import { sleep, waitFor } from '../helpers/wait';
import { cookiesOf, formToken, signIn as signInWithKeys, startSignIn } from '../dashboard/lib/session';

/**
 * A user's own security (issue 37): the setup, invitation and reset links (one use, expiry,
 * tampering), "Your account" (name, password change, sign out everywhere), the second factor
 * (enrolment with a QR code, recovery codes, turning it off, forced enrolment), the absolute
 * session lifetime, and no password or secret in any answer or log line.
 */
const lines: string[] = [];
const { app: herald, db, config, mailer } = setupApp();
/** The same app with a logger whose lines the test reads (debug: everything it says). */
const logged = createApp({
  config,
  db,
  logger: createLogger('debug', new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(chunk.toString()), cb()) }), { pretty: false }),
  mailer,
});
const app = behindProxy(logged);
void herald;

let a: TestAccount;
let b: TestAccount;
beforeAll(async () => {
  [a, b] = await Promise.all([makeAccount(db, 'Account pages'), makeAccount(db, 'Other account')]);
});

/** Everything a test's answers said, to check no password or secret is in them. */
const answers: string[] = [];
const keep = (res: request.Response) => {
  answers.push(res.text ?? '', JSON.stringify(res.headers));
  return res;
};

const pathOf = (url: string) => url.replace(config.publicUrl, '');

const get = async (path: string, s: { cookie: string }) => keep(await request(app).get(path).set('Cookie', s.cookie));
const post = async (path: string, s: { cookie: string; csrf: string }, fields: Record<string, string> = {}) =>
  keep(await request(app).post(path).set('Cookie', s.cookie).set('X-Forwarded-For', clientAddress()).type('form').send({ _csrf: s.csrf, ...fields }));

/** A page before sign-in, then its form posted with the token and cookie it set. */
async function openForm(path: string, fields: Record<string, string>) {
  const page = keep(await request(app).get(path));
  const cookie = `herald_sign_in=${cookiesOf(page).herald_sign_in ?? ''}`;
  const res = keep(await request(app).post(path).set('Cookie', cookie).set('X-Forwarded-For', clientAddress()).type('form').send({ _csrf: formToken(page.text), ...fields }));
  return { page, res };
}

async function passwordSignIn(email: string, password: string, code = '') {
  const start = await startSignIn(app);
  return keep(await request(app).post('/app/sign-in').set('Cookie', start.cookie).set('X-Forwarded-For', clientAddress()).type('form').send({ _csrf: start.token, email, password, code }));
}

const sessionCount = async (userId: number, memberId: number) => Number((await db('dashboard_sessions').where({ user_id: userId, member_id: memberId }).count({ n: '*' }))[0].n);
const audits = (userId: number, action: string) => db('audit_log').where({ user_id: userId, action }).orderBy('id');
const alive = async (s: { cookie: string }) => (await get('/app/account', s)).status === 200;

describe('setup and invitation links', () => {
  it('a setup link sets the first owner’s address, name and password, signs them in, and works once', async () => {
    const owner = await createMember(db, a.id, { email: `first.${process.pid}@team.test`, role: 'owner' });
    const link = await issueToken(db, config, a.id, owner.id, 'setup');
    const page = keep(await request(app).get(pathOf(link.url)));
    expect(page.status).toBe(200);
    expect(page.text).toContain('Set up your user');
    expect(page.text).toMatch(/<input id="field-email" name="email"[^>]*type="email"/);
    const chosen = `Chosen.${process.pid}@team.test`;
    const password = 'a new password for setup';
    const { res } = await openForm(pathOf(link.url), { name: 'Ada Owner', email: chosen, password, password_confirmation: password });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app');
    const cookie = `herald_session=${cookiesOf(res).herald_session}`;
    const home = await get('/app', { cookie });
    expect(home.status).toBe(200);
    expect(home.text).toContain(chosen);
    const row = await db('members').where({ user_id: a.id, id: owner.id }).first();
    expect(row).toMatchObject({ email: chosen, name: 'Ada Owner' });
    expect(await verifyPassword(password, unsealText(TEST_SEAL, row.password_hash))).toBe(true);
    expect((await db('member_logins').where({ email: chosen.toLowerCase() }).first()).member_id).toBe(owner.id);
    expect(await db('member_logins').where({ email: `first.${process.pid}@team.test` }).first()).toBeUndefined();
    expect(await audits(a.id, 'user.setup_completed')).toEqual([expect.objectContaining({ member_id: owner.id, actor: chosen, via: 'dashboard' })]);
    // Once: the page and the form both say the link does not work.
    const again = keep(await request(app).get(pathOf(link.url)));
    expect(again.status).toBe(404);
    expect(again.text).toContain(LINK_GONE);
    expect((await openForm(pathOf(link.url), { name: 'X', email: chosen, password, password_confirmation: password })).page.status).toBe(404);
    expect((await passwordSignIn(chosen, password)).status).toBe(303);
  });

  it('an invitation sets the name and password (not the address); a refused password does not spend the link', async () => {
    const m = await createMember(db, a.id, { email: `invited.${process.pid}@team.test`, role: 'editor' });
    const link = await issueToken(db, config, a.id, m.id, 'invite');
    const page = keep(await request(app).get(pathOf(link.url)));
    expect(page.text).toContain('Accept the invitation');
    expect(page.text).not.toMatch(/name="email"/);
    const short = await openForm(pathOf(link.url), { name: 'Ed', password: 'short', password_confirmation: 'short' });
    expect(short.res.status).toBe(422);
    expect(short.res.text).toContain('The password must be at least 10 characters.');
    expect(short.res.text).not.toContain('value="short"');
    const mismatch = await openForm(pathOf(link.url), { name: 'Ed', password: 'long enough one', password_confirmation: 'long enough two' });
    expect(mismatch.res.status).toBe(422);
    expect(mismatch.res.text).toContain('The password confirmation does not match.');
    const ok = await openForm(pathOf(link.url), { name: 'Ed', email: 'ignored@team.test', password: 'long enough one', password_confirmation: 'long enough one' });
    expect(ok.res.status).toBe(303);
    expect((await db('members').where({ user_id: a.id, id: m.id }).first()).email).toBe(`invited.${process.pid}@team.test`);
    expect((await passwordSignIn(m.email, 'long enough one')).status).toBe(303);
  });

  it('an expired link, a tampered one and one naming another account do not work', async () => {
    const m = await createMember(db, a.id, { email: `late.${process.pid}@team.test`, role: 'viewer' });
    const link = await issueToken(db, config, a.id, m.id, 'invite');
    const path = pathOf(link.url);
    const token = path.split('/').pop()!;
    const [, secret] = token.split('.');
    const last = secret.at(-1) === 'A' ? 'B' : 'A';
    for (const bad of [`/app/welcome/${a.id}.${secret.slice(0, -1)}${last}`, `/app/welcome/${b.id}.${secret}`, `/app/welcome/${token}x`, '/app/welcome/nothing']) {
      const res = keep(await request(app).get(bad));
      expect(res.status).toBe(404);
      expect(res.text).toContain(LINK_GONE);
    }
    await db('member_tokens').where({ user_id: a.id, member_id: m.id }).update({ expires_at: db.raw(`now() - interval '1 second'`) });
    expect(keep(await request(app).get(path)).status).toBe(404);
    // A reset link is not a welcome link.
    await db('members').where({ user_id: a.id, id: m.id }).update({ password_hash: Buffer.from('x') });
    const reset = await issueToken(db, config, a.id, m.id, 'reset');
    expect(keep(await request(app).get(pathOf(reset.url).replace('/app/reset/', '/app/welcome/'))).status).toBe(404);
  });

  it('a link form without its token is refused (403) and spends nothing', async () => {
    const m = await createMember(db, a.id, { email: `csrf.${process.pid}@team.test`, role: 'viewer' });
    const link = await issueToken(db, config, a.id, m.id, 'invite');
    const res = keep(await request(app).post(pathOf(link.url)).type('form').send({ name: 'X', password: 'long enough one', password_confirmation: 'long enough one' }));
    expect(res.status).toBe(403);
    expect(keep(await request(app).get(pathOf(link.url))).status).toBe(200);
  });
});

describe('password reset', () => {
  it('asking always gives the same answer; a user gets a mail with a 1-hour link, which sets the password once and ends every session', async () => {
    const m = await addMember(db, a.id, 'sender');
    const s1 = await signInAs(app, db, a.id, m);
    const s2 = await signInAs(app, db, a.id, m);
    mailer.clear();
    const known = await openForm('/app/reset', { email: m.email.toUpperCase() });
    const unknown = await openForm('/app/reset', { email: `nobody.${process.pid}@team.test` });
    for (const r of [known.res, unknown.res]) {
      expect(r.status).toBe(200);
      expect(r.text).toContain(RESET_ANSWER);
    }
    expect(known.res.text.replace(/value="[^"]*"/g, '')).toBe(unknown.res.text.replace(/value="[^"]*"/g, ''));
    await waitFor('the reset mail', () => mailer.sent.length === 1 || undefined);
    const [mail] = await mailer.parsed();
    expect(mail.to).toMatchObject({ value: [expect.objectContaining({ address: m.email })] });
    const url = new RegExp(`${config.publicUrl}/app/reset/${a.id}\\.[A-Za-z0-9_-]{43}`).exec(mail.text ?? '')![0];
    const expires = await db('member_tokens').where({ user_id: a.id, member_id: m.id, purpose: 'reset' }).first(db.raw(`round(extract(epoch FROM expires_at - created_at))::int AS s`));
    expect(expires.s).toBe(3600);
    // A second ask within a minute mails nothing more.
    await openForm('/app/reset', { email: m.email });
    await sleep(300);
    expect(mailer.sent).toHaveLength(1);

    const password = 'the reset password';
    const { page, res } = await openForm(pathOf(url), { password, password_confirmation: password });
    expect(page.status).toBe(200);
    expect(res.status).toBe(200);
    expect(res.text).toContain('Your password is changed');
    expect(await sessionCount(a.id, m.id)).toBe(0);
    expect(await alive(s1)).toBe(false);
    expect(await alive(s2)).toBe(false);
    expect((await passwordSignIn(m.email, MEMBER_PASSWORD)).status).toBe(401);
    expect((await passwordSignIn(m.email, password)).status).toBe(303);
    expect((await audits(a.id, 'user.password_reset')).filter((e) => e.member_id === m.id)).toHaveLength(1);
    // Once.
    expect(keep(await request(app).get(pathOf(url))).status).toBe(404);
    expect((await openForm(pathOf(url), { password: 'another password', password_confirmation: 'another password' })).page.status).toBe(404);
  });

  it('an expired or tampered reset link does not work', async () => {
    const m = await addMember(db, a.id, 'viewer');
    const link = await issueToken(db, config, a.id, m.id, 'reset');
    const path = pathOf(link.url);
    expect(keep(await request(app).get(`${path.slice(0, -1)}${path.at(-1) === 'A' ? 'B' : 'A'}`)).status).toBe(404);
    await db('member_tokens').where({ user_id: a.id, member_id: m.id, purpose: 'reset' }).update({ expires_at: db.raw(`now() - interval '1 second'`) });
    expect(keep(await request(app).get(path)).status).toBe(404);
  });
});

describe('your account', () => {
  it('changing the password needs the current one and ends the other sessions, not this one', async () => {
    const m = await addMember(db, a.id, 'editor');
    const here = await signInAs(app, db, a.id, m);
    const there = await signInAs(app, db, a.id, m);
    const wrong = await post('/app/account/password', here, { current_password: 'not the password', password: 'brand new password', password_confirmation: 'brand new password' });
    expect(wrong.status).toBe(422);
    expect(wrong.text).toContain('The current password is not right.');
    const res = await post('/app/account/password', here, { current_password: MEMBER_PASSWORD, password: 'brand new password', password_confirmation: 'brand new password' });
    expect(res.status).toBe(200);
    expect(res.text).toContain('Your password is changed. One other session ended.');
    expect(await alive(here)).toBe(true);
    expect(await alive(there)).toBe(false);
    expect((await passwordSignIn(m.email, 'brand new password')).status).toBe(303);
    expect((await audits(a.id, 'user.password_changed')).filter((e) => e.member_id === m.id)).toEqual([expect.objectContaining({ actor: m.email })]);
  });

  it('the name is saved; the page says who is signed in and with which role', async () => {
    const s = await signInAs(app, db, a.id, 'viewer');
    const page = await get('/app/account', s);
    expect(page.text).toContain(s.member.email);
    expect(page.text).toContain('<strong>viewer</strong>');
    const res = await post('/app/account/name', s, { name: 'Vera Viewer' });
    expect(res.status).toBe(200);
    expect((await db('members').where({ user_id: a.id, id: s.member.id }).first()).name).toBe('Vera Viewer');
    expect((await post('/app/account/name', s, { name: ' ' })).status).toBe(422);
  });

  it('signing out ends this session; signing out everywhere ends all of the user’s, and no one else’s', async () => {
    const m = await addMember(db, a.id, 'editor');
    const other = await signInAs(app, db, a.id, 'editor');
    const [s1, s2, s3] = [await signInAs(app, db, a.id, m), await signInAs(app, db, a.id, m), await signInAs(app, db, a.id, m)];
    expect((await post('/app/sign-out', s1)).status).toBe(303);
    expect(await alive(s1)).toBe(false);
    expect(await alive(s2)).toBe(true);
    const res = await post('/app/account/sign-out-everywhere', s2);
    expect(res.status).toBe(303);
    expect(await alive(s2)).toBe(false);
    expect(await alive(s3)).toBe(false);
    expect(await alive(other)).toBe(true);
    expect((await audits(a.id, 'session.signed_out_everywhere')).filter((e) => e.member_id === m.id)).toEqual([expect.objectContaining({ summary: 'Signed out everywhere (2 sessions ended)' })]);
  });

  it('a keys session’s account page says so; its "sign out everywhere" ends the account’s keys sessions only', async () => {
    const k1 = await signInWithKeys(app, a);
    const k2 = await signInWithKeys(app, a);
    const user = await signInAs(app, db, a.id, 'admin');
    const page = await get('/app/account', k1);
    expect(page.status).toBe(200);
    expect(page.text).toContain('You signed in with the account’s keys');
    expect(page.text).toContain('API keys');
    expect((await post('/app/account/sign-out-everywhere', k1)).status).toBe(303);
    expect(await alive(k2)).toBe(false);
    expect(await alive(user)).toBe(true);
    const entry = (await audits(a.id, 'session.signed_in')).find((e) => e.actor === 'API keys');
    expect(entry).toMatchObject({ member_id: null, via: 'dashboard', summary: 'Signed in with the account’s keys, as the owner' });
  });

  it('a session ends DASHBOARD_SESSION_MAX_HOURS (168) after it was opened, however busy', async () => {
    const s = await signInAs(app, db, a.id, 'viewer');
    const token = s.cookie.split('.')[1];
    const key = { user_id: a.id, token_hash: createHash('sha256').update(token).digest() };
    await db('dashboard_sessions').where(key).update({ created_at: db.raw(`now() - interval '167 hours 59 minutes'`) });
    expect(await alive(s)).toBe(true);
    await db('dashboard_sessions').where(key).update({ created_at: db.raw(`now() - interval '168 hours 1 second'`) });
    expect(await alive(s)).toBe(false);
    expect(await db('dashboard_sessions').where(key).first()).toBeUndefined();
  });
});

/** Sets up TOTP through the pages; returns the secret and the recovery codes shown. */
async function enrol(s: SignedIn): Promise<{ secret: string; codes: string[] }> {
  const start = await post('/app/account/two-factor/start', s);
  expect(start.status).toBe(303);
  const page = await get('/app/account/two-factor', s);
  const secret = /<code class="secret">([A-Z2-7]+)<\/code>/.exec(page.text)![1];
  const wrong = await post('/app/account/two-factor/confirm', s, { code: totpCode(secret, Date.now() - 120_000) });
  expect(wrong.status).toBe(422);
  const done = await post('/app/account/two-factor/confirm', s, { code: totpCode(secret) });
  expect(done.status).toBe(200);
  const codes = [...done.text.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map((m) => m[1]);
  return { secret, codes };
}

describe('two-factor sign-in', () => {
  it('is set up with a QR code (an SVG image) and the secret as text, confirmed with a code; ten recovery codes shown once', async () => {
    const s = await signInAs(app, db, a.id, 'editor');
    expect((await get('/app/account/two-factor/qr.svg', s)).status).toBe(404);
    expect((await post('/app/account/two-factor/start', s)).status).toBe(303);
    const qr = await request(app).get('/app/account/two-factor/qr.svg').set('Cookie', s.cookie).buffer(true).parse((res, cb) => {
      let data = '';
      res.on('data', (c: Buffer) => (data += c.toString()));
      res.on('end', () => cb(null, data));
    });
    expect(qr.status).toBe(200);
    expect(qr.headers['content-type']).toMatch(/^image\/svg\+xml/);
    expect(qr.headers['cache-control']).toBe('no-store');
    expect(String(qr.body)).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    const page = await get('/app/account/two-factor', s);
    expect(page.text).toContain('<img class="qr" src="/app/account/two-factor/qr.svg"');
    const secret = /<code class="secret">([A-Z2-7]+)<\/code>/.exec(page.text)![1];
    const done = await post('/app/account/two-factor/confirm', s, { code: totpCode(secret) });
    expect(done.status).toBe(200);
    const codes = [...done.text.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map((m) => m[1]);
    expect(codes).toHaveLength(10);
    const row = await db('members').where({ user_id: a.id, id: s.member.id }).first();
    expect(row.totp_pending).toBeNull();
    expect(unsealText(TEST_SEAL, row.totp_secret)).toBe(secret);
    expect(row.recovery_codes).toHaveLength(10);
    expect(row.recovery_codes.join()).not.toContain(codes[0]);
    // Shown once: the page now says it is on, without the secret or the codes.
    const after = await get('/app/account/two-factor', s);
    expect(after.text).toContain('10 recovery codes left');
    expect(after.text).not.toContain(secret);
    expect(after.text).not.toContain(codes[0]);
    expect((await get('/app/account/two-factor/qr.svg', s)).status).toBe(404);
    expect((await audits(a.id, 'user.two_factor_enabled')).filter((e) => e.member_id === s.member.id)).toHaveLength(1);
    // Signing in now takes a code.
    expect((await passwordSignIn(s.member.email, MEMBER_PASSWORD)).status).toBe(401);
    expect((await passwordSignIn(s.member.email, MEMBER_PASSWORD, await nextTotpCode(db, s.member, secret))).status).toBe(303);
  });

  it('a recovery code signs in once; new codes replace the old ones; turning off takes a code', async () => {
    const s = await signInAs(app, db, a.id, 'sender');
    const { secret, codes } = await enrol(s);
    const first = await passwordSignIn(s.member.email, MEMBER_PASSWORD, codes[0].toUpperCase());
    expect(first.status).toBe(303);
    expect((await audits(a.id, 'session.signed_in')).filter((e) => e.member_id === s.member.id).at(-1)).toMatchObject({ summary: 'Signed in with a password and a recovery code' });
    expect((await passwordSignIn(s.member.email, MEMBER_PASSWORD, codes[0])).status).toBe(401);
    expect((await db('members').where({ user_id: a.id, id: s.member.id }).first()).recovery_codes).toHaveLength(9);

    expect((await post('/app/account/two-factor/recovery-codes', s, { code: '000000' === totpCode(secret) ? '111111' : '000000' })).status).toBe(422);
    const fresh = await post('/app/account/two-factor/recovery-codes', s, { code: await nextTotpCode(db, s.member, secret) });
    expect(fresh.status).toBe(200);
    const newCodes = [...fresh.text.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map((m) => m[1]);
    expect(newCodes).toHaveLength(10);
    expect((await passwordSignIn(s.member.email, MEMBER_PASSWORD, codes[1])).status).toBe(401);
    expect((await passwordSignIn(s.member.email, MEMBER_PASSWORD, newCodes[1])).status).toBe(303);
    expect((await audits(a.id, 'user.recovery_codes_regenerated')).filter((e) => e.member_id === s.member.id)).toHaveLength(1);

    // Turning off: a recovery code works as the confirmation too.
    const off = await post('/app/account/two-factor/disable', s, { code: newCodes[2] });
    expect(off.status).toBe(200);
    expect(off.text).toContain('Two-factor sign-in is off.');
    const row = await db('members').where({ user_id: a.id, id: s.member.id }).first();
    expect(row).toMatchObject({ totp_secret: null, recovery_codes: [] });
    expect((await passwordSignIn(s.member.email, MEMBER_PASSWORD)).status).toBe(303);
    expect((await audits(a.id, 'user.two_factor_disabled')).filter((e) => e.member_id === s.member.id)).toHaveLength(1);
  });

  it('an account that requires a second factor sends a user without one to set it up first; it cannot be turned off there', async () => {
    const c = await makeAccount(db, 'Requires 2FA');
    await db('accounts').where({ id: c.id }).update({ require_two_factor: true });
    const s = await signInAs(app, db, c.id, 'editor');
    for (const path of ['/app', '/app/sends', '/app/account', '/app/contacts']) {
      const res = await get(path, s);
      expect([path, res.status, res.headers.location]).toEqual([path, 303, '/app/account/two-factor']);
    }
    const json = keep(await request(app).get('/app/sends').set('Cookie', s.cookie).set('Accept', 'application/json'));
    expect(json.status).toBe(403);
    expect(json.body).toEqual({ status: 'failed', errors: ['Your account requires a second factor: set one up first.'] });
    expect((await post('/app/account/name', s, { name: 'Sneaky' })).status).toBe(303);
    const page = await get('/app/account/two-factor', s);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Your account requires a second factor: set one up to go on.');
    const { secret } = await enrol(s);
    expect((await get('/app', s)).status).toBe(200);
    const off = await post('/app/account/two-factor/disable', s, { code: await nextTotpCode(db, s.member, secret) });
    expect(off.status).toBe(422);
    expect(off.text).toContain(TWO_FACTOR_REQUIRED);
    expect((await db('members').where({ user_id: c.id, id: s.member.id }).first()).totp_secret).not.toBeNull();
    // A keys session is not sent anywhere (the keys act as the owner).
    const keys = await signInWithKeys(app, c);
    expect((await get('/app', keys)).status).toBe(200);
  });
});

describe('what never leaves', () => {
  it('the request log cuts the one-time token out of a link’s URL and out of the Referer its page’s assets carry', async () => {
    const m = await addMember(db, a.id, 'viewer');
    const { url } = await issueToken(db, config, a.id, m.id, 'reset');
    const path = new URL(url).pathname;
    const token = path.split('/').pop()!;
    const before = lines.length;
    expect((await request(app).get(path)).status).toBe(200);
    await request(app).get('/app/assets/app.css').set('Referer', url);
    await waitFor('both request lines', () => lines.length >= before + 2 || undefined);
    const logged = lines.slice(before).join('\n');
    expect(logged).toContain('/app/reset/[redacted]');
    expect(logged.includes(token.split('.')[1]) ? 'token logged' : null).toBeNull();
  });


  it('no answer and no log line of this file carries a password or a TOTP secret', async () => {
    const m = await addMember(db, a.id, 'admin', { totp: true });
    await signInAs(app, db, a.id, m);
    await passwordSignIn(m.email, MEMBER_PASSWORD, 'garbage');
    expect(await passwordSignIn(m.email, 'wrong password here', '123456')).toMatchObject({ status: 401 });
    expect((await passwordSignIn(m.email, 'wrong password here', '123456')).text).toContain(SIGN_IN_REFUSED);
    expect(lines.length).toBeGreaterThan(20);
    const secrets = [MEMBER_PASSWORD, 'a new password for setup', 'long enough one', 'the reset password', 'brand new password', 'wrong password here', m.totpSecret!];
    const everything = [...answers, ...lines].join('\n');
    for (const secret of secrets) expect(everything.includes(secret) ? secret : null).toBeNull();
    // (The secret a user is shown while setting up is theirs alone: those pages are the enrolment tests'.) Stored sealed.
    const stored = await db('members').where({ user_id: a.id, id: m.id }).first();
    expect(stored.password_hash.toString('latin1')).not.toContain('scrypt$');
    expect(stored.totp_secret.toString('latin1')).not.toContain(m.totpSecret!);
  });
});
