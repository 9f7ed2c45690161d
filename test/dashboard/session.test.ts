import { createHash } from 'node:crypto';
import request from 'supertest';
import { rotateKeys } from '../../src/accounts/accounts.service';
import { signIn as openSession } from '../../src/dashboard/session';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { cookiesOf, postSignIn, signIn, startSignIn, type Browserish } from './lib/session';
import { makeWorld, type World } from './lib/world';

/**
 * The dashboard's sign-in, sessions, CSRF and headers, driven as a browser would (supertest
 * keeps no cookies: each request carries the ones a browser would have).
 */
const { app, db, config } = setupApp();
const secure = setupApp({ PUBLIC_URL: 'https://herald.example.com' });
/** Another process's settings: a shorter idle window. */
const short = setupApp({ DASHBOARD_SESSION_IDLE_MINUTES: '5' });

let a: TestAccount;
let b: TestAccount;
let w: World;
let wb: World;

beforeAll(async () => {
  [a, b] = await Promise.all([makeAccount(db, 'Dash'), makeAccount(db, 'Other')]);
  w = await makeWorld(db, a);
  wb = await makeWorld(db, b);
});

const get = (path: string, s: Browserish) => request(app).get(path).set('Cookie', s.cookie);
const post = (path: string, s: Browserish, fields: Record<string, string> = {}) =>
  request(app).post(path).set('Cookie', s.cookie).type('form').send({ _csrf: s.csrf, ...fields });

describe('signing in', () => {
  it('GET /app without a session is the sign-in form: a POST with public_key and a password field secret_key', async () => {
    const res = await request(app).get('/app');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toMatch(/<form method="post" action="\/app\/sign-in"/);
    expect(res.text).toMatch(/<input id="public_key" name="public_key" type="text"/);
    expect(res.text).toMatch(/<input id="secret_key" name="secret_key" type="password"/);
    expect(res.text).not.toContain('Sign out');
  });

  it('exchanges the keys for a session cookie (HttpOnly, SameSite=Strict, not Secure on http)', async () => {
    const res = await postSignIn(app, await startSignIn(app), a.public_key, a.secret_key);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app');
    const set = (res.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('herald_session='))!;
    expect(set).toMatch(new RegExp(`^herald_session=${a.id}\\.[A-Za-z0-9_-]{43}; Path=/app; HttpOnly; SameSite=Strict$`));
    const home = await request(app).get('/app').set('Cookie', `herald_session=${cookiesOf(res).herald_session}`);
    expect(home.status).toBe(200);
    expect(home.text).toContain('<h1>Overview</h1>');
    expect(home.text).toMatch(/<button type="submit">Sign out<\/button>/);
    // Only the token's digest is stored.
    const stored = await db('dashboard_sessions').where({ user_id: a.id }).select('token_hash');
    expect(stored.every((r: { token_hash: Buffer }) => r.token_hash.length === 32)).toBe(true);
  });

  it('the cookie is Secure when PUBLIC_URL is https', async () => {
    const res = await postSignIn(secure.app, await startSignIn(secure.app), a.public_key, a.secret_key);
    expect(res.status).toBe(303);
    expect((res.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('herald_session='))).toMatch(/; Secure/);
  });

  it('refuses wrong keys (401) and a sign-in without the form’s token (403)', async () => {
    const wrong = await postSignIn(app, await startSignIn(app), a.public_key, 'sk_wrong');
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Invalid PublicKey or SecretKey');
    expect(wrong.headers['set-cookie'] ?? []).not.toEqual(expect.arrayContaining([expect.stringMatching(/^herald_session=\d/)]));
    const start = await startSignIn(app);
    const noToken = await request(app).post('/app/sign-in').set('Cookie', start.cookie).type('form').send({ public_key: a.public_key, secret_key: a.secret_key });
    expect(noToken.status).toBe(403);
    const noCookie = await request(app).post('/app/sign-in').type('form').send({ _csrf: start.token, public_key: a.public_key, secret_key: a.secret_key });
    expect(noCookie.status).toBe(403);
  });

  it('limits failed sign-ins per address: 10 in 10 minutes, then 429 until the window passes; successes do not count; the API is not refused', async () => {
    const address = '127.0.0.1';
    const isolated = async <T>(fn: () => Promise<T>) => {
      await db('dashboard_sign_in_failures').where({ address }).delete();
      try {
        return await fn();
      } finally {
        await db('dashboard_sign_in_failures').where({ address }).delete();
      }
    };
    await isolated(async () => {
      for (let i = 0; i < 9; i += 1) expect((await postSignIn(app, await startSignIn(app), a.public_key, `sk_guess${i}`)).status).toBe(401);
      // Successful ones are not counted…
      for (let i = 0; i < 3; i += 1) expect((await postSignIn(app, await startSignIn(app), a.public_key, a.secret_key)).status).toBe(303);
      expect((await postSignIn(app, await startSignIn(app), a.public_key, 'sk_guess9')).status).toBe(401);
      // …the 11th failure-or-not is refused, even with the right keys.
      const limited = await postSignIn(app, await startSignIn(app), a.public_key, a.secret_key);
      expect(limited.status).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(500);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(600);
      // Another address signs in; the API answers this one.
      expect((await openSession(db, config, '192.0.2.7', a.public_key, a.secret_key)).ok).toBe(true);
      expect((await api(app, a).get('/contacts-type')).status).toBe(200);
      // Once the window has passed (the failures are older than 10 minutes), it may sign in again.
      await db('dashboard_sign_in_failures').where({ address }).update({ failed_at: db.raw(`now() - interval '10 minutes 1 second'`) });
      expect((await postSignIn(app, await startSignIn(app), a.public_key, a.secret_key)).status).toBe(303);
    });
  });

  it('parallel guesses cannot pass the limit together', async () => {
    const address = '198.51.100.9';
    const outcomes = await Promise.all(Array.from({ length: 16 }, (_, i) => openSession(db, config, address, a.public_key, `sk_par${i}`)));
    expect(outcomes.filter((o) => !o.ok && o.retryAfterSeconds === undefined)).toHaveLength(10);
    expect(outcomes.filter((o) => !o.ok && o.retryAfterSeconds !== undefined)).toHaveLength(6);
    await db('dashboard_sign_in_failures').where({ address }).delete();
  });
});

