import { privateKeyPem } from '../../src/dkim/keys';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { startDnsServer, type DnsServer } from '../helpers/dns';
import { expectAuthMissing, expectNF1, expectSuccess } from '../helpers/expect';
import { makeSender } from '../helpers/fixtures';

/** GET /sender/dns, POST /sender/dns/check and POST /sender/dns/rotate against a real DNS server (dns2). */
const { app, db, config } = setupApp({ BOUNCE_DOMAIN: 'bounces.herald.test' });
let a: TestAccount;
let b: TestAccount;
let sender: number;
let otherSender: number;
let dns: DnsServer;

interface Rec {
  purpose: string;
  type: string;
  host: string;
  value: string;
  status: string;
}

beforeAll(async () => {
  dns = await startDnsServer();
  config.dnsServers = [dns.servers];
  a = await makeAccount(db);
  b = await makeAccount(db);
  sender = await makeSender(db, a);
  otherSender = await makeSender(db, b);
});
afterAll(() => dns.close());

const records = async (account = a, id = sender): Promise<Rec[]> => {
  const res = await api(app, account).get(`/sender/dns?sender_id=${id}`);
  expectSuccess(res);
  return res.body.message.records;
};
const check = (id = sender) => api(app, a).form(`/sender/dns/check?sender_id=${id}`, {});

describe('GET /sender/dns', () => {
  it('lists the DKIM, bounce MX, SPF and DMARC records of the sender’s domain, unchecked', async () => {
    const res = await api(app, a).get(`/sender/dns?sender_id=${sender}`);
    expectSuccess(res);
    const { domain, records: list } = res.body.message as { domain: string; records: Rec[] };
    expect(domain).toBe('acme.test');
    expect(list).toEqual([
      { purpose: 'dkim', type: 'TXT', host: expect.stringMatching(/^herald\d{6}\d+\._domainkey\.acme\.test$/), value: expect.stringMatching(/^v=DKIM1; k=rsa; p=MIIB/), status: 'unchecked' },
      // INBOUND_HOSTNAME defaults to PUBLIC_URL's host.
      { purpose: 'bounce', type: 'MX', host: 'bounces.herald.test', value: '10 herald.test', status: 'unchecked' },
      { purpose: 'spf', type: 'TXT', host: 'bounces.herald.test', value: 'v=spf1 a:herald.test ~all', status: 'unchecked' },
      { purpose: 'dmarc', type: 'TXT', host: '_dmarc.acme.test', value: 'v=DMARC1; p=none; adkim=r; aspf=r', status: 'unchecked' },
    ]);
    // The same key on every call; p= is the public key openssl writes (SPKI, base64).
    expect((await records())[0]).toEqual(list[0]);
  });

  it('never shows a private key, and keeps it encrypted under the master key', async () => {
    const res = await api(app, a).get(`/sender/dns?sender_id=${sender}`);
    expect(JSON.stringify(res.body)).not.toMatch(/PRIVATE|MIIE/);
    const row = await db('dkim_keys').where({ user_id: a.id }).first('private_key');
    expect(Buffer.from(row.private_key).toString('latin1')).not.toMatch(/PRIVATE KEY/);
    // Readable with the master key only (test/unit/master-key.test.ts covers DATA_DIR/master.key).
    expect(privateKeyPem(config, row)).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(() => privateKeyPem({ ...config, masterKey: Buffer.alloc(32) }, row)).toThrow(/cannot be decrypted/);
  });

  it('answers NF1 for a missing, malformed, deleted or other account’s sender', async () => {
    for (const q of ['', '?sender_id=', '?sender_id=abc', '?sender_id=999999', `?sender_id=${otherSender}`]) {
      expectNF1(await api(app, a).get(`/sender/dns${q}`));
      expectNF1(await api(app, a).form(`/sender/dns/check${q}`, {}));
      expectNF1(await api(app, a).form(`/sender/dns/rotate${q}`, {}));
    }
    const gone = await makeSender(db, a);
    await db('senders').where({ id: gone }).update({ deleted_at: db.fn.now() });
    expectNF1(await api(app, a).get(`/sender/dns?sender_id=${gone}`));
    // Nothing was made for the other account.
    expect(await db('dkim_keys').where({ user_id: b.id }).first('id')).toBeUndefined();
  });

  it('needs the keys', async () => {
    expectAuthMissing(await api(app).get(`/sender/dns?sender_id=${sender}`));
    expectAuthMissing(await api(app).form(`/sender/dns/check?sender_id=${sender}`, {}));
    expectAuthMissing(await api(app).form(`/sender/dns/rotate?sender_id=${sender}`, {}));
  });
});

