import { dnsFor, type Dns } from '../../src/dns';
import { providerOf, providerOfMx } from '../../src/routes/providers';
import { startDnsServer, type DnsServer } from '../helpers/dns';

/**
 * The receiving provider of a recipient domain (src/routes/providers.ts): the lowest-preference MX
 * mapped by host suffix, read through a DNS server on loopback (DNS_SERVERS), cached per process.
 */

let server: DnsServer;
let dns: Dns;

beforeAll(async () => {
  server = await startDnsServer();
  dns = dnsFor({ dnsServers: [server.servers] });
});
afterAll(() => server.close());

const mxQueries = (name: string) => server.queries.filter((q) => q.name.toLowerCase() === name && q.type === 15).length;

describe('providerOf', () => {
  it.each([
    ['gmail-like.test', 'google', ['5 gmail-smtp-in.l.google.com', '10 alt1.gmail-smtp-in.l.google.com']],
    ['workspace.test', 'google', ['1 smtp.google.com.']],
    ['m365.test', 'microsoft', ['0 m365-test.mail.protection.outlook.com']],
    ['hotmail-like.test', 'microsoft', ['2 hotmail-com.olc.protection.outlook.com']],
    ['yahoo-like.test', 'yahoo', ['1 mta5.am0.yahoodns.net', '1 mta6.am0.yahoodns.net']],
    ['icloud-like.test', 'apple', ['10 mx01.mail.icloud.com', '10 mx02.mail.icloud.com']],
    ['gmx-like.test', 'united-internet', ['10 mx00.emig.gmx.net']],
    ['webde-like.test', 'united-internet', ['10 mx-ha03.web.de']],
    ['fastmail-like.test', 'fastmail', ['10 in1-smtp.messagingengine.com']],
    ['yandex-like.test', 'yandex', ['10 mx.yandex.net']],
    ['proton-like.test', 'protonmail', ['10 mail.protonmail.ch', '20 mailsec.protonmail.ch']],
  ])('%s → %s', async (domain, expected, mx) => {
    server.set(domain, 'MX', mx);
    expect(await providerOf(dns, domain)).toBe(expected);
  });

  it('reads the lowest preference, whatever the order of the answer', async () => {
    server.set('split-a.test', 'MX', ['20 mx.split-a.test', '10 split-a.mail.protection.outlook.com']);
    server.set('split-b.test', 'MX', ['10 mx.split-b.test', '20 aspmx.l.google.com']);
    expect(await providerOf(dns, 'split-a.test')).toBe('microsoft');
    expect(await providerOf(dns, 'split-b.test')).toBe('split-b.test');
  });

  it('is the domain itself (lower-cased) for any other MX, for none, and for a null MX', async () => {
    server.set('own.example.test', 'MX', ['10 mx1.own.example.test']);
    server.set('look-alike.test', 'MX', ['10 mx.notgoogle.com']);
    server.set('null-mx.test', 'MX', ['0 .']);
    expect(await providerOf(dns, 'Own.Example.TEST')).toBe('own.example.test');
    expect(await providerOf(dns, 'look-alike.test')).toBe('look-alike.test');
    expect(await providerOf(dns, 'no-such-domain.test')).toBe('no-such-domain.test');
    expect(await providerOf(dns, 'null-mx.test')).toBe('null-mx.test');
  });

  it('asks once an hour per domain, and once for lookups at the same time', async () => {
    server.set('cached.test', 'MX', ['10 aspmx.l.google.com']);
    const t0 = Date.now();
    expect(await Promise.all([providerOf(dns, 'cached.test', t0), providerOf(dns, 'cached.test', t0)])).toEqual(['google', 'google']);
    expect(mxQueries('cached.test')).toBe(1);
    // The domain moved to Microsoft: the cached answer holds for the hour.
    server.set('cached.test', 'MX', ['10 cached-test.mail.protection.outlook.com']);
    expect(await providerOf(dns, 'CACHED.test', t0 + 3_599_000)).toBe('google');
    expect(mxQueries('cached.test')).toBe(1);
    expect(await providerOf(dns, 'cached.test', t0 + 3_600_001)).toBe('microsoft');
    expect(mxQueries('cached.test')).toBe(2);
  });
});

describe('providerOf without an answer', () => {
  /** A resolver that fails (a timeout, SERVFAIL) until told otherwise, counting its questions. */
  function failingDns() {
    const state = { calls: 0, fail: true };
    const d: Dns = {
      addresses: () => Promise.reject(new Error('unused')),
      txt: () => Promise.resolve([]),
      mx: () => {
        state.calls += 1;
        return state.fail ? Promise.reject(Object.assign(new Error('queryMx ETIMEOUT'), { code: 'ETIMEOUT' })) : Promise.resolve([{ exchange: 'aspmx.l.google.com', priority: 1 }]);
      },
    };
    return { d, state };
  }

  it('is the domain itself, kept a minute only', async () => {
    const { d, state } = failingDns();
    const t0 = Date.now();
    expect(await providerOf(d, 'flaky.test', t0)).toBe('flaky.test');
    expect(await providerOf(d, 'flaky.test', t0 + 30_000)).toBe('flaky.test');
    expect(state.calls).toBe(1);
    state.fail = false;
    expect(await providerOf(d, 'flaky.test', t0 + 61_000)).toBe('google');
    expect(state.calls).toBe(2);
  });

  it('keeps at most 10,000 domains: the oldest are asked again', async () => {
    const { d, state } = failingDns();
    state.fail = false;
    const t0 = Date.now();
    for (let i = 0; i <= 10_000; i += 1) await providerOf(d, `d${i}.test`, t0);
    expect(state.calls).toBe(10_001);
    await providerOf(d, 'd10000.test', t0);
    expect(state.calls).toBe(10_001);
    await providerOf(d, 'd0.test', t0);
    expect(state.calls).toBe(10_002);
  });
});

describe('providerOfMx', () => {
  it('matches whole labels only', () => {
    expect(providerOfMx('ASPMX.L.GOOGLE.COM.')).toBe('google');
    expect(providerOfMx('google.com')).toBe('google');
    expect(providerOfMx('mx.evilgoogle.com')).toBeUndefined();
    expect(providerOfMx('google.com.evil.test')).toBeUndefined();
  });
});