describe('sessions', () => {
  it('signing out (a POST with the token) ends the session: the pages go back to sign-in', async () => {
    const s = await signIn(app, a);
    expect((await get('/app/contacts', s)).status).toBe(200);
    const out = await post('/app/sign-out', s);
    expect(out.status).toBe(303);
    const after = await get('/app/contacts', s);
    expect(after.status).toBe(303);
    expect(after.headers.location).toBe('/app');
    const home = await get('/app', s);
    expect(home.text).toContain('name="secret_key"');
    expect(home.text).toContain('Your session has ended');
  });

  it('a session idle for longer than DASHBOARD_SESSION_IDLE_MINUTES (720) is over; one used within it is kept', async () => {
    const s = await signIn(app, a);
    const [userId] = s.cookie.replace('herald_session=', '').split('.');
    await db('dashboard_sessions').where({ user_id: Number(userId) }).update({ last_seen_at: db.raw(`now() - interval '719 minutes'`) });
    expect((await get('/app/webhooks', s)).status).toBe(200);
    await db('dashboard_sessions').where({ user_id: Number(userId) }).update({ last_seen_at: db.raw(`now() - interval '721 minutes'`) });
    const res = await get('/app/webhooks', s);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app');
  });

  it('the idle time counts from the last request, to the second, not from the last write of last_seen_at', async () => {
    const s = await signIn(app, a);
    const mine = () => db('dashboard_sessions').where({ user_id: a.id, token_hash: createHash('sha256').update(s.cookie.split('.')[1]).digest() });
    // Seen 30 s ago; a request now is the session's last.
    await mine().update({ last_seen_at: db.raw(`now() - interval '30 seconds'`) });
    expect((await get('/app/webhooks', s)).status).toBe(200);
    // 719 minutes 40 seconds later (every stored time moved back by as much), it is still current:
    // written once a minute, it was not (the request above was not counted).
    await mine().update({ last_seen_at: db.raw(`last_seen_at - interval '719 minutes 40 seconds'`) });
    expect((await get('/app/webhooks', s)).status).toBe(200);
    // At the boundary: a second short of 720 minutes idle it is current, two seconds past them it is over.
    await mine().update({ last_seen_at: db.raw(`now() - interval '719 minutes 59 seconds'`) });
    expect((await get('/app/webhooks', s)).status).toBe(200);
    await mine().update({ last_seen_at: db.raw(`now() - interval '720 minutes 2 seconds'`) });
    expect((await get('/app/webhooks', s)).status).toBe(303);
  });

  it('a sign-in on a process with a shorter DASHBOARD_SESSION_IDLE_MINUTES ends only its own account’s sessions idle past it', async () => {
    const [c, d] = [await makeAccount(db, 'Long'), await makeAccount(db, 'Short')];
    const [sc, sd] = [await signIn(app, c), await signIn(app, d)];
    // Both idle for 10 minutes: current under the default 720, past the other process's 5.
    await db('dashboard_sessions').whereIn('user_id', [c.id, d.id]).update({ last_seen_at: db.raw(`now() - interval '10 minutes'`) });
    await signIn(short.app, d);
    expect(await db('dashboard_sessions').where({ user_id: c.id }).count('* as n')).toEqual([{ n: 1 }]);
    expect((await get('/app/webhooks', sc)).status).toBe(200);
    // The account that signed in there: its own session idle past that process's window is gone.
    expect((await get('/app/webhooks', sd)).status).toBe(303);
    expect(await db('dashboard_sessions').where({ user_id: d.id }).count('* as n')).toEqual([{ n: 1 }]);
  });

  it('rotating the account’s keys ends every session of it', async () => {
    const c = await makeAccount(db, 'Rotate');
    const [s1, s2] = [await signIn(app, c), await signIn(app, c)];
    expect((await get('/app/automations', s1)).status).toBe(200);
    await rotateKeys(db, c.id, { confirmMs: 100 });
    for (const s of [s1, s2]) expect((await get('/app/automations', s)).status).toBe(303);
    expect(await db('dashboard_sessions').where({ user_id: c.id }).count('* as n')).toEqual([{ n: 0 }]);
  });

  it('a session is also over when the keys change without rotate-keys (an operator’s SQL)', async () => {
    const c = await makeAccount(db, 'Sql');
    const s = await signIn(app, c);
    await db('accounts').where({ id: c.id }).update({ public_key: `pk_${'x'.repeat(32)}${c.id}` });
    expect((await get('/app', s)).text).toContain('name="secret_key"');
  });

  it('a forged or malformed session cookie is no session', async () => {
    for (const cookie of [`herald_session=${a.id}.${'A'.repeat(43)}`, 'herald_session=1.x', 'herald_session=99999999999.' + 'A'.repeat(43), 'herald_session=%ZZ']) {
      const res = await request(app).get('/app/contacts').set('Cookie', cookie);
      expect(res.status).toBe(303);
    }
  });
});

