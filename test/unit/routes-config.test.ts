import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { parseRoutesDocument } from '../../src/routes/config';

/**
 * The delivery routes settings (src/routes/config.ts through loadConfig): SMTP_ROUTES,
 * SMTP_ROUTES_FILE, SMTP_URL as the route `default`, and every refusal naming the route and the
 * field without repeating the url or its credentials.
 */

const PASSWORD = 'Pw-s3cret-99';
const SES_URL = `smtp://AKIAEXAMPLE:${PASSWORD}@email-smtp.eu-west-1.amazonaws.com:587`;
const OWN_URL = `smtps://herald:${PASSWORD}@relay.example.net:465`;

const ses = { name: 'ses', url: SES_URL, weight: 2, max_per_second: 14, max_per_day: 50000, streams: ['marketing'], warmup: { start: '2026-12-01', schedule: 'standard' } };
const own = { name: 'own', url: OWN_URL };

/** loadConfig's message for SMTP_ROUTES = `routes`, checked to hold no secret. */
function refusal(routes: unknown, env: Record<string, string> = {}): string {
  const text = typeof routes === 'string' ? routes : JSON.stringify(routes);
  let message = '';
  try {
    loadConfig({ SMTP_ROUTES: text, ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    message = (err as Error).message;
  }
  expect(message).not.toBe('');
  expect(message).not.toContain(PASSWORD);
  expect(message).not.toContain(SES_URL);
  expect(message).not.toContain(OWN_URL);
  expect(message).not.toContain('AKIAEXAMPLE');
  expect(message).not.toContain('amazonaws');
  return message;
}

describe('SMTP_ROUTES', () => {
  it('reads the routes, with their defaults (weight 1, pool SMTP_POOL_SIZE, both streams)', () => {
    const c = loadConfig({ SMTP_ROUTES: JSON.stringify([ses, own]), SMTP_POOL_SIZE: '7' });
    expect(c.routes).toEqual([
      { name: 'ses', url: SES_URL, weight: 2, maxPerSecond: 14, maxPerDay: 50000, poolSize: 7, streams: ['marketing'], warmup: { start: '2026-12-01', schedule: 'standard' } },
      { name: 'own', url: OWN_URL, weight: 1, poolSize: 7, streams: ['marketing', 'system'] },
    ]);
    expect(c.warnings).toEqual([]);
    const custom = loadConfig({
      SMTP_ROUTES: JSON.stringify([{ ...own, weight: 0.5, max_per_hour: 1000, pool_size: 2, streams: ['system', 'marketing', 'system'], warmup: { start: '2026-02-28', schedule: [5, 10, 20] } }]),
    });
    expect(custom.routes).toEqual([
      { name: 'own', url: OWN_URL, weight: 0.5, maxPerHour: 1000, poolSize: 2, streams: ['marketing', 'system'], warmup: { start: '2026-02-28', schedule: [5, 10, 20] } },
    ]);
  });

  it('makes SMTP_URL alone the route `default`, and no route without either (the outbox)', () => {
    const c = loadConfig({ SMTP_URL: SES_URL });
    expect(c.smtpUrl).toBe(SES_URL);
    expect(c.routes).toEqual([{ name: 'default', url: SES_URL, weight: 1, poolSize: 5, streams: ['marketing', 'system'] }]);
    expect(c.warnings).toEqual([]);
    expect(loadConfig({}).routes).toEqual([]);
  });

  it('wins over SMTP_URL, with a warning that SMTP_URL is ignored (not an error), the url not in it', () => {
    const c = loadConfig({ SMTP_ROUTES: JSON.stringify([own]), SMTP_URL: SES_URL });
    expect(c.routes.map((r) => r.name)).toEqual(['own']);
    expect(c.smtpUrl).toBe(SES_URL);
    expect(c.warnings).toEqual(['SMTP_URL is ignored: SMTP_ROUTES lists the delivery routes']);
    expect(c.warnings.join()).not.toContain(PASSWORD);
  });

  it.each<[string, unknown, string]>([
    ['a name of the wrong characters', [{ ...own, name: 'my route' }], 'SMTP_ROUTES (value not shown): the 1st route: name: must be 1 to 64 letters, digits, _ . or -'],
    ['a name too long', [own, { ...own, name: 'x'.repeat(65) }], 'the 2nd route: name: must be 1 to 64 letters, digits, _ . or -'],
    ['no name', [{ url: OWN_URL }], 'the 1st route: name: must be a string'],
    ['a name used twice (any case)', [own, { ...own, name: 'OWN' }], 'route "OWN" (2nd): name: the 1st route has the same name'],
    ['no url', [{ name: 'own' }], 'route "own" (1st): url: must be a string'],
    ['a url of another scheme', [{ ...own, url: `https://herald:${PASSWORD}@relay.example.net` }], 'route "own" (1st): url: must be a URL starting with smtp:// or smtps://'],
    ['a url with a bad port', [{ ...own, url: `smtp://herald:${PASSWORD}@relay.example.net:99999` }], 'route "own" (1st): url: is not a valid URL'],
    ['a url with a stray %', [{ ...own, url: `smtp://herald:${PASSWORD}%zz@relay.example.net` }], 'route "own" (1st): url: has a % in the user name or password'],
    ['weight 0', [{ ...own, weight: 0 }], 'route "own" (1st): weight: must be a number greater than 0'],
    ['weight as a string', [{ ...own, weight: '2' }], 'route "own" (1st): weight: must be a number greater than 0'],
    ['max_per_second 0', [{ ...own, max_per_second: 0 }], 'route "own" (1st): max_per_second: must be a positive integer'],
    ['max_per_hour 1.5', [own, { ...ses, max_per_hour: 1.5 }], 'route "ses" (2nd): max_per_hour: must be a positive integer'],
    ['max_per_day negative', [{ ...own, max_per_day: -3 }], 'route "own" (1st): max_per_day: must be a positive integer'],
    ['pool_size 101', [{ ...own, pool_size: 101 }], 'route "own" (1st): pool_size: must be a whole number between 1 and 100'],
    ['streams empty', [{ ...own, streams: [] }], 'route "own" (1st): streams: must name at least one stream'],
    ['an unknown stream', [{ ...own, streams: ['marketing', 'transactional'] }], 'route "own" (1st): streams[1]: must be "marketing" or "system"'],
    ['streams as a string', [{ ...own, streams: 'system' }], 'route "own" (1st): streams: must be an array of "marketing" and/or "system"'],
    ['warmup start not a date', [{ ...own, warmup: { start: '2026-02-30', schedule: 'standard' } }], 'route "own" (1st): warmup.start: must be a date, YYYY-MM-DD'],
    ['warmup schedule unknown', [{ ...own, warmup: { start: '2026-02-01', schedule: 'fast' } }], 'route "own" (1st): warmup.schedule: must be "standard" or a non-empty array of positive integers'],
    ['warmup schedule with a zero', [{ ...own, warmup: { start: '2026-02-01', schedule: [10, 0] } }], 'route "own" (1st): warmup.schedule[1]: must be a positive integer'],
    ['warmup schedule empty', [{ ...own, warmup: { start: '2026-02-01', schedule: [] } }], 'route "own" (1st): warmup.schedule: must list at least one day'],
    ['warmup without a start', [{ ...own, warmup: { schedule: 'standard' } }], 'route "own" (1st): warmup.start: must be a date, YYYY-MM-DD'],
    ['a url without a host', [{ ...own, url: 'smtp:///relay' }], 'route "own" (1st): url: has no host'],
    ['warmup not an object', [{ ...own, warmup: 'standard' }], 'route "own" (1st): warmup: must be an object'],
    ['an unknown warmup field', [{ ...own, warmup: { start: '2026-02-01', schedule: 'standard', end: '2026-03-01' } }], 'route "own" (1st): warmup: unknown field "end"'],
    ['an unknown field', [{ ...own, password: PASSWORD }], 'route "own" (1st): unknown field "password"'],
    ['a route that is not an object', [own, 'smtp://x'], 'the 2nd route: must be an object with a name and a url'],
    ['no route for system mail', [{ ...own, streams: ['marketing'] }], 'no route carries the "system" stream'],
    ['no route for campaigns', [{ ...own, streams: ['system'] }], 'no route carries the "marketing" stream'],
    ['not an array', { routes: [own] }, 'SMTP_ROUTES (value not shown): must be a JSON array of routes'],
    ['an empty array', [], 'SMTP_ROUTES (value not shown): must list at least one route'],
    ['not JSON', `[{"name":"own","url":"${OWN_URL}",}]`, 'SMTP_ROUTES (value not shown): is not valid JSON'],
  ])('refuses %s, naming the route and the field', (_name, routes, expected) => {
    const message = refusal(routes);
    expect(message.startsWith('Invalid configuration:\n')).toBe(true);
    expect(message).toContain(expected);
  });

  it('lists every problem of the document, one line each', () => {
    const message = refusal([{ ...own, weight: -1, pool_size: 0 }, { ...ses, max_per_hour: 0 }]);
    expect(message.split('\n')).toEqual([
      'Invalid configuration:',
      '  SMTP_ROUTES (value not shown): route "own" (1st): weight: must be a number greater than 0',
      '  SMTP_ROUTES (value not shown): route "own" (1st): pool_size: must be a whole number between 1 and 100',
      '  SMTP_ROUTES (value not shown): route "ses" (2nd): max_per_hour: must be a positive integer',
    ]);
  });

  it('counts positions in English (1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd)', () => {
    const routes = Array.from({ length: 22 }, (_, i) => ({ name: `r${i + 1}`, url: OWN_URL, weight: 0 }));
    const { problems } = parseRoutesDocument(JSON.stringify(routes));
    expect(problems?.map((p) => /\((\d+\w\w)\)/.exec(p)?.[1])).toEqual(
      ['1st', '2nd', '3rd', '4th', '5th', '6th', '7th', '8th', '9th', '10th', '11th', '12th', '13th', '14th', '15th', '16th', '17th', '18th', '19th', '20th', '21st', '22nd'],
    );
  });
});

describe('SMTP_ROUTES_FILE', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-routes-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, content: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, content);
    return file;
  };

  it('reads the same document from a file', () => {
    const file = write('routes.json', JSON.stringify([ses, own], null, 2));
    const c = loadConfig({ SMTP_ROUTES_FILE: file, SMTP_URL: SES_URL });
    expect(c.routes.map((r) => [r.name, r.url])).toEqual([
      ['ses', SES_URL],
      ['own', OWN_URL],
    ]);
    expect(c.warnings).toEqual(['SMTP_URL is ignored: SMTP_ROUTES_FILE lists the delivery routes']);
  });

  it('refuses a bad file naming the file, the route and the field, never its contents', () => {
    const file = write('bad.json', JSON.stringify([own, { ...ses, max_per_hour: 'lots' }]));
    expect(() => loadConfig({ SMTP_ROUTES_FILE: file })).toThrow(
      new ConfigError(`Invalid configuration:\n  SMTP_ROUTES_FILE=${JSON.stringify(file)}: route "ses" (2nd): max_per_hour: must be a positive integer`),
    );
    const missing = path.join(dir, 'missing.json');
    expect(() => loadConfig({ SMTP_ROUTES_FILE: missing })).toThrow(`SMTP_ROUTES_FILE=${JSON.stringify(missing)}: cannot read that file`);
    const notJson = write('secret.json', `[{"name":"own","url":"${OWN_URL}"`);
    let message = '';
    try {
      loadConfig({ SMTP_ROUTES_FILE: notJson });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('SMTP_ROUTES_FILE=');
    expect(message).toContain('is not valid JSON');
    expect(message).not.toContain(PASSWORD);
    expect(message).not.toContain(OWN_URL);
  });

  it('is refused beside SMTP_ROUTES: one or the other', () => {
    const file = write('one.json', JSON.stringify([own]));
    expect(() => loadConfig({ SMTP_ROUTES_FILE: file, SMTP_ROUTES: JSON.stringify([own]) })).toThrow(/SMTP_ROUTES and SMTP_ROUTES_FILE: set one or the other/);
  });
});

