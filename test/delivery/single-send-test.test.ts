import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import { simpleParser, type ParsedMail } from 'mailparser';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { createApp } from '../../src/app';
import { domainRecords } from '../../src/dkim/records';
import { createLogger } from '../../src/logger';
import { smtpMailer, type Mailer } from '../../src/mail/mailer';
import { SendStatus } from '../../src/states';
import { isolatedUrl } from '../setup/isolated';
import { routerCheckedDb, unroutedStatements } from '../citus/router-check';
import { api, closePool, makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF2, expectSuccess, expectVal } from '../helpers/expect';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import type { Received } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { setupDelivery, waitForSend } from '../helpers/worker';

/**
 * POST /single/send/test through a real SMTP server (the API's mailer pooled to an in-process
 * sink), and the preview against what the worker really sends (issue 34): one rendering for the
 * preview, the test and the send.
 */
const { db, config } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50' }, 'send_tests');
const rig = setupDelivery({ config, db });

// The API, its mail to the sink; on test:citus its statements checked to run on one node, as setupApp's are.
const appDb = process.env.HERALD_TEST_ROUTER_CHECK === '1' ? routerCheckedDb(isolatedUrl(testDatabaseUrl(), 'send_tests')) : db;
let apiMailer: Mailer | undefined;
const app: Express = createApp({
  config,
  db: appDb,
  logger: createLogger('silent'),
  mailer: { target: 'sink', send: (m) => apiMailer!.send(m), close: async () => undefined },
});
beforeAll(() => {
  apiMailer = smtpMailer(rig.sink.url, { poolSize: 1 });
});
afterAll(async () => {
  await apiMailer?.close();
  if (appDb !== db) {
    await closePool(appDb);
    expect(unroutedStatements(appDb)).toEqual([]);
  }
});

const HTML =
  '<html><body><h1>Hello ((first_name)) ((last_name))</h1><p>Plan: ((plan))</p><p><a href="https://example.com/offer?a=1&amp;b=2">Offer</a></p></body></html>';

let a: TestAccount;
let b: TestAccount;
let list: number;
let ada: number;
let otherContact: number;
let dnsTxt: Map<string, string>;