describe('CSRF', () => {
  it('every state-changing request without the token is refused with 403 and changes nothing', async () => {
    const s = await signIn(app, a);
    const noToken = { ...s, csrf: '' };
    const wrongToken = { ...s, csrf: 'x'.repeat(43) };
    for (const who of [noToken, wrongToken]) {
      expect((await post('/app/sign-out', who)).status).toBe(403);
      expect((await post(`/app/automations/${w.automation.utr}/pause`, who)).status).toBe(403);
      expect((await post('/app/suppressions/lift', who, { email: w.emails[11] })).status).toBe(403);
      expect((await post(`/app/webhooks/${w.webhookId}/test`, who)).status).toBe(403);
      expect((await post(`/app/senders/${w.senderId}/check`, who)).status).toBe(403);
      const upload = await request(app).post('/app/contacts/import').set('Cookie', s.cookie).set('Accept', 'application/json').field('contact_type_id', String(w.typeId)).attach('file', Buffer.from('email\nz@example.com\n'), 'x.csv');
      expect(upload.status).toBe(403);
    }
    expect(await db('automations').where({ id: w.automation.id }).first('status')).toEqual({ status: 1 });
    expect(await db('suppressions').where({ user_id: a.id }).whereRaw('lower(email) = lower(?)', [w.emails[11]]).first('id')).toBeDefined();
    expect(await db('contacts').where({ user_id: a.id, email: 'z@example.com' }).first('id')).toBeUndefined();
    expect((await get('/app/contacts', s)).status).toBe(200);
  });

  it('with the token, the actions work: pause and resume an automation, lift a suppression', async () => {
    const s = await signIn(app, a);
    expect((await post(`/app/automations/${w.automation.utr}/pause`, s)).status).toBe(303);
    expect(await db('automations').where({ id: w.automation.id }).first('status')).toEqual({ status: 2 });
    expect((await post(`/app/automations/${w.automation.utr}/resume`, s)).status).toBe(303);
    expect(await db('automations').where({ id: w.automation.id }).first('status')).toEqual({ status: 1 });
    const manual = (await db('suppressions').where({ user_id: a.id, type: 'manual' }).first('email')).email as string;
    expect((await post('/app/suppressions/lift', s, { email: manual })).status).toBe(303);
    expect(await db('suppressions').where({ user_id: a.id, email: manual }).first('id')).toBeUndefined();
    // Pausing what is not live is the API's refusal, shown as a page.
    await db('automations').where({ id: w.automation.id }).update({ status: 0 });
    const refused = await post(`/app/automations/${w.automation.utr}/pause`, s);
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('Only a live automation can be paused');
    await db('automations').where({ id: w.automation.id }).update({ status: 1 });
  });
});

