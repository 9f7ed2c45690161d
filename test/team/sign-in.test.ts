import request from 'supertest';
import crypto from 'node:crypto';
import { emailHash, SIGN_IN_REFUSED, signInWithPassword } from '../../src/team/sign-in';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { addMember, behindProxy, clientAddress, freshTotpStep, MEMBER_PASSWORD, nextTotpCode, signInAs } from '../helpers/team';
import { totpCode } from '../../src/team/totp';
import { cookiesOf, startSignIn } from '../dashboard/lib/session';

/**
 * Signing in as a user (issue 37): email, password and code; the per-address limit (429) and the
 * per-address-typed hold, which answers exactly as a wrong password; TOTP's ±1 step window and a
 * code used twice; the audit entry.
 */
const { app: herald, db, config } = setupApp();
/** Each request "from" an address of its own: the loopback address's count is other files' (behindProxy). */
const app = behindProxy(herald);

let a: TestAccount;
beforeAll(async () => {
  a = await makeAccount(db, 'Sign-in');
});

const nextAddress = clientAddress;

async function post(fields: Record<string, string>, address?: string) {
  const start = await startSignIn(app);
  return request(app)
    .post('/app/sign-in')
    .set('Cookie', start.cookie)
    .set('X-Forwarded-For', address ?? nextAddress())
    .type('form')
    .send({ _csrf: start.token, ...fields });
}

const sessionOf = (res: request.Response) => cookiesOf(res).herald_session;

