import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

describe('loadConfig', () => {
  it('has the defaults of DESIGN §1', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      databaseUrl: undefined,
      dataDir: path.resolve('./data'),
      smtpUrl: undefined,
      publicUrl: 'http://localhost:3000',
      sendRate: 0,
      worker: true,
      logLevel: 'info',
      rateLimitPerMinute: 6000,
      importMaxBytes: 200 * 1024 * 1024,
    });
  });

  it('derives PUBLIC_URL from PORT and strips a trailing slash', () => {
    expect(loadConfig({ PORT: '8080' }).publicUrl).toBe('http://localhost:8080');
    expect(loadConfig({ PUBLIC_URL: 'https://mail.example.com/' }).publicUrl).toBe('https://mail.example.com');
  });

  it('keeps events EVENTS_RETENTION_DAYS (180 by default, a whole number of days from 1)', () => {
    expect(loadConfig({}).eventsRetentionDays).toBe(180);
    expect(loadConfig({ EVENTS_RETENTION_DAYS: '30' }).eventsRetentionDays).toBe(30);
    expect(() => loadConfig({ EVENTS_RETENTION_DAYS: '0' })).toThrow(/EVENTS_RETENTION_DAYS="0"/);
    expect(() => loadConfig({ EVENTS_RETENTION_DAYS: 'forever' })).toThrow(ConfigError);
  });

  it('reads the deliverability settings: DNS_SERVERS, HERALD_MASTER_KEY, BOUNCE_DOMAIN, INBOUND_HOSTNAME', () => {
    const d = loadConfig({ PUBLIC_URL: 'https://mail.example.com' });
    expect(d).toMatchObject({ dnsServers: [], masterKey: undefined, bounceDomain: undefined, inboundHostname: 'mail.example.com' });
    const key = Buffer.alloc(32, 7);
    const c = loadConfig({ DNS_SERVERS: '127.0.0.1:5353, [::1]:53,10.0.0.2', HERALD_MASTER_KEY: key.toString('base64'), BOUNCE_DOMAIN: 'Bounces.Example.com', INBOUND_HOSTNAME: 'mx.example.com' });
    expect(c).toMatchObject({ dnsServers: ['127.0.0.1:5353', '[::1]:53', '10.0.0.2'], masterKey: key, bounceDomain: 'bounces.example.com', inboundHostname: 'mx.example.com' });
    expect(loadConfig({ HERALD_MASTER_KEY: key.toString('hex') }).masterKey).toEqual(key);
    expect(() => loadConfig({ HERALD_MASTER_KEY: Buffer.alloc(16).toString('base64') })).toThrow(/HERALD_MASTER_KEY=.*32 bytes/);
    expect(() => loadConfig({ DNS_SERVERS: 'not a server' })).toThrow(/DNS_SERVERS="not a server"/);
    expect(() => loadConfig({ BOUNCE_DOMAIN: 'bad domain' })).toThrow(/BOUNCE_DOMAIN=/);
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', PORT: '' }).port).toBe(3000);
  });

  it('stops with a message naming each bad variable', () => {
    expect(() => loadConfig({ PORT: 'abc', WORKER: 'yes', DATABASE_URL: 'mysql://x' })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: 'abc', WORKER: 'yes', DATABASE_URL: 'mysql://x' });
    } catch (e) {
      const text = (e as Error).message;
      expect(text).toContain('PORT="abc"');
      expect(text).toContain('WORKER="yes": must be 0 or 1');
      expect(text).toContain('DATABASE_URL="mysql://x"');
    }
  });
});
