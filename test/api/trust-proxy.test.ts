import request from 'supertest';
import { secret } from '../../src/db/secrets';
import { formPublicId } from '../../src/forms/public-id';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType } from '../helpers/fixtures';

/**
 * TRUST_PROXY: the client address of the subscribe limit (and of the sign-in limit and consent
 * records, which read the same req.ip) comes from X-Forwarded-For only when the connection's
 * peer is a trusted proxy. Untrusted, the header is ignored: a client cannot pick a fresh
 * address per request to escape the limit.
 */
const trusted = setupApp({ SUBSCRIBE_LIMIT_PER_HOUR: '2', TRUST_PROXY: 'loopback' });
const untrusted = setupApp({ SUBSCRIBE_LIMIT_PER_HOUR: '2' });
const { db } = trusted;

let account: TestAccount;
let publicId: string;

beforeAll(async () => {
  account = await makeAccount(db, 'Proxy');
  const list = await makeContactType(db, account);
  const email = await db('reserved_fields').where({ field_name: 'email' }).first('id');
  const [form] = await db('forms')
    .insert({
      user_id: account.id,
      name: 'Behind a proxy',
      contact_type_ids: [list],
      fields: JSON.stringify([{ field_id: email.id, required: 1, label: 'Email' }]),
      double_opt_in: 0,
      consent_text: 'Yes, please.',
      confirmation_subject: 'Confirm',
      captcha: 'none',
    })
    .returning('id');
  publicId = formPublicId(await secret(db, 'tracking'), { userId: account.id, formId: form.id });
});

afterEach(() => db('subscribe_limits').delete());

function submit(app: typeof trusted.app, n: number, forwardedFor: string) {
  return request(app)
    .post(`/subscribe/${publicId}`)
    .set('Accept', 'application/json')
    .set('X-Forwarded-For', forwardedFor)
    .send({ email: `p${n}.${Date.now()}@example.com`, consent: '1' });
}

it('counts each forwarded client address on its own when the proxy is trusted', async () => {
  const statuses = [];
  for (const [n, ip] of ['198.51.100.1', '198.51.100.1', '198.51.100.2', '198.51.100.2', '198.51.100.1'].entries()) {
    statuses.push((await submit(trusted.app, n, ip)).status);
  }
  expect(statuses).toEqual([200, 200, 200, 200, 429]);
  const rows = await db('subscribe_limits').orderBy('address').pluck('address');
  expect(rows).toEqual(['198.51.100.1', '198.51.100.2']);
});

it('ignores X-Forwarded-For from a peer it does not trust', async () => {
  const statuses = [];
  for (const [n, ip] of ['198.51.100.1', '198.51.100.2', '198.51.100.3'].entries()) {
    statuses.push((await submit(untrusted.app, n, ip)).status);
  }
  expect(statuses).toEqual([200, 200, 429]);
  expect(await db('subscribe_limits').pluck('address')).not.toContain('198.51.100.1');
});
