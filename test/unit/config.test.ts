import fs from 'node:fs';
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

  it('paces sending during a fan-out at FANOUT_SEND_RATE (100 by default; 0 turns it off)', () => {
    expect(loadConfig({}).fanoutSendRate).toBe(100);
    expect(loadConfig({ FANOUT_SEND_RATE: '0' }).fanoutSendRate).toBe(0);
    expect(() => loadConfig({ FANOUT_SEND_RATE: '-1' })).toThrow(/FANOUT_SEND_RATE="-1"/);
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
    expect(() => loadConfig({ HERALD_MASTER_KEY: Buffer.alloc(16).toString('base64') })).toThrow(/HERALD_MASTER_KEY \(value not shown\): must be 32 bytes/);
    expect(() => loadConfig({ DNS_SERVERS: 'not a server' })).toThrow(/DNS_SERVERS="not a server"/);
    expect(() => loadConfig({ BOUNCE_DOMAIN: 'bad domain' })).toThrow(/BOUNCE_DOMAIN=/);
  });

  it('reads TRUST_PROXY as off, a hop count or a list of proxies, and refuses anything else', () => {
    expect(loadConfig({}).trustProxy).toBe('');
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: 'Loopback, 10.0.0.0/8 ,fd00::/8,192.0.2.7' }).trustProxy).toBe('loopback,10.0.0.0/8,fd00::/8,192.0.2.7');
    for (const bad of ['yes', '10.0.0.0/33', '10.0.0.1/8/2', 'proxy.example.com', '-1']) {
      expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(/TRUST_PROXY/);
    }
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
      expect(text).toContain('DATABASE_URL (value not shown): must be a URL starting with postgres:// or postgresql://');
    }
  });
});

describe('startup errors never repeat a secret', () => {
  /** The error's text, which must name the variable and say the problem. */
  const errorOf = (env: Record<string, string>): string => {
    try {
      loadConfig(env);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as Error).message;
    }
    throw new Error(`no error for ${JSON.stringify(env)}`);
  };
  const PASSWORD = 'Pw-s3cret-9f2a';

  it.each([
    ['HERALD_MASTER_KEY', '0123456789abcdef'.repeat(4).slice(1), 'must be 32 bytes, as base64 or 64 hex digits'],
    ['HERALD_MASTER_KEY', `${'0123456789abcdef'.repeat(4)}0`, 'must be 32 bytes'],
    ['SMTP_URL', `smtps://user:${PASSWORD}@smtp.example.com:notaport`, 'has a port that is not a number from 0 to 65535'],
    ['SMTP_URL', `https://user:${PASSWORD}@smtp.example.com`, 'must be a URL starting with smtp:// or smtps://'],
    ['SMTP_URL', `smtp://user:${PASSWORD}%zz@smtp.example.com`, 'has a % in the user name or password'],
    ['SMTP_URL', `smtp://user:${PASSWORD}/x@smtp.example.com:587`, 'is not a valid URL (percent-encode'],
    ['BOUNCE_IMAP_URL', `imaps://bounces:${PASSWORD}@imap.example.com:99999/INBOX`, 'has a port that is not a number'],
    ['BOUNCE_IMAP_URL', `smtp://bounces:${PASSWORD}@imap.example.com/INBOX`, 'must be a URL starting with imap:// or imaps://'],
    ['DATABASE_URL', `postgres://herald:${PASSWORD}@db.example.com:port/herald`, 'has a port that is not a number'],
    ['DATABASE_URL', `mysql://herald:${PASSWORD}@db.example.com/herald`, 'must be a URL starting with postgres:// or postgresql://'],
    ['DATABASE_URL', `postgres://herald:${PASSWORD}@[db.example.com/herald`, 'is not a valid URL'],
    ['MAILGUN_WEBHOOK_SIGNING_KEY', 'Pw-s3c', 'must be at least 8 characters'],
  ])('%s=… (%#) names the variable and the problem, not the value', (name, value, problem) => {
    const text = errorOf({ [name]: value });
    expect(text).toContain(`${name} (value not shown): ${problem}`);
    expect(text).not.toContain(value);
    // No piece of the key or password either (the master key echoed 63 of its 64 digits before).
    const secretPart = value.includes('://') ? PASSWORD : value;
    for (let i = 0; i + 6 <= secretPart.length; i += 1) expect(text).not.toContain(secretPart.slice(i, i + 6));
  });

  it.each([
    [`https://admin:${PASSWORD}@herald.example.com`, 'must not contain a user name or password'],
    [`https://admin:${PASSWORD}@herald.example.com:99999`, 'has a port that is not a number from 0 to 65535'],
    [`htp://admin:${PASSWORD}@herald.example.com`, 'must be a URL starting with http:// or https://'],
    [`admin:${PASSWORD}@herald.example.com`, 'must be a URL starting with http:// or https://'],
    [`https://admin:${PASSWORD}/x@herald.example.com`, 'is not a valid URL'],
    [`https://admin:${PASSWORD}@x@herald.example.com`, 'must not contain a user name or password'],
  ])('PUBLIC_URL=%s is shown without what precedes its @', (value, problem) => {
    const text = errorOf({ PUBLIC_URL: value });
    expect(text).toMatch(new RegExp(`PUBLIC_URL="(https?://|htp://)?\\*\\*\\*@[^"]*herald\\.example\\.com[^"]*": ${problem}`));
    expect(text).not.toContain('admin');
    for (let i = 0; i + 6 <= PASSWORD.length; i += 1) expect(text).not.toContain(PASSWORD.slice(i, i + 6));
    // Reported once, by the first check that fails.
    expect(text.split('\n')).toHaveLength(2);
  });

  it('every URL setting is covered above', () => {
    const names = [...fs.readFileSync(path.join(__dirname, '../../src/config.ts'), 'utf8').matchAll(/\(\s*'([A-Z_]+_URL)'/g)].map((m) => m[1]);
    expect(names.sort()).toEqual(['BOUNCE_IMAP_URL', 'DATABASE_URL', 'PUBLIC_URL', 'SMTP_URL']);
  });

  it('POSTMARK_WEBHOOK_PASSWORD: too short, or without its user', () => {
    const short = errorOf({ POSTMARK_WEBHOOK_USER: 'pm', POSTMARK_WEBHOOK_PASSWORD: 'Pw-s3c' });
    expect(short).toContain('POSTMARK_WEBHOOK_PASSWORD (value not shown): must be at least 8 characters');
    expect(short).not.toContain('Pw-s3c');
    const alone = errorOf({ POSTMARK_WEBHOOK_PASSWORD: PASSWORD });
    expect(alone).toContain('POSTMARK_WEBHOOK_USER / POSTMARK_WEBHOOK_PASSWORD: set both or neither');
    expect(alone).not.toContain('3cret');
  });

  it('a secret that is fine stays out of the errors of other variables', () => {
    const text = errorOf({
      SMTP_URL: `smtp://user:${PASSWORD}@smtp.example.com:587`,
      DATABASE_URL: `postgres://herald:${PASSWORD}@db.example.com/herald`,
      MAILGUN_WEBHOOK_SIGNING_KEY: PASSWORD,
      HERALD_MASTER_KEY: 'ab'.repeat(32),
      PORT: 'abc',
      INBOUND_SMTP_PORT: '2525',
    });
    expect(text).toContain('PORT="abc"');
    expect(text).not.toContain('3cret');
    expect(text).not.toContain('abab');
  });
});

