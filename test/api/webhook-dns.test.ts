import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { startDnsServer, type DnsServer } from '../helpers/dns';
import { expectSuccess, expectVal } from '../helpers/expect';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';

/**
 * Webhook hosts are resolved by Herald's resolver (src/dns.ts), here pointed at a real DNS
 * server of the test's own (DNS_SERVERS). DNS rebinding: a name that answered a public address
 * when the webhook was saved and answers a loopback or private one when it is called is refused
 * then, and nothing reaches the address it now names.
 */
const { app, db, config } = setupApp({ WEBHOOK_ALLOW_HOSTS: 'allowed.rebind.test' });
let a: TestAccount;
let dns: DnsServer;
let receiver: Receiver;

beforeAll(async () => {
  dns = await startDnsServer();
  config.dnsServers = [dns.servers];
  receiver = await startReceiver();
  a = await makeAccount(db);
});
afterAll(async () => {
  await receiver.close();
  await dns.close();
});

const port = () => new URL(receiver.url).port;

async function save(url: string): Promise<number> {
  const res = await api(app, a).form('/webhooks/save', { url });
  expectSuccess(res);
  return res.body.message.id as number;
}

describe('webhook hosts resolved through DNS_SERVERS', () => {
  it('refuses a name that resolves to loopback when saved', async () => {
    dns.set('local.rebind.test', 'A', ['127.0.0.1']);
    expectVal(await api(app, a).form('/webhooks/save', { url: `http://local.rebind.test:${port()}/hook` }), {
      url: ['The url must not point to a loopback, private or link-local address.'],
    });
  });

  it('refuses a name the DNS server does not know', async () => {
    expectVal(await api(app, a).form('/webhooks/save', { url: 'http://nowhere.rebind.test/hook' }), {
      url: ['The url host nowhere.rebind.test could not be resolved.'],
    });
  });

  it('refuses the call when the name answers a loopback or private address after a public one at save (rebinding)', async () => {
    dns.set('hooks.rebind.test', 'A', ['93.184.215.14']);
    const id = await save(`http://hooks.rebind.test:${port()}/hook`);
    for (const address of ['127.0.0.1', '10.1.2.3']) {
      dns.set('hooks.rebind.test', 'A', [address]);
      const before = receiver.hits.length;
      const res = await api(app, a).form(`/webhooks/test?id=${id}`, {});
      expectSuccess(res, { status: null, error: 'refused: The url must not point to a loopback, private or link-local address.' });
      expect(receiver.hits.length).toBe(before);
    }
    // One bad address among good ones refuses it too.
    dns.set('hooks.rebind.test', 'A', ['93.184.215.14', '127.0.0.1']);
    expect((await api(app, a).form(`/webhooks/test?id=${id}`, {})).body.message.error).toMatch(/^refused: /);
  });

  it('reaches a host named in WEBHOOK_ALLOW_HOSTS at the address the DNS server gives', async () => {
    dns.set('allowed.rebind.test', 'A', ['127.0.0.1']);
    const id = await save(`http://allowed.rebind.test:${port()}/hook`);
    const before = receiver.hits.length;
    const res = await api(app, a).form(`/webhooks/test?id=${id}`, {});
    expectSuccess(res, { status: 204, error: null });
    expect(receiver.hits.length).toBe(before + 1);
  });
});