describe('the route settings', () => {
  it('have their defaults', () => {
    expect(loadConfig({})).toMatchObject({ routeDownAfter: 5, routeProbeSeconds: 30, routeThrottleMinutes: 15, routeBlockHours: 24, metricsToken: undefined, metricsPort: undefined });
    expect(
      loadConfig({ ROUTE_DOWN_AFTER: '3', ROUTE_PROBE_SECONDS: '5', ROUTE_THROTTLE_MINUTES: '1', ROUTE_BLOCK_HOURS: '2', METRICS_TOKEN: 'a-token-of-16-chars', METRICS_PORT: '9464' }),
    ).toMatchObject({ routeDownAfter: 3, routeProbeSeconds: 5, routeThrottleMinutes: 1, routeBlockHours: 2, metricsToken: 'a-token-of-16-chars', metricsPort: 9464 });
  });

  it.each([
    ['ROUTE_DOWN_AFTER', '0'],
    ['ROUTE_PROBE_SECONDS', 'soon'],
    ['ROUTE_THROTTLE_MINUTES', '-5'],
    ['ROUTE_BLOCK_HOURS', '0'],
    ['METRICS_PORT', '70000'],
  ])('refuse %s=%s', (name, value) => {
    expect(() => loadConfig({ [name]: value, METRICS_TOKEN: 'a-token-of-16-chars' })).toThrow(`${name}=${JSON.stringify(value)}: must be a whole number`);
  });

  it('refuse a short METRICS_TOKEN without showing it, and METRICS_PORT without a token', () => {
    let message = '';
    try {
      loadConfig({ METRICS_TOKEN: 'short-Tok3n' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe('Invalid configuration:\n  METRICS_TOKEN (value not shown): must be at least 16 characters');
    expect(() => loadConfig({ METRICS_PORT: '9464' })).toThrow(/METRICS_PORT needs METRICS_TOKEN/);
  });
});