describe('settings that only fail together are refused before anything starts', () => {
  it('INBOUND_SMTP_PORT needs BOUNCE_DOMAIN', () => {
    expect(() => loadConfig({ INBOUND_SMTP_PORT: '2525' })).toThrow(/INBOUND_SMTP_PORT needs BOUNCE_DOMAIN/);
    expect(loadConfig({ INBOUND_SMTP_PORT: '2525', BOUNCE_DOMAIN: 'bounces.example.com' }).inboundSmtpPort).toBe(2525);
  });

  it('PUBLIC_URL with an IP address: MAIL_FROM gets a placeholder domain, and a bounce MX needs INBOUND_HOSTNAME', () => {
    for (const publicUrl of ['http://127.0.0.1:3000', 'http://[::1]:3000', 'https://192.0.2.10']) {
      expect(loadConfig({ PUBLIC_URL: publicUrl }).mailFrom).toBe('herald@localhost.localdomain');
      expect(() => loadConfig({ PUBLIC_URL: publicUrl, BOUNCE_DOMAIN: 'bounces.example.com' })).toThrow(
        /BOUNCE_DOMAIN needs INBOUND_HOSTNAME when PUBLIC_URL's host is an IP address/,
      );
      expect(loadConfig({ PUBLIC_URL: publicUrl, BOUNCE_DOMAIN: 'bounces.example.com', INBOUND_HOSTNAME: 'mx.example.com' }).inboundHostname).toBe('mx.example.com');
    }
    expect(loadConfig({}).mailFrom).toBe('herald@localhost.localdomain');
    expect(loadConfig({ PUBLIC_URL: 'https://mail.example.com' }).mailFrom).toBe('herald@mail.example.com');
  });

  it('MAIL_FROM must be at a domain name (Herald signs for it), not an address literal', () => {
    for (const mailFrom of ['herald@127.0.0.1', 'herald@[127.0.0.1]', 'herald@[IPv6:::1]']) {
      expect(() => loadConfig({ MAIL_FROM: mailFrom })).toThrow(/MAIL_FROM=.*must be an email address at a domain name, not an IP address/);
    }
    expect(loadConfig({ MAIL_FROM: 'news@mail.example.com' }).mailFrom).toBe('news@mail.example.com');
  });
});