describe('POST /sender/dns/check', () => {
  it('finds records missing, mismatched or verified, and GET shows the last check', async () => {
    const first = await check();
    expectSuccess(first);
    expect((first.body.message.records as Rec[]).map((r) => r.status)).toEqual(['missing', 'missing', 'missing', 'missing']);

    const [dkim, mx, spf, dmarc] = await records();
    dns.set(dkim.host, 'TXT', ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong']);
    dns.set(mx.host, 'MX', ['10 mx.elsewhere.test']);
    dns.set(spf.host, 'TXT', ['v=spf1 include:elsewhere.test -all']);
    dns.set(dmarc.host, 'TXT', [dmarc.value]);
    expect(((await check()).body.message.records as Rec[]).map((r) => r.status)).toEqual(['mismatch', 'mismatch', 'mismatch', 'verified']);

    dns.set(dkim.host, 'TXT', [dkim.value]);
    dns.set(mx.host, 'MX', ['10 herald.test.']);
    dns.set(spf.host, 'TXT', ['v=spf1 a:herald.test mx ~all', 'unrelated=1']);
    const last = await check();
    expect((last.body.message.records as Rec[]).map((r) => r.status)).toEqual(['verified', 'verified', 'verified', 'verified']);
    expect((await records()).map((r) => r.status)).toEqual(['verified', 'verified', 'verified', 'verified']);
  });
});

describe('POST /sender/dns/rotate', () => {
  it('makes a new selector that is listed beside the signing one until a check finds it published', async () => {
    const [current] = await records();
    const res = await api(app, a).form(`/sender/dns/rotate?sender_id=${sender}`, {});
    expectSuccess(res);
    const { selector } = res.body.message as { selector: string };
    expect(Object.keys(res.body.message)).toEqual(['selector']);
    const listed = (await records()).filter((r) => r.purpose === 'dkim');
    expect(listed.map((r) => [r.host.split('.')[0], r.status])).toEqual([
      [current.host.split('.')[0], 'verified'],
      [selector, 'unchecked'],
    ]);
    // Rotating again replaces the key that never signed.
    const again = await api(app, a).form(`/sender/dns/rotate?sender_id=${sender}`, {});
    const next = again.body.message.selector as string;
    expect(next).not.toBe(selector);
    const pending = (await records()).filter((r) => r.purpose === 'dkim')[1];
    expect(pending.host.split('.')[0]).toBe(next);
    dns.set(pending.host, 'TXT', [pending.value]);
    const checked = (await check()).body.message.records as Rec[];
    expect(checked.filter((r) => r.purpose === 'dkim').map((r) => [r.host.split('.')[0], r.status])).toEqual([[next, 'verified']]);
    expect(await db('dkim_keys').where({ user_id: a.id }).orderBy('id').select('state')).toEqual([{ state: 'retired' }, { state: 'retired' }, { state: 'active' }]);
  });
});

describe('an IP address where SPF would name a host', () => {
  // PUBLIC_URL on an address (INBOUND_HOSTNAME's default) and an SMTP relay given by address.
  const byAddress = setupApp({ PUBLIC_URL: 'http://127.0.0.1:3000' });
  const relayV6 = setupApp({ SMTP_URL: 'smtp://[2001:db8::25]:587' });

  it('is an ip4:/ip6: mechanism, not a: (which takes a domain), and checks as such', async () => {
    byAddress.config.dnsServers = [dns.servers];
    const owner = await makeAccount(byAddress.db);
    const id = await makeSender(byAddress.db, owner);
    const got = await api(byAddress.app, owner).get(`/sender/dns?sender_id=${id}`);
    expectSuccess(got);
    const spf = (got.body.message.records as Rec[]).find((r) => r.purpose === 'spf')!;
    expect(spf.value).toBe('v=spf1 ip4:127.0.0.1 ~all');
    // No BOUNCE_DOMAIN here (with an IP in PUBLIC_URL it would need INBOUND_HOSTNAME): no MX.
    expect((got.body.message.records as Rec[]).map((r) => r.purpose)).toEqual(['dkim', 'spf', 'dmarc']);
    dns.set(spf.host, 'TXT', ['v=spf1 ip4:127.0.0.1 -all']);
    const checked = await api(byAddress.app, owner).form(`/sender/dns/check?sender_id=${id}`, {});
    expect((checked.body.message.records as Rec[]).find((r) => r.purpose === 'spf')!.status).toBe('verified');

    const other = await makeAccount(relayV6.db);
    const relayed = await api(relayV6.app, other).get(`/sender/dns?sender_id=${await makeSender(relayV6.db, other)}`);
    expect((relayed.body.message.records as Rec[]).find((r) => r.purpose === 'spf')!.value).toBe('v=spf1 ip6:2001:db8::25 ~all');
  });
});
