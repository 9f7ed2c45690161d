import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { createApp } from '../../src/app';
import { domainRecords, type DnsRecord } from '../../src/dkim/records';
import { createLogger } from '../../src/logger';
import { smtpMailer, type Mailer } from '../../src/mail/mailer';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { startDnsServer, type DnsServer } from '../helpers/dns';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType, makeGroup } from '../helpers/fixtures';
import { createAutomation, createSend } from '../helpers/sends';
import { startSmtpSink, type Received, type SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { runWorker } from '../helpers/worker';

/**
 * Every kind of message Herald sends — a single send, an automation email, a sender
 * verification mail and a notification mail — arrives through a real SMTP server with a DKIM
 * signature that mailauth verifies against the records GET /sender/dns (and `herald dns`, for
 * MAIL_FROM's domain) says to publish, served by a real DNS server; also across a key rotation.
 */
const base = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50', MAIL_FROM: 'herald@herald.test' }, 'dkim');
const { db, config } = base;
let sink: SmtpSink;
let dns: DnsServer;
let a: TestAccount;
let sender: number;
let group: number;

// The API's own mail (sender verification) goes through the same SMTP sink as the worker's.
let sinkMailer: Mailer;
const app = createApp({
  config,
  db,
  logger: createLogger('silent'),
  mailer: { target: 'sink', send: (m) => sinkMailer.send(m), close: async () => undefined },
});

beforeAll(async () => {
  sink = await startSmtpSink();
  sinkMailer = smtpMailer(sink.url, { poolSize: 1 });
  dns = await startDnsServer();
  config.dnsServers = [dns.servers];
});
runWorker({ config, db, mailer: () => smtpMailer(sink.url, { poolSize: 2 }) });
afterAll(async () => {
  await sinkMailer.close();
  await sink.close();
  await dns.close();
});

const REQUIRED = ['from', 'to', 'subject', 'date', 'message-id', 'mime-version', 'content-type'];
const LIST = ['list-unsubscribe', 'list-unsubscribe-post'];

/** Publishes records as GET /sender/dns gives them. */
function publish(records: DnsRecord[]): void {
  for (const r of records) dns.set(r.host, r.type, [r.value]);
}

async function verify(mail: Received, headers: string[]) {
  const { results } = await dkimVerify(Buffer.from(mail.raw), { resolver: dns.resolve } as never);
  expect(results).toHaveLength(1);
  const [result] = results;
  expect({ result: result.status.result, comment: result.status.comment ?? null }).toEqual({ result: 'pass', comment: null });
  const signed = (result as unknown as { signingHeaders: { keys: string } }).signingHeaders.keys.toLowerCase().split(/:\s*/);
  expect(signed).toEqual(expect.arrayContaining(headers));
  return result as unknown as { selector: string; signingDomain: string };
}

const received = (to: string) => sink.received.filter((m) => m.to[0] === to.toLowerCase());
const waitForMail = (to: string, n: number) =>
  waitFor(`${n} message(s) to ${to}`, () => (received(to).length >= n ? received(to) : undefined), { describe: () => sink.received.map((m) => m.to[0]) });

async function senderDns() {
  const res = await api(app, a).get(`/sender/dns?sender_id=${sender}`);
  expectSuccess(res);
  return res.body.message as { domain: string; records: DnsRecord[] };
}

let sends = 0;
async function singleSend(to: string): Promise<Received> {
  sends += 1;
  const list = await makeContactType(db, a, `List ${sends}`);
  await makeContacts(db, a, list, [{ email: to, first_name: 'Ada' }]);
  await createSend(app, db, a, { sender, group, list }, { single_send_name: `Send ${sends}`, subject: 'News for ((first_name))' });
  return (await waitForMail(to, 1))[0];
}

beforeAll(async () => {
  a = await makeAccount(db);
  group = await makeGroup(db, a, 'News');
  const gb = await db('countries').where({ iso_code: 'GB' }).first('id');
  expectSuccess(
    await api(app, a).form('/sender/save', {
      from_name: 'Acme',
      from_email: 'news@Acme.test',
      reply_to_email: 'reply@acme.test',
      country_id: gb.id,
      company_address: '1 High Street',
      nickname: 'acme',
    }),
  );
  sender = (await db('senders').where({ user_id: a.id }).first('id')).id;
  // Herald's own domain: what `herald dns` prints (the same function).
  publish((await domainRecords(db, config, null, 'herald.test')).records);
});

describe('DKIM signatures', () => {
  it('are made for the sender’s domain when the sender is saved, and GET /sender/dns lists the records to publish', async () => {
    const { domain, records } = await senderDns();
    expect(domain).toBe('acme.test');
    expect(records.map((r) => [r.purpose, r.type, r.status])).toEqual([
      ['dkim', 'TXT', 'unchecked'],
      ['spf', 'TXT', 'unchecked'],
      ['dmarc', 'TXT', 'unchecked'],
    ]);
    expect(records[0].host).toMatch(/^herald\d{6}1\._domainkey\.acme\.test$/);
    expect(records[0].value).toMatch(/^v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA[A-Za-z0-9+/]+=*$/);
  });

  it('sign the sender verification mail with the key of MAIL_FROM’s domain', async () => {
    const [mail] = await waitForMail('news@Acme.test', 1);
    const r = await verify(mail, REQUIRED);
    expect(r.signingDomain).toBe('herald.test');
  });

  it('sign a single send (List-Unsubscribe headers included) and the notification it raises', async () => {
    publish((await senderDns()).records);
    await db('senders').where({ id: sender }).update({ is_verified: 1 });
    expectSuccess(await api(app, a).form('/notification-recipient/save', { email_address: 'boss@acme.test', email_owner: 'Boss' }));
    const mail = await singleSend('ada@example.com');
    const r = await verify(mail, [...REQUIRED, ...LIST]);
    expect(r.signingDomain).toBe('acme.test');
    const [notice] = await waitForMail('boss@acme.test', 1);
    expect((await verify(notice, REQUIRED)).signingDomain).toBe('herald.test');
  });

  it('sign an automation email', async () => {
    const list = await makeContactType(db, a, 'Flow');
    await makeContacts(db, a, list, [{ email: 'flow@example.com' }]);
    const { utr } = await createAutomation(app, db, a, { group, list }, { automation_name: 'Flow' });
    expectSuccess(
      await api(app, a).form('/automations/schedule/create', {
        utr,
        sender_id: sender,
        subject: 'Welcome',
        waiting_period: 1,
        waiting_type: 'instantly',
        template_id: 3,
        preview_img: 'template-welcome.png',
        template_html: '<html><body><p>Welcome</p><a href="((unsubscribe_preferences))">prefs</a></body></html>',
      }),
    );
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    const [mail] = await waitForMail('flow@example.com', 1);
    expect((await verify(mail, [...REQUIRED, ...LIST])).signingDomain).toBe('acme.test');
  });

  it('keep the old selector after a rotation until the new record is checked, then use the new one', async () => {
    const before = (await senderDns()).records[0];
    const oldSelector = before.host.split('.')[0];
    const rotated = await api(app, a).form(`/sender/dns/rotate?sender_id=${sender}`, {});
    expectSuccess(rotated);
    const { selector } = rotated.body.message as { selector: string };
    expect(selector).not.toBe(oldSelector);
    const listed = (await senderDns()).records.filter((r) => r.purpose === 'dkim');
    expect(listed.map((r) => r.host.split('.')[0])).toEqual([oldSelector, selector]);

    // Not yet published: a check finds it missing, and mail still goes out under the old key.
    const checked = await api(app, a).form(`/sender/dns/check?sender_id=${sender}`, {});
    expectSuccess(checked);
    expect((checked.body.message.records as DnsRecord[]).map((r) => [r.purpose, r.status])).toEqual([
      ['dkim', 'verified'],
      ['dkim', 'missing'],
      ['spf', 'verified'],
      ['dmarc', 'verified'],
    ]);
    expect((await verify(await singleSend('before@example.com'), REQUIRED)).selector).toBe(oldSelector);

    // Published and checked: the new key takes over.
    publish(listed);
    const again = await api(app, a).form(`/sender/dns/check?sender_id=${sender}`, {});
    expectSuccess(again);
    const after = again.body.message.records as DnsRecord[];
    expect(after.map((r) => [r.purpose, r.host.split('.')[0], r.status])).toEqual([
      ['dkim', selector, 'verified'],
      ['spf', 'acme', 'verified'],
      ['dmarc', '_dmarc', 'verified'],
    ]);
    expect((await verify(await singleSend('after@example.com'), REQUIRED)).selector).toBe(selector);
  });
});
