import request from 'supertest';
import { secret } from '../../src/db/secrets';
import { recipientToken } from '../../src/recipient-token';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContacts, makeContactType } from '../helpers/fixtures';

/**
 * A recipient's own data from the preferences page (issue 35): "Get my data" mails a one-time link
 * (GET shows a page, only its POST downloads, once, until it expires), and "Forget me" erases
 * after a confirmation page's POST. Both are account events without the address.
 */
const { app, db, mailer } = setupApp();

const EMAIL = 'Rita.Recipient@example.com';
let a: TestAccount;
let b: TestAccount;
let token: string;
let otherToken: string;

async function rowToken(account: TestAccount, email: string): Promise<string> {
  const [row] = await db('deliveries').insert({ user_id: account.id, email, status: 'sent', sent_at: db.fn.now() }).returning('id');
  return recipientToken(await secret(db, 'tracking'), { deliveryId: Number(row.id), userId: account.id });
}

async function mailedLink(): Promise<string> {
  const [mail] = (await mailer.parsed()).slice(-1);
  const link = /href="(http:\/\/herald\.test\/my-data\/[^"]+)"/.exec(String(mail.html))?.[1];
  if (!link) throw new Error('no link in the mail');
  return link.replace('http://herald.test', '');
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  const list = await makeContactType(db, a);
  await makeContacts(db, a, list, [{ email: EMAIL, first_name: 'Rita' }]);
  token = await rowToken(a, EMAIL);
  otherToken = await rowToken(b, EMAIL);
});

describe('the preferences page', () => {
  it('shows "Get my data" (a POST) and "Forget me" (a link to a confirmation page)', async () => {
    const res = await request(app).get(`/unsubscribe/${token}`);
    expect(res.status).toBe(200);
    expect(res.text).toContain(`action="/unsubscribe/${token}/my-data"`);
    expect(res.text).toContain(`href="/unsubscribe/${token}/forget"`);
    expect(res.headers['content-security-policy']).not.toContain('unsafe-inline');
  });
});

describe('get my data', () => {
  it('mails a one-time link to the address; GET shows a page, its POST downloads the export once', async () => {
    mailer.clear();
    const res = await request(app).post(`/unsubscribe/${token}/my-data`).type('form').send({});
    expect(res.status).toBe(200);
    expect(res.text).toContain('Check your inbox');
    expect(mailer.sent.map((m) => m.to)).toEqual([EMAIL]);
    const link = await mailedLink();
    const [event] = await db('events').where({ user_id: a.id, type: 'contact.data_requested' });
    expect(JSON.stringify(event).toLowerCase()).not.toContain(EMAIL.toLowerCase());

    // A scanner's GET spends nothing.
    for (let i = 0; i < 2; i += 1) {
      const page = await request(app).get(link);
      expect(page.status).toBe(200);
      expect(page.text).toContain(`action="${link}"`);
    }
    const download = await request(app).post(link).type('form').send({});
    expect(download.status).toBe(200);
    expect(download.headers['content-disposition']).toContain('my-data.json');
    const person = JSON.parse(download.text);
    expect(person.contacts).toEqual([expect.objectContaining({ email: EMAIL, first_name: 'Rita' })]);
    expect(person.deliveries).toHaveLength(1);
    // Used once.
    expect((await request(app).post(link).type('form').send({})).status).toBe(410);
    expect((await request(app).get(link)).status).toBe(410);
  });

  it('an expired, tampered or other account’s link gives nothing', async () => {
    mailer.clear();
    await request(app).post(`/unsubscribe/${token}/my-data`).type('form').send({});
    const link = await mailedLink();
    const [, userId, rest] = /^\/my-data\/(\d+)\.(.+)$/.exec(link)!;
    expect((await request(app).post(`/my-data/${b.id}.${rest}`).type('form').send({})).status).toBe(410);
    // Its last character changed (to another one: a random token ends in `A` one time in 64).
    const tampered = `${rest.slice(0, -1)}${rest.endsWith('A') ? 'B' : 'A'}`;
    expect((await request(app).post(`/my-data/${userId}.${tampered}`).type('form').send({})).status).toBe(410);
    expect((await request(app).get('/my-data/garbage')).status).toBe(410);
    await db('data_requests').where({ user_id: a.id }).update({ expires_at: db.raw("now() - interval '1 second'") });
    expect((await request(app).post(link).type('form').send({})).status).toBe(410);
  });

  it('an unknown unsubscribe token is not found', async () => {
    expect((await request(app).post(`/unsubscribe/${'0'.repeat(56)}/my-data`).type('form').send({})).status).toBe(404);
    expect((await request(app).get(`/unsubscribe/${'0'.repeat(56)}/forget`)).status).toBe(404);
  });
});

describe('forget me', () => {
  it('GET only shows a confirmation; its POST erases the address in this account only', async () => {
    const page = await request(app).get(`/unsubscribe/${token}/forget`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`action="/unsubscribe/${token}/forget"`);
    expect(await db('contacts').where({ user_id: a.id }).whereRaw('lower(email) = lower(?)', [EMAIL])).toHaveLength(1);

    const res = await request(app).post(`/unsubscribe/${token}/forget`).type('form').send({});
    expect(res.status).toBe(200);
    expect(res.text).toContain('Your data is erased');
    for (const table of ['contacts', 'deliveries', 'data_requests']) {
      expect([table, await db(table).where({ user_id: a.id }).whereRaw('lower(email) = lower(?)', [EMAIL])]).toEqual([table, []]);
    }
    const [audit] = await db('erasures').where({ user_id: a.id });
    expect(audit.actor).toBe('recipient');
    const [event] = await db('events').where({ user_id: a.id, type: 'contact.erased' });
    expect(JSON.stringify(event).toLowerCase()).not.toContain(EMAIL.toLowerCase());
    expect(await db('suppressions').where({ user_id: a.id, type: 'erased', source: 'recipient' })).toHaveLength(1);
    // The link erased itself with the row; another account's copy of the address stays.
    expect((await request(app).get(`/unsubscribe/${token}`)).status).toBe(404);
    expect((await request(app).get(`/unsubscribe/${otherToken}`)).status).toBe(200);
  });
});
