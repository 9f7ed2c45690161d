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