describe('email and password', () => {
  it('signs in as the user: the session carries their role, the page says who is signed in', async () => {
    const m = await addMember(db, a.id, 'editor');
    const res = await post({ email: m.email, password: MEMBER_PASSWORD, code: '' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app');
    expect(sessionOf(res)).toMatch(new RegExp(`^${a.id}\\.[A-Za-z0-9_-]{43}$`));
    const row = await db('dashboard_sessions').where({ user_id: a.id, member_id: m.id }).first('via');
    expect(row.via).toBe('password');
    const home = await request(app).get('/app').set('Cookie', `herald_session=${sessionOf(res)}`);
    expect(home.status).toBe(200);
    expect(home.text).toContain(`<a href="/app/account" aria-label="Your account: signed in as ${m.email}">${m.email}</a>`);
    const entry = await db('audit_log').where({ user_id: a.id, member_id: m.id, action: 'session.signed_in' }).first();
    expect(entry).toMatchObject({ actor: m.email, via: 'dashboard', summary: 'Signed in with a password' });
  });

  it('the address is compared in any case, with spaces around it', async () => {
    const m = await addMember(db, a.id, 'viewer');
    const res = await post({ email: `  ${m.email.toUpperCase()} `, password: MEMBER_PASSWORD });
    expect(res.status).toBe(303);
  });

  it('signInAs gives an agent signed in as the user, and its CSRF token', async () => {
    const s = await signInAs(app, db, a.id, 'sender');
    const home = await s.agent.get('/app');
    expect(home.status).toBe(200);
    expect(home.text).toContain('<h1>Overview</h1>');
    expect(home.text).toContain(`<meta name="csrf-token" content="${s.csrf}"`);
  });

  it('a wrong password, an unknown address and a user without a password are the same refusal', async () => {
    const m = await addMember(db, a.id, 'editor');
    const invited = await addMember(db, a.id, 'editor', { password: null });
    for (const fields of [
      { email: m.email, password: 'wrong password!' },
      { email: `nobody.${Date.now()}@team.test`, password: MEMBER_PASSWORD },
      { email: invited.email, password: '' },
    ]) {
      const res = await post(fields);
      expect(res.status).toBe(401);
      expect(res.text).toContain(SIGN_IN_REFUSED);
      expect(sessionOf(res)).toBeUndefined();
    }
  });
});

describe('the second factor', () => {
  it('a user with TOTP needs a code: none or a wrong one is refused; the current one, and ±1 step, work; a code used twice is refused', async () => {
    const m = await addMember(db, a.id, 'admin', { totp: true });
    const secret = m.totpSecret!;
    expect((await post({ email: m.email, password: MEMBER_PASSWORD, code: '' })).status).toBe(401);
    expect((await post({ email: m.email, password: MEMBER_PASSWORD, code: '000000' === totpCode(secret) ? '111111' : '000000' })).status).toBe(401);
    // The step before now must still be one step before when the request arrives.
    await freshTotpStep();
    const previous = totpCode(secret, Date.now() - 30_000);
    const ok = await post({ email: m.email, password: MEMBER_PASSWORD, code: previous });
    expect(ok.status).toBe(303);
    // The same code again: refused (its step is not later than the last one used).
    expect((await post({ email: m.email, password: MEMBER_PASSWORD, code: previous })).status).toBe(401);
    const again = await nextTotpCode(db, m, secret);
    expect((await post({ email: m.email, password: MEMBER_PASSWORD, code: again })).status).toBe(303);
  });

  it('two steps off is refused', async () => {
    const m = await addMember(db, a.id, 'admin', { totp: true });
    await freshTotpStep();
    const far = totpCode(m.totpSecret!, Date.now() - 60_000);
    const near = [-30_000, 0, 30_000].map((o) => totpCode(m.totpSecret!, Date.now() + o));
    if (!near.includes(far)) expect((await post({ email: m.email, password: MEMBER_PASSWORD, code: far })).status).toBe(401);
    const farAhead = totpCode(m.totpSecret!, Date.now() + 60_000);
    if (!near.includes(farAhead)) expect((await post({ email: m.email, password: MEMBER_PASSWORD, code: farAhead })).status).toBe(401);
  });
});

describe('the hold on an address typed', () => {
  it('10 failures from any client addresses hold it: then even the right password is answered exactly as a wrong one; another user is not held', async () => {
    const m = await addMember(db, a.id, 'editor');
    const other = await addMember(db, a.id, 'editor');
    await db('member_sign_in_failures').where({ email_hash: emailHash(m.email) }).delete();
    for (let i = 0; i < 10; i += 1) {
      const res = await post({ email: m.email, password: `wrong ${i} password` }, nextAddress());
      expect(res.status).toBe(401);
    }
    const held = await post({ email: m.email, password: MEMBER_PASSWORD });
    expect(held.status).toBe(401);
    expect(held.text).toContain(SIGN_IN_REFUSED);
    expect((await post({ email: other.email, password: MEMBER_PASSWORD })).status).toBe(303);
    // The window passed: the right password works again.
    await db('member_sign_in_failures').where({ email_hash: emailHash(m.email) }).update({ failed_at: db.raw(`now() - interval '11 minutes'`) });
    expect((await post({ email: m.email, password: MEMBER_PASSWORD })).status).toBe(303);
  });
});

describe('what a refusal tells', () => {
  it('a held address, an unknown one and a wrong password get the same status, headers and page, each after one password hash', async () => {
    const held = await addMember(db, a.id, 'editor');
    const wrong = await addMember(db, a.id, 'editor');
    await db('member_sign_in_failures').insert(Array.from({ length: 10 }, () => ({ email_hash: emailHash(held.email) })));
    const unknown = `nobody.${process.pid}@team.test`;
    // Each answer costs one scrypt derivation (the password checked, or the decoy hash): the time tells nothing either.
    await signInWithPassword(db, config, clientAddress(), { email: unknown, password: 'x', code: '' }); // the decoy hash made
    const spy = jest.spyOn(crypto, 'scrypt');
    const answers: Array<{ status: number; headers: string[]; body: string; checks: number }> = [];
    try {
      for (const [email, password] of [
        [held.email, MEMBER_PASSWORD],
        [unknown, MEMBER_PASSWORD],
        [wrong.email, 'not the password'],
      ]) {
        spy.mockClear();
        const res = await post({ email, password, code: '' });
        answers.push({
          status: res.status,
          headers: Object.keys(res.headers).filter((h) => h !== 'date').sort(),
          body: res.text.replaceAll(email, '<email>').replace(/name="_csrf" value="[^"]+"/g, ''),
          checks: spy.mock.calls.length,
        });
      }
    } finally {
      spy.mockRestore();
    }
    expect(answers[0]).toMatchObject({ status: 401, checks: 1 });
    expect(answers[0].body).toContain(SIGN_IN_REFUSED);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
    expect(answers[0].headers).not.toContain('retry-after');
  });

  it('the per-client-address limit is as before: 10 failures in 10 minutes, then 429 with Retry-After even for the right password; another address signs in', async () => {
    const m = await addMember(db, a.id, 'viewer');
    const address = clientAddress();
    for (let i = 0; i < 10; i += 1) expect((await post({ email: `guess${i}.${process.pid}@team.test`, password: 'guess password' }, address)).status).toBe(401);
    const limited = await post({ email: m.email, password: MEMBER_PASSWORD }, address);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(500);
    expect(limited.text).toContain('Too many failed sign-ins from your address.');
    // The keys' form shares the limit.
    expect((await request(app).post('/app/sign-in').set('X-Forwarded-For', address).type('form').send({})).status).toBe(403);
    expect((await post({ email: m.email, password: MEMBER_PASSWORD })).status).toBe(303);
  });

  it('parallel guesses at one address from many client addresses cannot pass the hold together', async () => {
    const m = await addMember(db, a.id, 'viewer');
    await db('member_sign_in_failures').where({ email_hash: emailHash(m.email) }).delete();
    const outcomes = await Promise.all(Array.from({ length: 14 }, (_, i) => signInWithPassword(db, config, clientAddress(), { email: m.email, password: `parallel ${i} guess`, code: '' })));
    expect(outcomes.every((o) => !o.ok && o.retryAfterSeconds === undefined)).toBe(true);
    expect(Number((await db('member_sign_in_failures').where({ email_hash: emailHash(m.email) }).count({ n: '*' }))[0].n)).toBe(10);
    expect((await signInWithPassword(db, config, clientAddress(), { email: m.email, password: MEMBER_PASSWORD, code: '' })).ok).toBe(false);
  });
});
