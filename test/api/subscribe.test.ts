import { createHmac, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import request from 'supertest';
import type * as Altcha from 'altcha-lib' with { 'resolution-mode': 'import' };
import type * as AltchaSha from 'altcha-lib/algorithms/sha' with { 'resolution-mode': 'import' };
import { secret } from '../../src/db/secrets';
import { optinConfirmation } from '../../src/forms/optin-mail';
import { optinToken } from '../../src/forms/optin-token';
import { deleteOldPending, pendingByDay } from '../../src/forms/pending';
import { formPublicId } from '../../src/forms/public-id';
import { statsByDay } from '../../src/forms/stats';
import { runDueJobs } from '../../src/jobs/runner';
import { createLogger } from '../../src/logger';
import { runAutomations } from '../../src/delivery/automation-engine';
import { AutomationStatus } from '../../src/states';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeContacts, makeSender } from '../helpers/fixtures';

const load = createRequire(__filename);
const altcha = load('altcha-lib') as typeof Altcha;
const { deriveKey } = load('altcha-lib/algorithms/sha') as typeof AltchaSha;

/**
 * The public subscribe endpoint and double opt-in (issue 35): the hosted form, its JSON
 * endpoint, the abuse guards, the confirmation link (expiry, single use, tampering, a GET that
 * confirms nothing), the re-submission rules without enumeration, single opt-in, cleanup, and
 * that a pending subscription is no contact (an automation never takes it in).
 */
const { app, db, config, mailer } = setupApp({ SUBSCRIBE_LIMIT_PER_HOUR: '0' });
const limited = setupApp({ SUBSCRIBE_LIMIT_PER_HOUR: '3' });
const limitedToo = setupApp({ SUBSCRIBE_LIMIT_PER_HOUR: '3' });
const logger = createLogger('silent');

let account: TestAccount;
let other: TestAccount;
let list: number;
let list2: number;
let sender: number;
let key: Buffer;

async function fieldId(name: string): Promise<number> {
  return (await db('reserved_fields').where({ field_name: name }).first('id')).id;
}

async function makeForm(owner: TestAccount, lists: number[], extra: Record<string, unknown> = {}): Promise<{ id: number; publicId: string }> {
  const fields = [
    { field_id: await fieldId('email'), required: 1, label: 'Email' },
    { field_id: await fieldId('first_name'), required: 0, label: 'First name' },
  ];
  const [row] = await db('forms')
    .insert({
      user_id: owner.id,
      name: 'Weekly news',
      contact_type_ids: lists,
      fields: JSON.stringify(fields),
      double_opt_in: 1,
      consent_text: 'I want the weekly news and may unsubscribe at any time.',
      confirmation_subject: 'Confirm your subscription to Weekly news',
      confirmation_sender_id: owner.id === account.id ? sender : null,
      captcha: 'none',
      ...extra,
    })
    .returning('id');
  return { id: row.id, publicId: formPublicId(key, { userId: owner.id, formId: row.id }) };
}

const post = (path: string, body: Record<string, unknown>, target = app) => request(target).post(path).type('form').send(body);
const postJson = (path: string, body: Record<string, unknown>) => request(app).post(path).set('Accept', 'application/json').send(body);

async function runMailJobs(): Promise<void> {
  while ((await runDueJobs(optinConfirmation, { config, db, logger, mailer })) > 0);
}

async function jobsFor(pendingIds: number[]): Promise<number> {
  const rows = await db('jobs').where({ kind: 'optin_confirmation' }).whereRaw("(payload->>'pendingId')::bigint = ANY(?::bigint[])", [pendingIds]).pluck('id');
  return rows.length;
}

async function pendingOf(email: string): Promise<Record<string, unknown> | undefined> {
  return db('pending_subscriptions').where({ user_id: account.id }).whereRaw('lower(email) = lower(?)', [email]).first();
}