describe('headers and isolation', () => {
  const pages = (x: World) => [
    '/app',
    `/app/sends/${x.send.utr}`,
    `/app/sends/${x.send.utr}/reports/${x.bounceEventId}`,
    '/app/automations',
    `/app/automations/${x.automation.utr}`,
    '/app/contacts',
    `/app/contacts/${x.contactIds[0]}`,
    `/app/contacts/search?email=${encodeURIComponent(x.emails[0])}`,
    '/app/deliverability',
    '/app/deliverability?type=bounce',
    '/app/webhooks',
    `/app/webhooks/${x.webhookId}`,
    '/app/nope',
  ];

  it('every page has a CSP allowing no inline script, no eval, no other origin; and declares its icon', async () => {
    const s = await signIn(app, a);
    for (const path of [...pages(w), '/app/sign-in-page-for-nobody']) {
      const res = await get(path, s);
      const csp = String(res.headers['content-security-policy']);
      expect({ path, csp }).toEqual({ path, csp: expect.stringContaining("script-src 'self'") });
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*|data:|blob:/);
      expect(csp).toContain("default-src 'none'");
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      if (res.status === 200) expect(res.text).toContain('<link rel="icon" href="/app/assets/icon.svg');
    }
    const signInPage = await request(app).get('/app');
    expect(signInPage.headers['content-security-policy']).toContain("script-src 'self'");
    for (const asset of ['/app/assets/app.js', '/app/assets/app.css', '/app/assets/icon.svg', '/app/assets/vendor/chart.umd.min.js']) {
      const res = await request(app).get(asset);
      expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    }
  });

  it('another account’s send, automation, contact, webhook and report are not found', async () => {
    const s = await signIn(app, a);
    for (const path of pages(wb).filter((p) => /\d|[0-9a-f]{8}-/.test(p) && !p.startsWith('/app/deliverability'))) {
      const res = await get(path, s);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(res.text).not.toContain(wb.send.name);
    }
    expect((await post(`/app/webhooks/${wb.webhookId}/test`, s)).status).toBe(404);
    expect((await post(`/app/automations/${wb.automation.utr}/pause`, s)).status).toBe(404);
    expect((await post(`/app/senders/${wb.senderId}/check`, s)).status).toBe(404);
    expect(await db('automations').where({ id: wb.automation.id }).first('status')).toEqual({ status: 1 });
  });

  it('the CSV upload (JSON for a script) imports through the API’s import and answers its counts', async () => {
    const s = await signIn(app, a);
    const csv = `email,first_name\n${w.emails[0]},Updated\nnew1@example.com,New\nnew2@example.com,New\nnot-an-address,Bad\n`;
    const res = await request(app)
      .post('/app/contacts/import')
      .set('Cookie', s.cookie)
      .set('Accept', 'application/json')
      .set('X-CSRF-Token', s.csrf)
      .field('contact_type_id', String(w.typeId))
      .attach('file', Buffer.from(csv), 'people.csv');
    expect(res.status).toBe(200);
    expect(res.body.message).toMatchObject({ inserted: 2, updated: 1, skipped: 1, result: 'created 2, updated 1, refused 1' });
    const progress = await get('/app/contacts/imports.json', s).set('Accept', 'application/json');
    expect(progress.body.imports[0]).toMatchObject({ id: res.body.message.id, status: 'completed', file_name: 'people.csv', inserted: 2 });
    // A plain form post (the token as a field) goes back to the contacts page.
    const plain = await request(app)
      .post('/app/contacts/import')
      .set('Cookie', s.cookie)
      .field('_csrf', s.csrf)
      .field('contact_type_id', String(w.typeId))
      .attach('file', Buffer.from('email\nnew3@example.com\n'), 'more.csv');
    expect(plain.status).toBe(303);
    expect(plain.headers.location).toBe('/app/contacts#imports');
    const bad = await request(app).post('/app/contacts/import').set('Cookie', s.cookie).set('Accept', 'application/json').set('X-CSRF-Token', s.csrf).field('contact_type_id', String(wb.typeId)).attach('file', Buffer.from('email\n'), 'x.txt');
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual(expect.arrayContaining(['The file must be a file of type: csv.']));
    const unsigned = await request(app).get('/app/contacts/imports.json').set('Accept', 'application/json');
    expect(unsigned.status).toBe(401);
  });
});