beforeAll(async () => {
  a = rig.account;
  b = await makeAccount(db);
  list = await makeContactType(db, a);
  const [field] = await db('custom_fields').insert({ user_id: a.id, field_name: 'plan', field_type: 'text' }).returning('id');
  [ada] = await makeContacts(db, a, list, [{ email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', custom_fields: JSON.stringify({ [field.id]: 'gold <vip>' }) }]);
  [otherContact] = await makeContacts(db, b, await makeContactType(db, b), [{ email: 'bob@example.com', first_name: 'Bob' }]);
  // The records GET /sender/dns says to publish for the sender's domain, answered as DNS would.
  const { records } = await domainRecords(db, config, a.id, 'acme.test');
  dnsTxt = new Map(records.filter((r) => r.type === 'TXT').map((r) => [r.host.toLowerCase(), r.value]));
});

async function verifyDkim(raw: string) {
  const resolver = async (name: string, rr: string) => {
    const value = rr === 'TXT' ? dnsTxt.get(name.toLowerCase()) : undefined;
    if (!value) throw Object.assign(new Error('NXDOMAIN'), { code: 'ENOTFOUND' });
    return [value.match(/.{1,255}/g)!];
  };
  const { results } = await dkimVerify(Buffer.from(raw), { resolver } as never);
  expect(results).toHaveLength(1);
  expect({ result: results[0].status.result, domain: (results[0] as unknown as { signingDomain: string }).signingDomain }).toEqual({ result: 'pass', domain: 'acme.test' });
}

/** A draft of account a with everything a message needs (never due: nothing schedules it). */
async function draft(fields: Record<string, unknown> = {}, account: TestAccount = a): Promise<string> {
  const res = await api(app, account).form('/single/send/create', {
    draft: 1,
    single_send_name: 'Launch',
    template_id: 1,
    template_html: HTML,
    sender_id: rig.sender,
    unsubscribe_group_id: rig.group,
    subject: 'News for ((first_name))',
    preheader: 'Hi ((first_name))',
    recipient_id: [`contacts_${list}`],
    schedule_type: 0,
    ...fields,
  });
  expectSuccess(res);
  return res.body.message.utr as string;
}

const mailTo = (to: string) => rig.sink.received.filter((m) => m.to.includes(to.toLowerCase()));
const waitForMail = (to: string, n: number) => waitFor(`${n} message(s) to ${to}`, () => (mailTo(to).length >= n ? mailTo(to) : undefined));

/** What a send's statistics and rows say: a test message must change none of it. */
async function footprint(utr: string) {
  const row = await db('single_sends').where({ utr }).first();
  return {
    status: row.status,
    counters: [row.triggered, row.delivered, row.unique_opens, row.total_opens, row.bounces, row.unsubscribes],
    deliveries: (await db('deliveries').where({ user_id: row.user_id, single_send_id: row.id }).count<{ count: string }[]>('* as count'))[0].count,
    events: (await db('events').where({ user_id: row.user_id, single_send_id: row.id }).count<{ count: string }[]>('* as count'))[0].count,
    links: (await db('tracked_links').where({ user_id: row.user_id, single_send_id: row.id }).count<{ count: string }[]>('* as count'))[0].count,
  };
}

describe('POST /single/send/test', () => {
  it('sends each address one copy, “[Test] ” before the subject, DKIM-signed, filled from the contact; no statistics, no status change', async () => {
    const utr = await draft();
    const before = await footprint(utr);
    const res = await api(app, a).form('/single/send/test', { utr, emails: ['me@team.example', 'boss@team.example'], contact_id: ada });
    expectSuccess(res, { sent: 2 });
    for (const to of ['me@team.example', 'boss@team.example']) {
      const [mail] = await waitForMail(to, 1);
      await verifyDkim(mail.raw);
      const parsed = await simpleParser(mail.raw);
      expect(parsed.subject).toBe('[Test] News for Ada');
      expect(parsed.to).toMatchObject({ value: [{ address: to }] });
      expect(parsed.from).toMatchObject({ value: [{ address: 'news@acme.test', name: 'Acme News' }] });
      expect(parsed.html).toContain('<h1>Hello Ada Lovelace</h1>');
      expect(parsed.html).toContain('Plan: gold &#60;vip&#62;');
      // A test's links lead straight to their destination: no click is recorded for it.
      expect(parsed.html).toContain('href="https://example.com/offer?a=1&#38;b=2"');
      expect(parsed.html).not.toContain('/t/click/');
      expect(parsed.text).toContain('Hello Ada Lovelace');
      expect(mail.raw).toMatch(/^List-Unsubscribe: <http:\/\/herald\.test\/unsubscribe\/[0-9a-f]{56}>\r?$/m);
    }
    expect(await footprint(utr)).toEqual(before);
    expect(before).toMatchObject({ status: SendStatus.Draft, counters: [0, 0, 0, 0, 0, 0] });
    expect([before.deliveries, before.events, before.links].map(Number)).toEqual([0, 0, 0]);
  });

  it('fills sample values without contact_id, and sends one copy of each A/B variation to each address', async () => {
    const utr = await draft({ ab_test_type: 'subject', 'ab_variations[0][subject]': 'Other news for ((first_name))' });
    expectSuccess(await api(app, a).form('/single/send/test', { utr, emails: ['ab@team.example'] }), { sent: 2 });
    const mails = await Promise.all((await waitForMail('ab@team.example', 2)).map((m: Received) => simpleParser(m.raw)));
    expect(mails.map((m: ParsedMail) => m.subject).sort()).toEqual(['[Test] News for Jane', '[Test] Other news for Jane']);
  });

  it('refuses a suppressed address with VAL, sending nothing', async () => {
    const utr = await draft();
    await db('global_unsubscribers').insert({ user_id: a.id, email_address: 'Gone@team.example' });
    await db('suppressions').insert({ user_id: a.id, email: 'bounced@team.example', type: 'bounce', source: 'api' });
    await db('unsubscribe_group_recipients').insert({ user_id: a.id, unsubscribe_groups_id: rig.group, email_address: 'grouped@team.example' });
    const res = await api(app, a).form('/single/send/test', { utr, emails: ['fine@team.example', 'gone@team.example', 'bounced@team.example', 'grouped@team.example'] });
    expectVal(res, {
      'emails.1': ['The emails.1 is suppressed (unsubscribed): this account sends it no mail.'],
      'emails.2': ['The emails.2 is suppressed (bounced): this account sends it no mail.'],
      'emails.3': ['The emails.3 is suppressed (group unsubscribed): this account sends it no mail.'],
    });
    expect(Object.keys(res.body.errors)).toHaveLength(3);
    // Another account's lists do not suppress this one's tests.
    await db('global_unsubscribers').insert({ user_id: b.id, email_address: 'fine2@team.example' });
    expectSuccess(await api(app, a).form('/single/send/test', { utr, emails: ['fine2@team.example'] }), { sent: 1 });
    expect(mailTo('fine@team.example')).toHaveLength(0);
  });

  it('answers VAL for the addresses (none, more than 10, malformed) and for a send that cannot make a message yet', async () => {
    const utr = await draft();
    expectVal(await api(app, a).form('/single/send/test', { utr }), { emails: ['The emails field is required.'] });
    const eleven = Array.from({ length: 11 }, (_, i) => `t${i}@team.example`);
    expectVal(await api(app, a).form('/single/send/test', { utr, emails: eleven }), { emails: ['The emails must not have more than 10 items.'] });
    expectVal(await api(app, a).form('/single/send/test', { utr, emails: ['me@team.example', 'nope'] }), { 'emails.1': ['The emails.1 must be a valid email address.'] });
    const bare = await draft({ subject: undefined, sender_id: undefined, template_id: undefined, template_html: undefined });
    expectVal(await api(app, a).form('/single/send/test', { utr: bare, emails: ['me@team.example'] }), {
      subject: ['The subject field is required.'],
      sender_id: ['The sender id field is required.'],
    });
    const noDesign = await draft({ template_id: undefined, template_html: undefined });
    expectVal(await api(app, a).form('/single/send/test', { utr: noDesign, emails: ['me@team.example'] }), { template_id: ['The template id field is required.'] });
    const unverified = await draft({ sender_id: await makeSender(db, a, false) });
    expectVal(await api(app, a).form('/single/send/test', { utr: unverified, emails: ['me@team.example'] }), { sender_id: ['The selected sender id is not verified.'] });
    expect(mailTo('me@team.example')).toHaveLength(1);
  });

  it('answers NF2 for another account’s or an unknown send and for another account’s contact, VAL without utr, AUTH without keys', async () => {
    const utr = await draft();
    const sent = rig.sink.received.length;
    expectNF2(await api(app, b).form('/single/send/test', { utr, emails: ['x@team.example'] }));
    expectNF2(await api(app, a).form('/single/send/test', { utr: randomUUID(), emails: ['x@team.example'] }));
    expectNF2(await api(app, a).form('/single/send/test', { utr, emails: ['x@team.example'], contact_id: otherContact }));
    expectVal(await api(app, a).form('/single/send/test', { emails: ['x@team.example'] }), { utr: ['The utr field is required.'] });
    expectAuthMissing(await api(app).form('/single/send/test', { utr, emails: ['x@team.example'] }));
    expect(rig.sink.received.length).toBe(sent);
  });

  it('answers 503 when the mail server refuses a message, never a 500; the messages not sent do not count', async () => {
    const account = await makeAccount(db);
    const utr = await draft({ sender_id: await makeSender(db, account), unsubscribe_group_id: await makeGroup(db, account), recipient_id: undefined }, account);
    rig.sink.rcpt = (address) => (address === 'refused@team.example' ? { code: 550, message: 'No such user' } : 'accept');
    try {
      const res = await api(app, account).form('/single/send/test', { utr, emails: ['ok@team.example', 'refused@team.example', 'later@team.example'] });
      expect(res.status).toBe(503);
      expect(res.body.status).toBe('failed');
      expect(res.body.errors).toMatch(/^Service Unavailable: the mail server did not take the test message to refused@team\.example \(1 of 3 sent\): .*No such user/);
    } finally {
      rig.sink.rcpt = () => 'accept';
    }
    expect(await db('test_sends').where({ user_id: account.id }).pluck('email')).toEqual(['ok@team.example']);
  });

  it('sends at most 50 test messages per account and hour, also to concurrent requests; then 429 with Retry-After', async () => {
    const account = await makeAccount(db);
    const utr = await draft({ sender_id: await makeSender(db, account), unsubscribe_group_id: await makeGroup(db, account), recipient_id: undefined }, account);
    const ten = (n: number) => Array.from({ length: 10 }, (_, i) => `limit${n}.${i}@team.example`);
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => api(app, account).form('/single/send/test', { utr, emails: ten(n) })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429]);
    const refused = results.find((r) => r.status === 429)!;
    expect(refused.body).toEqual({ status: 'failed', errors: expect.stringMatching(/^Too Many Requests: at most 50 test messages are sent per hour; try again in \d+ seconds\.$/) });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(3000);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    expect(refused.body.errors).toContain(`in ${retryAfter} seconds`);
    // The 51st message: refused too; another account is not limited by this one.
    const one = await api(app, account).form('/single/send/test', { utr, emails: ['one.more@team.example'] });
    expect(one.status).toBe(429);
    expectSuccess(await api(app, a).form('/single/send/test', { utr: await draft(), emails: ['other.account@team.example'] }), { sent: 1 });
    expect(Number((await db('test_sends').where({ user_id: account.id }).count<{ count: string }[]>('* as count'))[0].count)).toBe(50);
    // Once the hour has passed, they are allowed again.
    await db('test_sends').where({ user_id: account.id }).update({ created_at: db.raw("now() - interval '61 minutes'") });
    expectSuccess(await api(app, account).form('/single/send/test', { utr, emails: ['one.more@team.example'] }), { sent: 1 });
  });
});

/** The message's HTML or text with its tokens (open pixel, unsubscribe link, tracked links) masked. */
const masked = (s: string) => s.replace(/\b[0-9a-f]{68}\b/g, '<click-token>').replace(/\b[0-9a-f]{56}\b/g, '<token>');

describe('GET /single/send/preview', () => {
  it('is byte for byte the message the worker sends that contact, but for its tokens', async () => {
    const target = await makeContactType(db, a, 'Preview check');
    const [grace] = await makeContacts(db, a, target, [{ email: 'grace@example.com', first_name: 'Grace', last_name: 'Hopper', country_id: (await db('countries').where({ iso_code: 'GB' }).first('id')).id }]);
    const html = HTML.replace('</body>', '<p>((country)), ((email)), ((unknown))</p><a href="https://example.com/two">Two</a></body>');
    const utr = await draft({ recipient_id: [`contacts_${target}`], template_html: html });
    const previewRes = await api(app, a).get(`/single/send/preview?utr=${utr}&contact_id=${grace}`);
    expectSuccess(previewRes);
    const preview = previewRes.body.message as { subject: string; html: string; text: string };

    expectSuccess(await api(app, a).form('/single/send/schedule', { utr }));
    await waitForSend(db, utr);
    const [mail] = await waitForMail('grace@example.com', 1);
    const sent = await simpleParser(mail.raw);
    expect(sent.subject).toBe(preview.subject);
    expect(masked(sent.html as string)).toBe(masked(preview.html));
    expect(masked(sent.text as string)).toBe(masked(preview.text));
    // What was compared holds what matters: the contact's values, tracked links, the unsubscribe link.
    expect(preview.html).toContain('Hello Grace Hopper');
    expect(preview.html).toContain('United Kingdom, grace@example.com, </p>');
    expect(masked(preview.html)).toContain('href="http://herald.test/t/click/<click-token>"');
    expect(masked(preview.html)).toContain('http://herald.test/unsubscribe/<token>');
  });
});
