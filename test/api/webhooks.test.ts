import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectNF1, expectSuccess, expectVal } from '../helpers/expect';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';
import { webhookBatchRecord, webhookRecord } from '../../src/resources/webhooks/webhooks.schemas';
import { purgeWebhookBatches } from '../../src/events/retention';

/**
 * The webhook endpoints (issue 11): save/list/details/delete/test/deliveries, each VAL, NF1 for
 * unknown and other accounts' ids, the secret shown once, SSRF refusals on save. The test call
 * goes to a real HTTP receiver that verifies the signature with the `standardwebhooks` package.
 * (Delivery by the worker: test/delivery/webhooks.test.ts.)
 */
const { app, db } = setupApp({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1, 169.254.169.254, [fd00:ec2::254], allowed.invalid' });
let a: TestAccount;
let b: TestAccount;
let receiver: Receiver;

beforeAll(async () => {
  a = await makeAccount(db, 'Hooks');
  b = await makeAccount(db, 'Other');
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

async function create(account: TestAccount, fields: Record<string, unknown>): Promise<{ id: number; secret: string }> {
  const res = await api(app, account).form('/webhooks/save', fields);
  expectSuccess(res);
  return res.body.message;
}

describe('POST /webhooks/save', () => {
  it('creates a webhook and answers its id and secret once; list and details never show the secret', async () => {
    const created = await create(a, { url: receiver.url, event_types: 'delivered, bounced', description: 'CRM' });
    expect(created.id).toEqual(expect.any(Number));
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(24);

    const details = await api(app, a).get(`/webhooks/details?id=${created.id}`);
    expectSuccess(details);
    const record = expectShape(webhookRecord, details.body.message.webhook);
    expect(record).toMatchObject({ id: created.id, url: receiver.url, event_types: ['delivered', 'bounced'], description: 'CRM', is_active: 1, failing_since: null });

    const list = await api(app, a).get('/webhooks/list');
    expectSuccess(list);
    expect(list.body.message.webhooks.map((w: { id: number }) => w.id)).toContain(created.id);
    for (const w of list.body.message.webhooks) expectShape(webhookRecord, w);
    expect(JSON.stringify([details.body, list.body])).not.toContain(created.secret.slice(6));
    expect(JSON.stringify([details.body, list.body])).not.toContain('secret');
  });

  it('defaults: every event type, no description, active', async () => {
    const { id } = await create(a, { url: receiver.url });
    const res = await api(app, a).get(`/webhooks/details?id=${id}`);
    expect(res.body.message.webhook).toMatchObject({ event_types: [], description: '', is_active: 1 });
  });

  it('accepts account event types, webhook.disabled among them', async () => {
    const { id } = await create(a, { url: receiver.url, event_types: 'single_send.completed,webhook.disabled,clicked' });
    const res = await api(app, a).get(`/webhooks/details?id=${id}`);
    expect(res.body.message.webhook.event_types).toEqual(['single_send.completed', 'webhook.disabled', 'clicked']);
  });

  it('with id, replaces the settings and answers Updated Successfully', async () => {
    const { id } = await create(a, { url: receiver.url, event_types: 'opened' });
    const res = await api(app, a).form('/webhooks/save', { id, url: `${receiver.url}/v2`, event_types: 'clicked', description: 'new', is_active: 0 });
    expectSuccess(res, 'Updated Successfully');
    const details = await api(app, a).get(`/webhooks/details?id=${id}`);
    expect(details.body.message.webhook).toMatchObject({ url: `${receiver.url}/v2`, event_types: ['clicked'], description: 'new', is_active: 0 });
  });

  it('answers VAL for a missing or malformed url, an unknown event type, a bad flag, a long description', async () => {
    expectVal(await api(app, a).form('/webhooks/save', { description: 'x' }), { url: ['The url field is required.'] });
    expectVal(await api(app, a).form('/webhooks/save', { url: 'not a url' }), { url: ['The url must be a valid URL.'] });
    expectVal(await api(app, a).form('/webhooks/save', { url: 'ftp://example.com/x' }), {
      url: ['The url must start with one of the following: http://, https://.'],
    });
    expectVal(await api(app, a).form('/webhooks/save', { url: 'https://user:pw@example.com/x' }), {
      url: ['The url must not contain a user name or password.'],
    });
    expectVal(await api(app, a).form('/webhooks/save', { url: receiver.url, event_types: 'delivered,exploded' }), {
      event_types: ['The selected event types is invalid.'],
    });
    expectVal(await api(app, a).form('/webhooks/save', { url: receiver.url, event_types: 'webhook.test' }), {
      event_types: ['The selected event types is invalid.'],
    });
    expectVal(await api(app, a).form('/webhooks/save', { url: receiver.url, is_active: 2 }), { is_active: ['The selected is active is invalid.'] });
    expectVal(await api(app, a).form('/webhooks/save', { url: receiver.url, description: 'd'.repeat(2001) }), {
      description: ['The description must not be greater than 2000 characters.'],
    });
    expectVal(await api(app, a).form('/webhooks/save', { url: `https://example.com/${'p'.repeat(2048)}` }), {
      url: ['The url must not be greater than 2048 characters.'],
    });
  });

  it('refuses hosts that are loopback, private, link-local or unique-local unless allowed, and metadata addresses always', async () => {
    const local = ['The url must not point to a loopback, private or link-local address.'];
    const metadata = ['The url must not point to a metadata address.'];
    for (const url of [
      'http://localhost:8080/x',
      'http://127.0.0.2/x',
      'http://10.1.2.3/x',
      'http://172.16.0.9/x',
      'http://192.168.1.1/x',
      'http://100.64.0.1/x',
      'http://169.254.10.10/x',
      'http://0.0.0.0/x',
      'http://[::1]/x',
      'http://[fe80::1]/x',
      'http://[fd12:3456::1]/x',
      'http://[::ffff:10.0.0.1]/x',
      'http://2130706434/x', // 127.0.0.2 written as one number
    ]) {
      const res = await api(app, a).form('/webhooks/save', { url });
      expect({ url, status: res.status, body: res.body }).toEqual({ url, status: 422, body: { status: 'failed', errors: { url: local } } });
    }
    // Both are in WEBHOOK_ALLOW_HOSTS here, and refused all the same.
    expectVal(await api(app, a).form('/webhooks/save', { url: 'http://169.254.169.254/latest/meta-data' }), { url: metadata });
    expectVal(await api(app, a).form('/webhooks/save', { url: 'http://[fd00:ec2::254]/x' }), { url: metadata });
    expectVal(await api(app, a).form('/webhooks/save', { url: 'http://[::ffff:169.254.169.254]/x' }), { url: metadata });
    expectVal(await api(app, a).form('/webhooks/save', { url: 'https://no-such-host.invalid/x' }), {
      url: ['The url host no-such-host.invalid could not be resolved.'],
    });
    // Public addresses and allowed hosts are fine.
    await create(a, { url: 'https://93.184.215.14/hook' });
    await create(a, { url: receiver.url });
  });

  it('refuses every IPv6 form that embeds a refused IPv4 address (judged at save: no request is made)', async () => {
    const local = ['The url must not point to a loopback, private or link-local address.'];
    const metadata = ['The url must not point to a metadata address.'];
    for (const [url, errors] of [
      ['http://[::127.0.0.1]/x', local], // IPv4-compatible
      ['http://[::10.0.0.1]/x', local],
      ['http://[::ffff:0:127.0.0.1]/x', local], // IPv4-translated
      ['http://[2002:7f00:1::]/x', local], // 6to4 of 127.0.0.1
      ['http://[2002:c0a8:101::1]/x', local], // 6to4 of 192.168.1.1
      ['http://[64:ff9b::127.0.0.1]/x', local], // NAT64
      ['http://[64:ff9b::10.0.0.1]/x', local],
      ['http://[64:ff9b:1::808:808]/x', local], // local-use NAT64: where the IPv4 sits depends on the network
      ['http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x', local], // Teredo, client 127.0.0.1
      ['http://[2001:0:a00:1:8000:63bf:a2b1:b0c1]/x', local], // Teredo, server 10.0.0.1
      ['http://[::169.254.169.254]/x', metadata],
      ['http://[2002:a9fe:a9fe::]/x', metadata],
      ['http://[64:ff9b::169.254.169.254]/x', metadata],
    ] as const) {
      const res = await api(app, a).form('/webhooks/save', { url });
      expect({ url, status: res.status, body: res.body }).toEqual({ url, status: 422, body: { status: 'failed', errors: { url: errors } } });
    }
    // The same forms around a public address are public (NAT64 is how an IPv6-only network reaches IPv4 hosts).
    await create(a, { url: 'http://[64:ff9b::93.184.215.14]/hook' });
    await create(a, { url: 'http://[2002:5db8:d70e::1]/hook' });
  });

  it('answers NF1 for an unknown id and for another account’s id', async () => {
    const { id } = await create(b, { url: receiver.url });
    expectNF1(await api(app, a).form('/webhooks/save', { id, url: receiver.url }));
    expectNF1(await api(app, a).form('/webhooks/save', { id: 99999999, url: receiver.url }));
    const untouched = await api(app, b).get(`/webhooks/details?id=${id}`);
    expect(untouched.body.message.webhook.url).toBe(receiver.url);
  });
});

describe('details, list, delete, deliveries of another account or unknown ids', () => {
  let theirs: number;
  beforeAll(async () => {
    theirs = (await create(b, { url: receiver.url })).id;
  });

  it('answers NF1 everywhere', async () => {
    for (const id of [theirs, 99999999, 'abc']) {
      expectNF1(await api(app, a).get(`/webhooks/details?id=${id}`));
      expectNF1(await api(app, a).delete(`/webhooks/delete?id=${id}`));
      expectNF1(await api(app, a).form(`/webhooks/test?id=${id}`, {}));
      expectNF1(await api(app, a).get(`/webhooks/deliveries?id=${id}`));
    }
    expectNF1(await api(app, a).get('/webhooks/details'));
  });

  it('another account’s list does not show them', async () => {
    const list = await api(app, a).get('/webhooks/list');
    expect(list.body.message.webhooks.map((w: { id: number }) => w.id)).not.toContain(theirs);
  });
});

describe('DELETE /webhooks/delete', () => {
  it('deletes: gone from list and details, a second delete is not found, pending batches are given up', async () => {
    const { id } = await create(a, { url: receiver.url });
    await db('webhook_deliveries').insert({ user_id: a.id, webhook_id: id, msg_id: 'msg_x', type: 'delivered', event_ids: [1], payload: {} });
    expectSuccess(await api(app, a).delete(`/webhooks/delete?id=${id}`), 'Deleted Successfully');
    expectNF1(await api(app, a).get(`/webhooks/details?id=${id}`));
    expectNF1(await api(app, a).delete(`/webhooks/delete?id=${id}`));
    const list = await api(app, a).get('/webhooks/list');
    expect(list.body.message.webhooks.map((w: { id: number }) => w.id)).not.toContain(id);
    expect(await db('webhook_deliveries').where({ user_id: a.id, webhook_id: id }).select('status', 'last_error')).toEqual([
      { status: 'failed', last_error: 'webhook deleted' },
    ]);
  });
});

describe('POST /webhooks/test', () => {
  it('delivers a signed webhook.test event now and answers the endpoint’s status', async () => {
    const { id, secret } = await create(a, { url: receiver.url, event_types: 'delivered' });
    receiver.secret = secret;
    receiver.respond = () => 200;
    const before = receiver.hits.length;
    const res = await api(app, a).form(`/webhooks/test?id=${id}`, {});
    expectSuccess(res, { status: 200, error: null });
    const hit = receiver.hits[before];
    expect(hit.verified).toBe(true);
    expect(hit.id).toMatch(/^msg_/);
    expect(hit.payload).toMatchObject({ type: 'webhook.test', data: { events: [{ type: 'webhook.test', data: { webhook_id: id } }] } });
    expect(hit.payload.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  });

  it('answers the endpoint’s failure: its status and at most 1 KB of its answer', async () => {
    const { id, secret } = await create(a, { url: receiver.url });
    receiver.secret = secret;
    receiver.respond = () => 500;
    const res = await api(app, a).form(`/webhooks/test?id=${id}`, {});
    expectSuccess(res);
    expect(res.body.message.status).toBe(500);
    expect(res.body.message.error).toMatch(/^HTTP 500: answer 500 x+$/);
    expect(res.body.message.error.length).toBeLessThanOrEqual('HTTP 500: '.length + 1024);
    receiver.respond = () => 204;
  });

  it('does not follow redirects', async () => {
    const { id, secret } = await create(a, { url: receiver.url });
    receiver.secret = secret;
    receiver.respond = () => 302;
    const res = await api(app, a).form(`/webhooks/test?id=${id}`, {});
    expect(res.body.message.status).toBe(302);
    receiver.respond = () => 204;
  });

  it('answers a connection failure with a null status', async () => {
    const closed = await startReceiver();
    await closed.close();
    const { id } = await create(a, { url: closed.url });
    const res = await api(app, a).form(`/webhooks/test?id=${id}`, {});
    expectSuccess(res);
    expect(res.body.message).toEqual({ status: null, error: expect.stringMatching(/^connection failed: .*ECONNREFUSED/) });
  });
});

describe('GET /webhooks/deliveries', () => {
  it('lists a webhook’s batches, newest first', async () => {
    const { id } = await create(a, { url: receiver.url });
    await db('webhook_deliveries').insert([
      { user_id: a.id, webhook_id: id, msg_id: 'msg_1', type: 'delivered', event_ids: [11, 12], payload: {}, status: 'delivered', attempt: 1, last_status: 200 },
      { user_id: a.id, webhook_id: id, msg_id: 'msg_2', type: 'opened', event_ids: [13], payload: {}, attempt: 2, last_status: 503, last_error: 'HTTP 503' },
    ]);
    const res = await api(app, a).get(`/webhooks/deliveries?id=${id}`);
    expectSuccess(res);
    const rows = res.body.message.deliveries.map((d: unknown) => expectShape(webhookBatchRecord, d));
    expect(rows).toMatchObject([
      { webhook_id: id, msg_id: 'msg_2', type: 'opened', event_ids: [13], status: 'pending', http_status: 503, error: 'HTTP 503', attempt: 2 },
      { webhook_id: id, msg_id: 'msg_1', type: 'delivered', event_ids: [11, 12], status: 'delivered', http_status: 200, error: null, attempt: 1, next_attempt_at: null },
    ]);
    expect(rows[0].next_attempt_at).toEqual(expect.any(String));
    const page = await api(app, a).get(`/webhooks/deliveries?id=${id}&per_page=1`);
    expect(page.body.message.deliveries).toHaveLength(1);
    expect(page.body.message.pagination).toEqual({ page: 1, per_page: 1, total: 2 });
  });
});

describe('retention', () => {
  it('purges finished batches older than EVENTS_RETENTION_DAYS, never pending ones', async () => {
    const c = await makeAccount(db, 'Old');
    const { id } = await create(c, { url: receiver.url });
    const old = db.raw("now() - interval '181 days'");
    await db('webhook_deliveries').insert([
      { user_id: c.id, webhook_id: id, msg_id: 'msg_old_done', type: 'opened', event_ids: [1], payload: {}, status: 'delivered', updated_at: old },
      { user_id: c.id, webhook_id: id, msg_id: 'msg_old_pending', type: 'opened', event_ids: [2], payload: {}, updated_at: old },
      { user_id: c.id, webhook_id: id, msg_id: 'msg_new_done', type: 'opened', event_ids: [3], payload: {}, status: 'failed' },
    ]);
    await purgeWebhookBatches(db, 180);
    expect((await db('webhook_deliveries').where({ user_id: c.id }).orderBy('id').pluck('msg_id'))).toEqual(['msg_old_pending', 'msg_new_done']);
  });
});
