import { createHash } from 'node:crypto';
import request from 'supertest';
import { recordConsent, confirmConsent } from '../../src/consent/record';
import { consentEntry } from '../../src/resources/contacts/person.router';
import { countryId } from '../helpers/person';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType } from '../helpers/fixtures';
import { cookiesOf, signIn } from '../dashboard/lib/session';

/**
 * Consent records by source (issue 35): GET /contacts/consent answers, for every list, how the
 * address joined — a form (recordConsent, as src/forms writes it, with its confirmation), an API
 * add, a dashboard add and an import — with the key or session that made it.
 */
const { app, db } = setupApp();

let a: TestAccount;
let b: TestAccount;
let listA: number;
let listA2: number;
let listB: number;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  listA = await makeContactType(db, a, 'News');
  listA2 = await makeContactType(db, a, 'Offers');
  listB = await makeContactType(db, b);
});

const consentOf = (account: TestAccount, email: string) => api(app, account).get(`/contacts/consent?email=${encodeURIComponent(email)}`);
const upload = (account: TestAccount, typeId: number, csv: string) =>
  request(app).post('/contacts/upload-csv').set(account.headers).field('contact_type_id', String(typeId)).attach('file', Buffer.from(csv), 'contacts.csv');

describe('GET /contacts/consent', () => {
  it('an API add records source api and the key that made it', async () => {
    expectSuccess(await api(app, a).form('/contacts/add', { country: await countryId(db), contact_type_id: listA, email: 'Api.Person@example.com' }));
    const res = await consentOf(a, 'api.person@EXAMPLE.com');
    expectSuccess(res);
    expect(res.body.message.consent).toHaveLength(1);
    const entry = expectShape(consentEntry, res.body.message.consent[0]);
    expect(entry).toMatchObject({ contact_type_id: listA, list_name: expect.stringMatching(/^News/), source: 'api', actor: `key:${a.public_key}`, import_id: null, form_id: null, confirmed_at: null });
    expect(entry.consented_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  });

  it('an import records source import once per import and list, joined to the contacts it inserted', async () => {
    expectSuccess(await upload(a, listA, 'email,first_name\nimp1@example.com,One\nimp2@example.com,Two\n'));
    const [imp] = await db('contact_imports').where({ user_id: a.id }).orderBy('id', 'desc').limit(1).select('id');
    const records = await db('consent_records').where({ user_id: a.id, source: 'import' });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ email: null, import_id: imp.id, contact_type_id: listA, actor: `key:${a.public_key}` });
    for (const email of ['imp1@example.com', 'IMP2@example.com']) {
      const res = await consentOf(a, email);
      expectSuccess(res);
      expect(res.body.message.consent).toEqual([expect.objectContaining({ source: 'import', import_id: imp.id, contact_type_id: listA, actor: `key:${a.public_key}` })]);
    }
    // A second import that only updates the contact adds no record, and the contact keeps the import that made it.
    expectSuccess(await upload(a, listA, 'email,first_name\nimp1@example.com,Uno\n'));
    expect(await db('consent_records').where({ user_id: a.id, source: 'import' })).toHaveLength(1);
    expect((await consentOf(a, 'imp1@example.com')).body.message.consent).toEqual([expect.objectContaining({ import_id: imp.id })]);
  });

  it('a staged import (addresses already known) marks the contacts it inserts too', async () => {
    expectSuccess(await upload(a, listA2, 'email\nimp1@example.com\nimp1@example.com\nstaged@example.com\n'));
    const [imp] = await db('contact_imports').where({ user_id: a.id }).orderBy('id', 'desc').limit(1).select('id');
    const res = await consentOf(a, 'imp1@example.com');
    expect(res.body.message.consent).toEqual([
      expect.objectContaining({ contact_type_id: listA, source: 'import' }),
      expect.objectContaining({ contact_type_id: listA2, source: 'import', import_id: imp.id }),
    ]);
  });

  it('a form records its client address, user agent, consent text and confirmation', async () => {
    const submitted = '2026-11-20T10:00:00.000Z';
    await db.transaction((trx) =>
      recordConsent(trx, [
        { userId: a.id, email: 'form.person@example.com', contactTypeId: listA, source: 'form', formId: 77, clientIp: '203.0.113.9', userAgent: 'Firefox/1', consentText: 'Yes, mail me news.', consentedAt: submitted },
        { userId: a.id, email: 'form.person@example.com', contactTypeId: listA2, source: 'form', formId: 77, clientIp: '203.0.113.9', userAgent: 'Firefox/1', consentText: 'Yes, mail me news.', consentedAt: submitted },
      ]),
    );
    expect(await confirmConsent(db, { userId: a.id, email: 'FORM.person@example.com', contactTypeIds: [listA], formId: 77, confirmedAt: '2026-11-20T10:05:00Z', confirmIp: '198.51.100.4', confirmUserAgent: 'Safari/2' })).toBe(1);
    const res = await consentOf(a, 'form.person@example.com');
    expectSuccess(res);
    expect(res.body.message.consent).toEqual([
      {
        contact_type_id: listA, list_name: expect.stringMatching(/^News/), source: 'form', form_id: 77, import_id: null, actor: null, client_ip: '203.0.113.9', user_agent: 'Firefox/1',
        consent_text: 'Yes, mail me news.', consented_at: '2026-11-20T10:00:00.000000Z', confirmed_at: '2026-11-20T10:05:00.000000Z', confirm_ip: '198.51.100.4', confirm_user_agent: 'Safari/2',
      },
      expect.objectContaining({ contact_type_id: listA2, source: 'form', confirmed_at: null }),
    ]);
  });

  it('a dashboard add records source dashboard and the session (never its token)', async () => {
    const browser = await signIn(app, a);
    const res = await request(app)
      .post(`/app/lists/${listA}/contacts/new`)
      .set('Cookie', browser.cookie)
      .type('form')
      .send({ _csrf: browser.csrf, email: 'dash.person@example.com', country: String(await countryId(db)) });
    expect(res.status).toBe(303);
    const token = /herald_session=\d+\.([A-Za-z0-9_-]+)/.exec(browser.cookie)![1];
    const session = `session:${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;
    const consent = (await consentOf(a, 'dash.person@example.com')).body.message.consent;
    expect(consent).toEqual([expect.objectContaining({ source: 'dashboard', actor: session, contact_type_id: listA })]);
    expect(JSON.stringify(consent)).not.toContain(token);
    expect(cookiesOf(res)).toEqual({});
  });

  it('a contact added before consent was recorded has an entry with source null', async () => {
    await db('contacts').insert({ user_id: a.id, contact_type_id: listA2, email: 'old.person@example.com' });
    expect((await consentOf(a, 'old.person@example.com')).body.message.consent).toEqual([
      expect.objectContaining({ contact_type_id: listA2, list_name: expect.stringMatching(/^Offers/), source: null, actor: null }),
    ]);
  });

  it('an unknown address has no records', async () => {
    const res = await consentOf(a, 'nobody@example.com');
    expectSuccess(res, { consent: [] });
  });

  it('never shows another account’s records', async () => {
    expectSuccess(await api(app, b).form('/contacts/add', { country: await countryId(db), contact_type_id: listB, email: 'api.person@example.com' }));
    const res = await consentOf(b, 'api.person@example.com');
    expect(res.body.message.consent).toEqual([expect.objectContaining({ contact_type_id: listB, actor: `key:${b.public_key}` })]);
    expectSuccess(await consentOf(b, 'form.person@example.com'), { consent: [] });
    expectSuccess(await consentOf(b, 'imp1@example.com'), { consent: [] });
  });

  it('VAL for a missing or bad email', async () => {
    expectVal(await api(app, a).get('/contacts/consent'), { email: ['The email field is required.'] });
    expectVal(await consentOf(a, 'not-an-address'), { email: ['The email must be a valid email address.'] });
    expectVal(await consentOf(a, `${'x'.repeat(250)}@example.com`), { email: expect.any(Array) as unknown as string[] });
  });

  it('AUTH without keys', async () => {
    expectAuthMissing(await request(app).get('/contacts/consent?email=a@example.com'));
  });
});
