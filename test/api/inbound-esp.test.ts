import { execFileSync } from 'node:child_process';
import { createHmac, createPrivateKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import request from 'supertest';
import { createLogger } from '../../src/logger';
import { secret } from '../../src/db/secrets';
import { recipientToken } from '../../src/recipient-token';
import { SendStatus } from '../../src/states';
import { canonicalString } from '../../src/bounces/esp/ses';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeSendRow } from '../helpers/fixtures';
import { memoryMailer } from '../helpers/mail';

/**
 * POST /inbound/<provider>: each provider's check (signature, credentials, age), its events
 * mapped to bounces, deferrals and complaints, and what they change (suppression, events,
 * statistics). A request that fails its check, or reaches a provider that is not configured,
 * is 401 and records nothing.
 */
const sendgridKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const otherEcKeys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const MAILGUN_KEY = 'key-mailgun-signing-0123456789';
const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:herald-ses';

/** A self-signed certificate standing in for SNS's (SES_SNS_TEST_CERT_PEM), made with the openssl CLI. */
function selfSignedCert(): { certPem: string; key: KeyObject } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-sns-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${dir}/key.pem`, '-out', `${dir}/cert.pem`, '-days', '2', '-subj', '/CN=sns.eu-west-1.amazonaws.com'], { stdio: 'ignore' });
    return { certPem: fs.readFileSync(`${dir}/cert.pem`, 'utf8'), key: createPrivateKey(fs.readFileSync(`${dir}/key.pem`)) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
const sns = selfSignedCert();

const { app, db, config } = setupApp({
  NODE_ENV: 'test',
  SENDGRID_WEBHOOK_PUBLIC_KEY: sendgridKeys.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
  MAILGUN_WEBHOOK_SIGNING_KEY: MAILGUN_KEY,
  POSTMARK_WEBHOOK_USER: 'postmark',
  POSTMARK_WEBHOOK_PASSWORD: 'pm-password-123',
  SES_SNS_TOPIC_ARNS: TOPIC,
  SES_SNS_TEST_CERT_PEM: sns.certPem,
});
/** The same installation with no ESP configured. */
const bare = setupApp({});
/** SES as in production: no test certificate, so SigningCertURL is what counts. */
const production = setupApp({ SES_SNS_TOPIC_ARNS: TOPIC });

let a: TestAccount;
let key: Buffer;
let sendId: number;

const makeSend = (account: TestAccount) => makeSendRow(db, account, { name: 'Via an ESP', status: SendStatus.Completed });

/** A recipient row as the worker leaves it once the ESP accepted the message, its token and Message-ID. */
async function sentRow(email: string): Promise<{ id: number; token: string; messageId: string }> {
  const [row] = await db('deliveries').insert({ user_id: a.id, single_send_id: sendId, email, status: 'sent', attempts: 1 }).returning('id');
  const token = recipientToken(key, { deliveryId: Number(row.id), userId: a.id });
  return { id: Number(row.id), token, messageId: `<${token}@acme.test>` };
}

const suppression = (email: string) => db('suppressions').where({ user_id: a.id }).whereRaw('lower(email) = lower(?)', [email]).first('type', 'source', 'reason');
const eventsOf = (email: string) =>
  db('events').where({ user_id: a.id, email: email.toLowerCase() }).whereIn('type', ['bounced', 'deferred', 'complained']).orderBy('id').select('type', 'data');
const counts = () => db('single_sends').where({ id: sendId }).first('bounces');
/** Everything an inbound event could change, to compare before and after a refused request. */
const snapshot = async () => ({
  suppressions: await db('suppressions').where({ user_id: a.id }).count('* as n').first(),
  events: await db('events').where({ user_id: a.id }).count('* as n').first(),
  reports: await db('bounce_reports').where({ user_id: a.id }).count('* as n').first(),
  send: await counts(),
});

beforeAll(async () => {
  a = await makeAccount(db);
  key = await secret(db, 'tracking');
  ({ id: sendId } = await makeSend(a));
});

const now = () => Math.floor(Date.now() / 1000);

describe('POST /inbound/sendgrid', () => {
  function signed(body: string, opts: { ts?: number; privateKey?: KeyObject } = {}) {
    const ts = String(opts.ts ?? now());
    const signature = sign('sha256', Buffer.from(ts + body), opts.privateKey ?? sendgridKeys.privateKey).toString('base64');
    return request(app)
      .post('/inbound/sendgrid')
      .set('Content-Type', 'application/json')
      .set('X-Twilio-Email-Event-Webhook-Signature', signature)
      .set('X-Twilio-Email-Event-Webhook-Timestamp', ts)
      .send(body);
  }

  it('applies a signed batch: a bounce named by its unique arg, a spam report by smtp-id; other events are ignored', async () => {
    const bounced = await sentRow('sg-bounce@example.com');
    const complained = await sentRow('sg-spam@example.com');
    const delivered = await sentRow('sg-fine@example.com');
    const before = (await counts()).bounces;
    const body = JSON.stringify([
      { email: 'sg-bounce@example.com', timestamp: now(), event: 'bounce', type: 'bounce', status: '5.1.1', reason: '550 5.1.1 The email account does not exist', herald: bounced.token, sg_event_id: 'e1' },
      { email: 'sg-spam@example.com', timestamp: now(), event: 'spamreport', 'smtp-id': complained.messageId, sg_event_id: 'e2' },
      { email: 'sg-fine@example.com', timestamp: now(), event: 'delivered', herald: delivered.token, sg_event_id: 'e3' },
      { email: 'sg-fine@example.com', timestamp: now(), event: 'dropped', reason: 'Unsubscribed Address', herald: delivered.token },
    ]);
    const res = await signed(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'success', message: { received: 2, applied: 2 } });
    expect(await suppression('sg-bounce@example.com')).toMatchObject({ type: 'bounce', source: 'sendgrid' });
    expect(await suppression('sg-spam@example.com')).toMatchObject({ type: 'complaint', source: 'sendgrid' });
    expect(await suppression('sg-fine@example.com')).toBeUndefined();
    expect(await eventsOf('sg-bounce@example.com')).toEqual([
      { type: 'bounced', data: { kind: 'hard', status: '5.1.1', diagnostic: '550 5.1.1 The email account does not exist', source: 'sendgrid' } },
    ]);
    expect((await counts()).bounces).toBe(before + 1);
    // The account sees it in /events.
    const events = await api(app, a).get('/events?type=bounced,complained&email=sg-bounce@example.com');
    expect(events.status).toBe(200);
    expect(JSON.stringify(events.body)).toContain('sg-bounce@example.com');
    // SendGrid retries a batch it got no 2xx for: the same batch again changes nothing.
    const again = await signed(body);
    expect(again.body).toEqual({ status: 'success', message: { received: 2, applied: 0 } });
    expect((await counts()).bounces).toBe(before + 1);
  });

  it('maps blocked to a soft bounce and deferred to a deferred event', async () => {
    const r = await sentRow('sg-soft@example.com');
    const body = JSON.stringify([
      { email: 'sg-soft@example.com', timestamp: now(), event: 'deferred', response: '451 4.7.1 Try again later', herald: r.token },
      { email: 'sg-soft@example.com', timestamp: now(), event: 'bounce', type: 'blocked', status: '4.0.0', reason: 'blocked by policy', herald: r.token },
    ]);
    expect((await signed(body)).body.message).toEqual({ received: 2, applied: 2 });
    expect((await eventsOf('sg-soft@example.com')).map((e) => [e.type, e.data.kind ?? null])).toEqual([
      ['deferred', null],
      ['bounced', 'soft'],
    ]);
    expect(await suppression('sg-soft@example.com')).toBeUndefined();
  });

  it('refuses a wrong signature, a tampered body, an old timestamp and missing headers: 401, nothing recorded', async () => {
    const r = await sentRow('sg-forged@example.com');
    const body = JSON.stringify([{ email: 'sg-forged@example.com', timestamp: now(), event: 'bounce', type: 'bounce', status: '5.1.1', herald: r.token }]);
    const before = await snapshot();
    const wrongKey = await signed(body, { privateKey: otherEcKeys.privateKey });
    expect(wrongKey.status).toBe(401);
    expect(wrongKey.body).toEqual({ status: 'failed', errors: 'The webhook signature is invalid.' });
    // Signed, then changed.
    const ts = String(now());
    const sig = sign('sha256', Buffer.from(ts + body), sendgridKeys.privateKey).toString('base64');
    const tampered = await request(app)
      .post('/inbound/sendgrid')
      .set('Content-Type', 'application/json')
      .set('X-Twilio-Email-Event-Webhook-Signature', sig)
      .set('X-Twilio-Email-Event-Webhook-Timestamp', ts)
      .send(body.replace('sg-forged', 'sg-forgeD'));
    expect(tampered.status).toBe(401);
    // A captured request replayed an hour later.
    const old = await signed(body, { ts: now() - 3600 });
    expect(old.status).toBe(401);
    expect(old.body.errors).toBe('The webhook timestamp is too old or in the future.');
    const unsigned = await request(app).post('/inbound/sendgrid').set('Content-Type', 'application/json').send(body);
    expect(unsigned.status).toBe(401);
    expect(await snapshot()).toEqual(before);
  });

  it('answers a signed body that is not an array of events with 400', async () => {
    const res = await signed('{"not":"an array"}');
    expect(res.status).toBe(400);
    expect(res.body.status).toBe('failed');
    const notJson = await signed('[{');
    expect(notJson.status).toBe(400);
  });
});

describe('POST /inbound/mailgun', () => {
  function signedBody(eventData: Record<string, unknown>, opts: { ts?: number; token?: string; key?: string } = {}) {
    const timestamp = String(opts.ts ?? now());
    const token = opts.token ?? randomUUID().replace(/-/g, '');
    const signature = createHmac('sha256', opts.key ?? MAILGUN_KEY).update(timestamp + token).digest('hex');
    return { signature: { timestamp, token, signature }, 'event-data': eventData };
  }
  const post = (body: unknown) => request(app).post('/inbound/mailgun').set('Content-Type', 'application/json').send(JSON.stringify(body));

  it('applies a permanent failure named by user-variables, a temporary one as deferred, a complaint by Message-ID', async () => {
    const hard = await sentRow('mg-hard@example.com');
    const later = await sentRow('mg-later@example.com');
    const spam = await sentRow('mg-spam@example.com');
    const failed = (recipient: string, severity: string, vars: Record<string, unknown>) => ({
      event: 'failed',
      severity,
      recipient,
      reason: 'bounce',
      'user-variables': vars,
      'delivery-status': { code: severity === 'permanent' ? 550 : 421, message: severity === 'permanent' ? '5.1.1 No such mailbox' : '4.4.2 Timeout', description: '' },
      message: { headers: { 'message-id': 'someone-else@mailgun.test' } },
    });
    expect((await post(signedBody(failed('mg-hard@example.com', 'permanent', { herald: hard.token })))).body).toEqual({ status: 'success', message: { received: 1, applied: 1 } });
    expect((await post(signedBody(failed('mg-later@example.com', 'temporary', { herald: later.token })))).body.message).toEqual({ received: 1, applied: 1 });
    const complaint = { event: 'complained', recipient: 'mg-spam@example.com', message: { headers: { 'message-id': spam.messageId.slice(1, -1) } } };
    expect((await post(signedBody(complaint))).body.message).toEqual({ received: 1, applied: 1 });

    expect(await suppression('mg-hard@example.com')).toMatchObject({ type: 'bounce', source: 'mailgun' });
    expect(await eventsOf('mg-hard@example.com')).toEqual([
      { type: 'bounced', data: { kind: 'hard', status: '5.1.1', diagnostic: '550 — 5.1.1 No such mailbox', source: 'mailgun' } },
    ]);
    expect(await suppression('mg-later@example.com')).toBeUndefined();
    expect((await eventsOf('mg-later@example.com')).map((e) => e.type)).toEqual(['deferred']);
    expect(await suppression('mg-spam@example.com')).toMatchObject({ type: 'complaint', source: 'mailgun' });
    // Other events (delivered, opened) are acknowledged and ignored.
    const delivered = await post(signedBody({ event: 'delivered', recipient: 'mg-hard@example.com', 'user-variables': { herald: hard.token } }));
    expect(delivered.body.message).toEqual({ received: 0, applied: 0 });
  });

  it('refuses a wrong key, an old timestamp and a replayed token: 401, nothing recorded', async () => {
    const r = await sentRow('mg-forged@example.com');
    const data = { event: 'failed', severity: 'permanent', recipient: 'mg-forged@example.com', 'user-variables': { herald: r.token } };
    const before = await snapshot();
    const wrong = await post(signedBody(data, { key: 'not-the-key-at-all' }));
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ status: 'failed', errors: 'The webhook signature is invalid.' });
    expect((await post(signedBody(data, { ts: now() - 3600 }))).status).toBe(401);
    expect((await post({ 'event-data': data })).status).toBe(401);
    expect(await snapshot()).toEqual(before);

    // The same signed request twice: the second is a replay.
    const once = signedBody(data);
    expect((await post(once)).status).toBe(200);
    const replay = await post(once);
    expect(replay.status).toBe(401);
  });

  it('refuses a replay after a restart: the seen tokens are kept in PostgreSQL, not in the process', async () => {
    const r = await sentRow('mg-restart@example.com');
    const once = signedBody({ event: 'failed', severity: 'temporary', recipient: 'mg-restart@example.com', 'user-variables': { herald: r.token } });
    expect((await post(once)).status).toBe(200);
    // A restarted Herald: the app and every module loaded anew (nothing kept in memory), on the same database.
    let restarted: Express | undefined;
    jest.isolateModules(() => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const fresh = require('../../src/app') as typeof import('../../src/app');
      restarted = fresh.createApp({ config, db, logger: createLogger('silent'), mailer: memoryMailer() });
    });
    const replay = await request(restarted!).post('/inbound/mailgun').set('Content-Type', 'application/json').send(JSON.stringify(once));
    expect(replay.status).toBe(401);
    expect(replay.body).toEqual({ status: 'failed', errors: 'The webhook timestamp is too old or in the future.' });
    expect((await eventsOf('mg-restart@example.com')).map((e) => e.type)).toEqual(['deferred']);
    // A new token is still welcome there.
    expect((await request(restarted!).post('/inbound/mailgun').set('Content-Type', 'application/json').send(JSON.stringify(signedBody({ event: 'delivered' })))).status).toBe(200);
  });

  it('an unsigned body that is not JSON fails the signature check: 401, not 400', async () => {
    for (const body of ['not json', '{"signature":', '[1,2]']) {
      const res = await request(app).post('/inbound/mailgun').set('Content-Type', 'application/json').send(body);
      expect({ body, status: res.status, errors: res.body.errors }).toEqual({ body, status: 401, errors: 'The webhook signature is invalid.' });
    }
    const form = await request(app).post('/inbound/mailgun').type('form').send({ event: 'failed' });
    expect(form.status).toBe(401);
  });
});

describe('POST /inbound/postmark', () => {
  const post = (body: unknown, auth?: [string, string]) => {
    const t = request(app).post('/inbound/postmark').set('Content-Type', 'application/json');
    return (auth ? t.auth(auth[0], auth[1]) : t).send(JSON.stringify(body));
  };
  const bounce = (email: string, type: string, token: string) => ({
    RecordType: 'Bounce',
    ID: 42,
    Type: type,
    TypeCode: 1,
    MessageID: randomUUID(),
    Description: 'The server was unable to deliver your message (ex: unknown user, mailbox not found).',
    Details: 'smtp;550 5.1.1 The email account that you tried to reach does not exist.',
    Email: email,
    Metadata: { herald: token },
  });

  it('applies a hard bounce and a spam complaint named by their metadata', async () => {
    const hard = await sentRow('pm-hard@example.com');
    const spam = await sentRow('pm-spam@example.com');
    const res = await post(bounce('pm-hard@example.com', 'HardBounce', hard.token), ['postmark', 'pm-password-123']);
    expect(res.status).toBe(200);
    expect(res.body.message).toEqual({ received: 1, applied: 1 });
    expect(await suppression('pm-hard@example.com')).toMatchObject({ type: 'bounce', source: 'postmark' });
    expect((await eventsOf('pm-hard@example.com'))[0].data).toMatchObject({ kind: 'hard', status: '5.1.1', source: 'postmark' });
    const complaint = { RecordType: 'SpamComplaint', Type: 'SpamComplaint', Email: 'pm-spam@example.com', MessageID: randomUUID(), Metadata: { herald: spam.token } };
    expect((await post(complaint, ['postmark', 'pm-password-123'])).body.message).toEqual({ received: 1, applied: 1 });
    expect(await suppression('pm-spam@example.com')).toMatchObject({ type: 'complaint', source: 'postmark' });
    // An auto-reply is not a bounce.
    expect((await post(bounce('pm-hard@example.com', 'AutoResponder', hard.token), ['postmark', 'pm-password-123'])).body.message).toEqual({
      received: 0,
      applied: 0,
    });
  });

  it('refuses wrong or missing credentials: 401, nothing recorded', async () => {
    const r = await sentRow('pm-forged@example.com');
    const before = await snapshot();
    expect((await post(bounce('pm-forged@example.com', 'HardBounce', r.token), ['postmark', 'wrong-password'])).status).toBe(401);
    expect((await post(bounce('pm-forged@example.com', 'HardBounce', r.token), ['someone', 'pm-password-123'])).status).toBe(401);
    expect((await post(bounce('pm-forged@example.com', 'HardBounce', r.token))).status).toBe(401);
    expect(await snapshot()).toEqual(before);
  });
});

describe('POST /inbound/ses (SNS)', () => {
  function snsMessage(fields: Record<string, string>, version: '1' | '2' = '2'): Record<string, string> {
    const m: Record<string, string> = {
      MessageId: randomUUID(),
      TopicArn: TOPIC,
      Timestamp: new Date().toISOString(),
      SignatureVersion: version,
      SigningCertURL: 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-test.pem',
      ...fields,
    };
    m.Signature = sign(version === '1' ? 'RSA-SHA1' : 'RSA-SHA256', Buffer.from(canonicalString(m)!), sns.key).toString('base64');
    return m;
  }
  const post = (m: unknown) => request(app).post('/inbound/ses').set('Content-Type', 'text/plain; charset=UTF-8').set('x-amz-sns-message-type', 'Notification').send(JSON.stringify(m));
  const bounceNotification = (email: string, token: string, bounceType = 'Permanent') =>
    JSON.stringify({
      notificationType: 'Bounce',
      bounce: {
        bounceType,
        bounceSubType: 'General',
        bouncedRecipients: [{ emailAddress: email, action: 'failed', status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user unknown' }],
        timestamp: new Date().toISOString(),
        feedbackId: randomUUID(),
      },
      mail: {
        messageId: 'ses-own-id',
        headers: [
          { name: 'Message-ID', value: '<ses-replaced@email.amazonses.com>' },
          { name: 'X-Herald-Recipient', value: token },
        ],
        commonHeaders: { messageId: '<ses-replaced@email.amazonses.com>' },
      },
    });

  it('applies a signed Bounce notification (SignatureVersion 1 and 2) named by X-Herald-Recipient, and a complaint', async () => {
    const v2 = await sentRow('ses-v2@example.com');
    const v1 = await sentRow('ses-v1@example.com');
    const spam = await sentRow('ses-spam@example.com');
    const res = await post(snsMessage({ Type: 'Notification', Message: bounceNotification('ses-v2@example.com', v2.token) }));
    expect(res.status).toBe(200);
    expect(res.body.message).toEqual({ received: 1, applied: 1 });
    expect((await post(snsMessage({ Type: 'Notification', Subject: 'Amazon SES Email Event Notification', Message: bounceNotification('ses-v1@example.com', v1.token) }, '1'))).body.message).toEqual({
      received: 1,
      applied: 1,
    });
    expect(await suppression('ses-v2@example.com')).toMatchObject({ type: 'bounce', source: 'ses' });
    expect(await suppression('ses-v1@example.com')).toMatchObject({ type: 'bounce', source: 'ses' });
    const complaint = JSON.stringify({
      notificationType: 'Complaint',
      complaint: { complainedRecipients: [{ emailAddress: 'ses-spam@example.com' }], complaintFeedbackType: 'abuse' },
      mail: { headers: [{ name: 'X-Herald-Recipient', value: spam.token }] },
    });
    expect((await post(snsMessage({ Type: 'Notification', Message: complaint }))).body.message).toEqual({ received: 1, applied: 1 });
    expect(await suppression('ses-spam@example.com')).toMatchObject({ type: 'complaint', source: 'ses' });
  });

  it('refuses a tampered message, a wrong signature version, another topic: 401, nothing recorded', async () => {
    const r = await sentRow('ses-forged@example.com');
    const before = await snapshot();
    const m = snsMessage({ Type: 'Notification', Message: bounceNotification('ses-forged@example.com', r.token) });
    const tampered = { ...m, Message: bounceNotification('ses-forged@example.com', r.token, 'Transient') };
    expect((await post(tampered)).status).toBe(401);
    expect((await post({ ...m, SignatureVersion: '3' })).status).toBe(401);
    const otherTopic = snsMessage({ Type: 'Notification', TopicArn: 'arn:aws:sns:eu-west-1:123456789012:other', Message: bounceNotification('ses-forged@example.com', r.token) });
    expect((await post(otherTopic)).status).toBe(401);
    expect(await snapshot()).toEqual(before);
  });

  it('an unsigned body that is not an SNS message fails the check: 401, not 400', async () => {
    for (const body of ['not json', '{"Type":', '"a string"', '[]']) {
      const res = await request(app).post('/inbound/ses').set('Content-Type', 'text/plain; charset=UTF-8').send(body);
      expect({ body, status: res.status }).toEqual({ body, status: 401 });
    }
  });

  it('in production fetches certificates only from https SNS hosts', async () => {
    const fetched: string[] = [];
    const server = http.createServer((req, res) => {
      fetched.push(req.url ?? '');
      res.end(sns.certPem);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const r = await sentRow('ses-cert@example.com');
      for (const certUrl of [
        `http://127.0.0.1:${port}/cert.pem`,
        `https://127.0.0.1:${port}/cert.pem`,
        'https://sns.eu-west-1.amazonaws.com.evil.test/cert.pem',
        'https://sns.eu-west-1.amazonaws.com/cert.txt',
      ]) {
        const m = snsMessage({ Type: 'Notification', SigningCertURL: certUrl, Message: bounceNotification('ses-cert@example.com', r.token) });
        const res = await request(production.app).post('/inbound/ses').set('Content-Type', 'text/plain').send(JSON.stringify(m));
        expect(res.status).toBe(401);
      }
      expect(fetched).toEqual([]);
      expect(await suppression('ses-cert@example.com')).toBeUndefined();
    } finally {
      server.close();
    }
  });

  it('confirms a subscription by fetching its SubscribeURL, only once the message verifies', async () => {
    const hits: string[] = [];
    const server = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      res.statusCode = req.url?.includes('Token=expired') ? 403 : 200;
      res.end('<ConfirmSubscriptionResponse/>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const confirm = snsMessage({
        Type: 'SubscriptionConfirmation',
        Message: 'You have chosen to subscribe to the topic.',
        Token: 'tok123',
        SubscribeURL: `http://127.0.0.1:${port}/?Action=ConfirmSubscription&Token=tok123`,
      });
      expect((await post({ ...confirm, Token: 'changed' })).status).toBe(401);
      expect(hits).toEqual([]);
      const res = await post(confirm);
      expect(res.status).toBe(200);
      expect(hits).toEqual(['/?Action=ConfirmSubscription&Token=tok123']);
      // SNS refusing the confirmation (an expired token): 502, and SNS will send it again.
      const expired = snsMessage({ Type: 'SubscriptionConfirmation', Message: 'x', Token: 'expired', SubscribeURL: `http://127.0.0.1:${port}/?Token=expired` });
      const refused = await post(expired);
      expect(refused.status).toBe(502);
      expect(refused.body.status).toBe('failed');
      // A SubscribeURL elsewhere is never fetched, even signed.
      const elsewhere = snsMessage({ Type: 'SubscriptionConfirmation', Message: 'x', Token: 't', SubscribeURL: 'http://169.254.169.254/latest/meta-data/' });
      expect((await post(elsewhere)).status).toBe(400);
    } finally {
      server.close();
    }
  });
});

describe('a provider that is not configured', () => {
  it.each(['sendgrid', 'mailgun', 'postmark', 'ses'])('/inbound/%s answers 401 and records nothing', async (provider) => {
    const r = await sentRow(`unconfigured-${provider}@example.com`);
    const before = await snapshot();
    const res = await request(bare.app)
      .post(`/inbound/${provider}`)
      .auth('postmark', 'pm-password-123')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify([{ event: 'bounce', email: `unconfigured-${provider}@example.com`, herald: r.token }]));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ status: 'failed', errors: 'This webhook is not configured.' });
    expect(await snapshot()).toEqual(before);
  });

  it('an unknown provider is not a route', async () => {
    const res = await request(app).post('/inbound/sparkpost').send('{}');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ status: 'failed', errors: 'Route not found' });
  });
});