/** The link in the last confirmation mail to `to`. */
async function linkIn(to: string): Promise<string> {
  const mine = `/subscribe/confirm/${account.id.toString(16).padStart(8, '0')}`;
  const mails = (await mailer.parsed()).filter((m) => m.to && JSON.stringify(m.to).includes(to) && String(m.html).includes(mine));
  const html = String(mails[mails.length - 1]?.html ?? '');
  const m = /href="http:\/\/herald\.test(\/subscribe\/confirm\/[0-9a-f]{72})"/.exec(html);
  if (!m) throw new Error(`no confirmation link in the mail to ${to}`);
  return m[1];
}

beforeAll(async () => {
  key = await secret(db, 'tracking');
  account = await makeAccount(db);
  other = await makeAccount(db);
  list = await makeContactType(db, account, 'News');
  list2 = await makeContactType(db, account, 'Offers');
  sender = await makeSender(db, account);
});

describe('the hosted form', () => {
  it('shows the fields, the consent checkbox with its text, a hidden honeypot, under a CSP without unsafe-inline', async () => {
    const form = await makeForm(account, [list]);
    const res = await request(app).get(`/subscribe/${form.publicId}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('name="email"');
    expect(res.text).toContain('name="first_name"');
    expect(res.text).toContain('I want the weekly news and may unsubscribe at any time.');
    expect(res.text).toMatch(/<div hidden="" aria-hidden="true">|<div hidden aria-hidden="true">/);
    expect(res.text).toContain('name="website"');
    expect(res.text).not.toContain('contact_type_ids[]');
    expect(res.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(res.headers['content-security-policy']).not.toContain('script-src');
  });

  it('offers the lists to choose when the form has several', async () => {
    const form = await makeForm(account, [list, list2]);
    const res = await request(app).get(`/subscribe/${form.publicId}`);
    expect(res.text).toContain('name="contact_type_ids[]"');
    expect(res.text).toContain(`value="${list2}"`);
  });

  it('answers 404 for an id that is not signed here, a tampered one, a deleted form, and no other account’s form by guessing', async () => {
    const form = await makeForm(account, [list]);
    const theirs = await makeForm(other, [await makeContactType(db, other)]);
    const forged = theirs.publicId.slice(0, 8) + form.publicId.slice(8);
    for (const id of ['nope', 'f'.repeat(48), forged, form.publicId.slice(0, -1) + (form.publicId.endsWith('0') ? '1' : '0')]) {
      expect((await request(app).get(`/subscribe/${id}`)).status).toBe(404);
    }
    expect((await post(`/subscribe/${forged}`, { email: 'x@example.com', consent: '1' })).status).toBe(404);
    await db('forms').where({ user_id: account.id, id: form.id }).update({ deleted_at: db.fn.now() });
    expect((await request(app).get(`/subscribe/${form.publicId}`)).status).toBe(404);
    const json = await postJson(`/subscribe/${form.publicId}`, { email: 'x@example.com', consent: '1' });
    expect(json.status).toBe(404);
    expect(json.body).toEqual({ status: 'failed', errors: 'Record Not Found' });
  });
});

describe('a submission to a double opt-in form', () => {
  it('a change or deletion of the form applies to the next submission, though the process keeps a copy of the form for a few seconds', async () => {
    const form = await makeForm(account, [list]);
    expect((await postJson(`/subscribe/${form.publicId}`, { email: 'copy1@example.com', consent: '1' })).status).toBe(200);
    // Renamed and made to require the first name: the copy read by the first submission is stale.
    const fields = [
      { field_id: await fieldId('email'), required: 1, label: 'Email' },
      { field_id: await fieldId('first_name'), required: 1, label: 'First name' },
    ];
    await db('forms').where({ user_id: account.id, id: form.id }).update({ fields: JSON.stringify(fields), updated_at: db.fn.now() });
    const refused = await postJson(`/subscribe/${form.publicId}`, { email: 'copy2@example.com', consent: '1' });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual({ first_name: ['The first name field is required.'] });
    expect(await pendingOf('copy2@example.com')).toBeUndefined();
    expect((await postJson(`/subscribe/${form.publicId}`, { email: 'copy3@example.com', first_name: 'Cy', consent: '1' })).status).toBe(200);
    expect(await pendingOf('copy3@example.com')).toMatchObject({ fields: { reserved: { first_name: 'Cy' } } });
    await db('forms').where({ user_id: account.id, id: form.id }).update({ deleted_at: db.fn.now() });
    expect((await postJson(`/subscribe/${form.publicId}`, { email: 'copy4@example.com', first_name: 'Cy', consent: '1' })).status).toBe(404);
    expect(await pendingOf('copy4@example.com')).toBeUndefined();
  });

  it('records a pending subscription (no contact) and queues one confirmation mail; the JSON answer has CORS', async () => {
    const form = await makeForm(account, [list]);
    const res = await post(`/subscribe/${form.publicId}`, { email: 'Ann@Example.com', first_name: 'Ann', consent: '1' });
    expect(res.status).toBe(200);
    expect(res.text).toContain('Please check your inbox');
    const pending = await pendingOf('ann@example.com');
    expect(pending).toMatchObject({ form_id: form.id, email: 'Ann@Example.com', contact_type_ids: [list], confirmed_at: null, ip: expect.any(String) });
    expect(pending!.consent_text).toBe('I want the weekly news and may unsubscribe at any time.');
    expect(await db('contacts').where({ user_id: account.id }).whereRaw("lower(email) = 'ann@example.com'").first()).toBeUndefined();
    expect(await jobsFor([Number(pending!.id)])).toBe(1);

    const json = await postJson(`/subscribe/${form.publicId}`, { email: 'bob@example.com', consent: true });
    expect(json.status).toBe(200);
    expect(json.headers['access-control-allow-origin']).toBe('*');
    expect(json.headers['access-control-allow-credentials']).toBeUndefined();
    expect(json.body).toEqual({ status: 'success', message: expect.stringContaining('Please check your inbox') });
    const preflight = await request(app).options(`/subscribe/${form.publicId}`).set('Origin', 'http://site.test').set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toContain('Content-Type');
  });

  it('answers 303 to success_url for a form-encoded submission', async () => {
    const form = await makeForm(account, [list], { success_url: 'http://site.test/thanks' });
    const res = await post(`/subscribe/${form.publicId}`, { email: 'carl@example.com', consent: '1' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('http://site.test/thanks');
  });

  it('answers 422 with the messages beside the fields (page) and in the envelope (JSON), writing nothing', async () => {
    const form = await makeForm(account, [list, list2]);
    const page = await post(`/subscribe/${form.publicId}`, { email: 'not-an-address', first_name: 'Dee' });
    expect(page.status).toBe(422);
    expect(page.text).toContain('The email must be a valid email address.');
    expect(page.text).toContain('aria-describedby="field-email-error"');
    expect(page.text).toContain('The consent must be accepted.');
    expect(page.text).toContain('value="Dee"');
    const json = await postJson(`/subscribe/${form.publicId}`, { contact_type_ids: [999999] });
    expect(json.status).toBe(422);
    expect(json.body).toEqual({
      status: 'failed',
      errors: {
        email: ['The email field is required.'],
        contact_type_ids: ['The selected contact type ids is invalid.'],
        consent: ['The consent must be accepted.'],
      },
    });
    const none = await postJson(`/subscribe/${form.publicId}`, { email: 'dee@example.com', consent: '1' });
    expect(none.body.errors).toEqual({ contact_type_ids: ['The contact type ids field is required.'] });
    const nested = await postJson(`/subscribe/${form.publicId}`, { email: { a: 1 }, consent: '1', contact_type_ids: [list] });
    expect(nested.status).toBe(422);
    expect(await pendingOf('dee@example.com')).toBeUndefined();
    const broken = await request(app).post(`/subscribe/${form.publicId}`).set('Content-Type', 'application/json').set('Accept', 'application/json').send('{"email":');
    expect(broken.status).toBe(400);
  });

  it('subscribes to the lists chosen among several', async () => {
    const form = await makeForm(account, [list, list2]);
    expect((await post(`/subscribe/${form.publicId}`, { email: 'eve@example.com', consent: '1', 'contact_type_ids[]': [String(list2)] })).status).toBe(200);
    expect((await pendingOf('eve@example.com'))!.contact_type_ids).toEqual([list2]);
  });
});

describe('abuse guards', () => {
  it('accepts a filled honeypot silently (the same answer) and keeps nothing', async () => {
    const form = await makeForm(account, [list]);
    const normal = await postJson(`/subscribe/${form.publicId}`, { email: 'real@example.com', consent: '1' });
    const bot = await postJson(`/subscribe/${form.publicId}`, { email: 'bot@example.com', consent: '1', website: 'http://spam.test' });
    expect(bot.status).toBe(normal.status);
    expect(bot.body).toEqual(normal.body);
    const page = await post(`/subscribe/${form.publicId}`, { email: 'bot2@example.com', consent: '1', website: 'x' });
    expect(page.status).toBe(200);
    expect(page.text).toContain('Please check your inbox');
    expect(await pendingOf('bot@example.com')).toBeUndefined();
    expect(await pendingOf('bot2@example.com')).toBeUndefined();
  });

  it('limits submissions per client address per hour (429 with Retry-After), counted in the database across processes', async () => {
    await db('subscribe_limits').delete();
    const form = await makeForm(account, [list]);
    const statuses: number[] = [];
    for (const [i, target] of [limited.app, limitedToo.app, limited.app, limitedToo.app].entries()) {
      const res = await request(target).post(`/subscribe/${form.publicId}`).set('Accept', 'application/json').send({ email: `l${i}@example.com`, consent: '1' });
      statuses.push(res.status);
      if (res.status === 429) {
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        expect(res.body).toEqual({ status: 'failed', errors: 'Too Many Requests' });
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect((await post(`/subscribe/${form.publicId}`, { email: 'l9@example.com', consent: '1' }, limited.app)).status).toBe(429);
    expect(await pendingOf('l3@example.com')).toBeUndefined();
    await db('subscribe_limits').delete();
  });

  describe('proof of work', () => {
    let form: { id: number; publicId: string };
    beforeAll(async () => {
      form = await makeForm(account, [list], { captcha: 'proof_of_work' });
    });

    async function solved(): Promise<string> {
      const res = await request(app).get(`/subscribe/${form.publicId}/challenge`);
      expect(res.status).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      const solution = await altcha.solveChallenge({ challenge: res.body, deriveKey });
      return Buffer.from(JSON.stringify({ challenge: res.body, solution })).toString('base64');
    }

    it('the hosted page carries the widget, served from this origin under a CSP with script-src self only', async () => {
      const res = await request(app).get(`/subscribe/${form.publicId}`);
      expect(res.text).toContain(`<altcha-widget challenge="/subscribe/${form.publicId}/challenge" name="altcha">`);
      expect(res.text).toContain('src="/app/assets/altcha.js');
      const csp = res.headers['content-security-policy'];
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      for (const asset of ['altcha.js', 'altcha-widget.js', 'altcha-sha.js', 'altcha.css']) {
        const a = await request(app).get(`/app/assets/${asset}`);
        expect(a.status).toBe(200);
        expect(a.text.length).toBeGreaterThan(100);
      }
    });

    it('refuses a missing or wrong solution with 422', async () => {
      const missing = await postJson(`/subscribe/${form.publicId}`, { email: 'pow@example.com', consent: '1' });
      expect(missing.status).toBe(422);
      expect(missing.body.errors).toEqual({ altcha: ['The altcha field is required.'] });
      const good = JSON.parse(Buffer.from(await solved(), 'base64').toString());
      good.solution.counter += 1;
      good.solution.derivedKey = '00'.repeat(32);
      for (const bad of ['garbage', Buffer.from('{"challenge":1}').toString('base64'), Buffer.from(JSON.stringify(good)).toString('base64')]) {
        const res = await postJson(`/subscribe/${form.publicId}`, { email: 'pow@example.com', consent: '1', altcha: bad });
        expect(res.status).toBe(422);
        expect(res.body.errors).toEqual({ altcha: ['The proof of work is invalid or was used already.'] });
      }
      expect(await pendingOf('pow@example.com')).toBeUndefined();
    });

    it('accepts a solved challenge once: a replay is refused', async () => {
      const payload = await solved();
      const first = await post(`/subscribe/${form.publicId}`, { email: 'pow1@example.com', consent: '1', altcha: payload });
      expect(first.status).toBe(200);
      expect(await pendingOf('pow1@example.com')).toBeDefined();
      const replay = await postJson(`/subscribe/${form.publicId}`, { email: 'pow2@example.com', consent: '1', altcha: payload });
      expect(replay.status).toBe(422);
      expect(await pendingOf('pow2@example.com')).toBeUndefined();
    });

    it('refuses an expired challenge', async () => {
      const hmac = createHmac('sha256', key).update('altcha:').digest('hex');
      const challenge = await altcha.createChallenge({ algorithm: 'SHA-256', cost: 1, counter: 50, deriveKey, hmacSignatureSecret: hmac, expiresAt: new Date(Date.now() - 1000) });
      const solution = await altcha.solveChallenge({ challenge, deriveKey });
      const payload = Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
      expect((await postJson(`/subscribe/${form.publicId}`, { email: 'pow3@example.com', consent: '1', altcha: payload })).status).toBe(422);
    });
  });
});

describe('the confirmation link', () => {
  let form: { id: number; publicId: string };
  beforeAll(async () => {
    form = await makeForm(account, [list], { confirm_url: 'http://site.test/welcome' });
  });

  it('mails one confirmation from the form’s sender; a GET confirms nothing; the POST confirms once, and redirects to confirm_url', async () => {
    mailer.clear();
    await post(`/subscribe/${form.publicId}`, { email: 'fay@example.com', first_name: 'Fay', consent: '1' });
    await runMailJobs();
    const mine = `/subscribe/confirm/${account.id.toString(16).padStart(8, '0')}`;
    const mails = (await mailer.parsed()).filter((m) => JSON.stringify(m.to).includes('fay@example.com') && String(m.html).includes(mine));
    expect(mails).toHaveLength(1);
    expect(mails[0].subject).toBe('Confirm your subscription to Weekly news');
    expect(mails[0].from?.value[0]).toMatchObject({ address: 'news@acme.test', name: 'Acme News' });
    const link = await linkIn('fay@example.com');

    for (let i = 0; i < 3; i++) {
      const page = await request(app).get(link);
      expect(page.status).toBe(200);
      expect(page.text).toContain('Confirm</button>');
      expect(page.text).toContain(`action="${link}"`);
      expect(page.headers['content-security-policy']).toMatch(/form-action 'self' http:\/\/site\.test(;|$)/);
    }
    await request(app).head(link);
    expect((await pendingOf('fay@example.com'))!.confirmed_at).toBeNull();
    expect(await db('contacts').where({ user_id: account.id, email: 'fay@example.com' }).first()).toBeUndefined();

    const res = await request(app).post(link).set('User-Agent', 'Fay-browser/1.0');
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('http://site.test/welcome');
    const pending = await pendingOf('fay@example.com');
    expect(pending!.confirmed_at).not.toBeNull();
    expect(pending!.confirm_user_agent).toBe('Fay-browser/1.0');
    const contact = await db('contacts').where({ user_id: account.id, contact_type_id: list, email: 'fay@example.com' }).whereNull('deleted_at').first();
    expect(contact).toMatchObject({ first_name: 'Fay' });
    const consent = await db('consent_records').where({ user_id: account.id, email: 'fay@example.com', contact_type_id: list }).first();
    expect(consent).toMatchObject({ source: 'form', form_id: form.id, consent_text: 'I want the weekly news and may unsubscribe at any time.' });
    expect(consent.confirmed_at).not.toBeNull();
    expect(consent.confirm_user_agent).toBe('Fay-browser/1.0');
    const event = await db('events').where({ user_id: account.id, type: 'contact.confirmed', email: 'fay@example.com' }).first();
    expect(event).toBeDefined();
    expect(await db('outbox_jobs').where({ user_id: account.id, event_id: event.id }).first()).toBeUndefined();
    const stats = await statsByDay(db, account.id, form.id, '2000-01-01');
    expect(stats).toMatchObject([{ submissions: 1, confirmations: 1 }]);

    const again = await request(app).post(link);
    expect(again.status).toBe(410);
    expect(again.text).toContain('Already confirmed');
    expect(await db('contacts').where({ user_id: account.id, email: 'fay@example.com' }).pluck('id')).toHaveLength(1);
    expect((await statsByDay(db, account.id, form.id, '2000-01-01'))[0].confirmations).toBe(1);
  });

  it('refuses a tampered token (404) and another account’s row named in a token it did not sign', async () => {
    await post(`/subscribe/${form.publicId}`, { email: 'gus@example.com', consent: '1' });
    const pending = await pendingOf('gus@example.com');
    const token = optinToken(key, { userId: account.id, pendingId: Number(pending!.id), generation: 1, expiresAt: Math.floor(Date.now() / 1000) + 3600 });
    const otherAccount = other.id.toString(16).padStart(8, '0') + token.slice(8);
    const flipped = token.slice(0, -1) + (token.endsWith('0') ? '1' : '0');
    const later = token.slice(0, 32) + 'ffffffff' + token.slice(40);
    for (const bad of [otherAccount, flipped, later, 'abc', token.slice(0, 70)]) {
      expect((await request(app).get(`/subscribe/confirm/${bad}`)).status).toBe(404);
      expect((await request(app).post(`/subscribe/confirm/${bad}`)).status).toBe(404);
    }
    expect((await pendingOf('gus@example.com'))!.confirmed_at).toBeNull();
  });

  it('an expired token confirms nothing and offers a new mail, which is sent at most once per 10 minutes', async () => {
    await post(`/subscribe/${form.publicId}`, { email: 'hal@example.com', consent: '1' });
    const pending = await pendingOf('hal@example.com');
    const id = Number(pending!.id);
    const token = optinToken(key, { userId: account.id, pendingId: id, generation: 1, expiresAt: Math.floor(Date.now() / 1000) - 1 });
    const page = await request(app).get(`/subscribe/confirm/${token}`);
    expect(page.status).toBe(410);
    expect(page.text).toContain('This link has expired');
    expect(page.text).toContain(`action="/subscribe/resend/${token}"`);
    expect((await request(app).post(`/subscribe/confirm/${token}`)).status).toBe(410);
    expect((await pendingOf('hal@example.com'))!.confirmed_at).toBeNull();

    expect(await jobsFor([id])).toBe(1);
    const resend = await request(app).post(`/subscribe/resend/${token}`);
    expect(resend.status).toBe(200);
    expect(await jobsFor([id])).toBe(1);
    await db('pending_subscriptions').where({ user_id: account.id, id }).update({ last_mailed_at: db.raw("now() - interval '11 minutes'") });
    const again = await request(app).post(`/subscribe/resend/${token}`);
    expect(again.status).toBe(200);
    expect(again.text).toBe(resend.text);
    expect(await jobsFor([id])).toBe(2);
  });
});

describe('re-submissions reveal nothing', () => {
  it('pending, already confirmed and suppressed addresses get the same status and body; mail only for the pending one, at most once per 10 minutes', async () => {
    const form = await makeForm(account, [list]);
    await makeContacts(db, account, list, [{ email: 'member@example.com' }]);
    await db('suppressions').insert({ user_id: account.id, email: 'bounced@example.com', type: 'bounce', source: 'api' });
    const bodies = new Set<string>();
    const pages = new Set<string>();
    for (const email of ['new@example.com', 'new@example.com', 'member@example.com', 'bounced@example.com', 'NEW@example.com']) {
      const json = await postJson(`/subscribe/${form.publicId}`, { email, consent: '1' });
      expect(json.status).toBe(200);
      bodies.add(JSON.stringify(json.body));
      const page = await post(`/subscribe/${form.publicId}`, { email, consent: '1' });
      expect(page.status).toBe(200);
      pages.add(page.text);
    }
    expect(bodies.size).toBe(1);
    expect(pages.size).toBe(1);
    const pending = await pendingOf('new@example.com');
    expect(await jobsFor([Number(pending!.id)])).toBe(1);
    expect(await pendingOf('member@example.com')).toBeUndefined();
    expect(await pendingOf('bounced@example.com')).toBeUndefined();
    expect(await db('contacts').where({ user_id: account.id }).whereRaw("lower(email) = 'member@example.com'").pluck('id')).toHaveLength(1);

    await db('pending_subscriptions').where({ user_id: account.id, id: pending!.id }).update({ last_mailed_at: db.raw("now() - interval '11 minutes'") });
    await postJson(`/subscribe/${form.publicId}`, { email: 'new@example.com', consent: '1' });
    expect(await jobsFor([Number(pending!.id)])).toBe(2);
  });
});

describe('single opt-in', () => {
  it('adds the contact at once with its consent record and no confirmation stamp', async () => {
    const form = await makeForm(account, [list], { double_opt_in: 0 });
    const res = await postJson(`/subscribe/${form.publicId}`, { email: 'ivy@example.com', first_name: 'Ivy', consent: '1' });
    expect(res.status).toBe(200);
    expect(res.body.message).toBe('Thank you for subscribing.');
    expect(await db('contacts').where({ user_id: account.id, contact_type_id: list, email: 'ivy@example.com' }).first()).toMatchObject({ first_name: 'Ivy' });
    const consent = await db('consent_records').where({ user_id: account.id, email: 'ivy@example.com' }).first();
    expect(consent).toMatchObject({ source: 'form', form_id: form.id, confirmed_at: null });
    expect(consent.consented_at).not.toBeNull();
    expect(await pendingOf('ivy@example.com')).toBeUndefined();
  });
});

describe('pending subscriptions are not contacts', () => {
  it('a live welcome automation takes in the confirmed address, never the pending one', async () => {
    const welcomeList = await makeContactType(db, account, 'Welcome');
    const form = await makeForm(account, [welcomeList]);
    const [auto] = await db('automations')
      .insert({
        user_id: account.id,
        utr: randomUUID(),
        automation_for: welcomeList,
        automation_for_table: 'contacts_',
        automation_name: 'Welcome',
        automation_type: 1,
        status: AutomationStatus.Live,
        first_live_at: db.raw("now() - interval '1 minute'"),
      })
      .returning('id');
    await db('automation_schedules').insert({
      user_id: account.id,
      automation_id: auto.id,
      sender_id: sender,
      subject: 'Welcome',
      waiting_period: 0,
      waiting_type: 'instantly',
      utr: randomUUID(),
      template_id: 1,
      preview_img: 'x.png',
    });
    mailer.clear();
    await post(`/subscribe/${form.publicId}`, { email: 'jo@example.com', consent: '1' });
    await post(`/subscribe/${form.publicId}`, { email: 'kim@example.com', consent: '1' });
    await runAutomations({ config, db, logger });
    expect(await db('automation_contacts').where({ user_id: account.id, automation_id: auto.id })).toEqual([]);

    await runMailJobs();
    expect((await request(app).post(await linkIn('jo@example.com'))).status).toBe(200);
    // The engine rescans a target at most every 2 s: as if they had passed.
    await db('automations').where({ user_id: account.id, id: auto.id }).update({ entry_scanned_at: db.raw("now() - interval '1 minute'") });
    await runAutomations({ config, db, logger });
    const entered = await db('automation_contacts').where({ user_id: account.id, automation_id: auto.id }).pluck('email');
    expect(entered).toEqual(['jo@example.com']);
  });
});

describe('statistics and cleanup', () => {
  it('counts pending per day, and the cleanup deletes pending subscriptions older than OPTIN_PENDING_DAYS', async () => {
    const form = await makeForm(account, [list]);
    await post(`/subscribe/${form.publicId}`, { email: 'old@example.com', consent: '1' });
    await post(`/subscribe/${form.publicId}`, { email: 'young@example.com', consent: '1' });
    await db('pending_subscriptions').where({ user_id: account.id, form_id: form.id, email: 'old@example.com' }).update({ created_at: db.raw("now() - interval '15 days'") });
    const days = await pendingByDay(db, account.id, form.id, new Date(Date.now() - 30 * 86_400_000), new Date(Date.now() + 86_400_000));
    expect(days.reduce((n, d) => n + d.pending, 0)).toBe(2);
    expect(days).toHaveLength(2);
    expect(await deleteOldPending(db, config.optinPendingDays)).toBeGreaterThanOrEqual(1);
    expect(await pendingOf('old@example.com')).toBeUndefined();
    expect(await pendingOf('young@example.com')).toBeDefined();
  });
});


