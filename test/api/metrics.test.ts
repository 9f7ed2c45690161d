import request from 'supertest';
import { dnsFor } from '../../src/dns';
import { createLogger } from '../../src/logger';
import { createMailer } from '../../src/routes/create-mailer';
import { countDeferral, countMessage, startMetricsServer } from '../../src/metrics';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { startDnsServer } from '../helpers/dns';
import { startSmtpSink } from '../helpers/smtp';

/**
 * GET /metrics (issue 36): off without METRICS_TOKEN, the bearer token required with it, and
 * Prometheus text that a strict parser of the exposition format (below) reads, carrying every
 * metric the README names, with bounded labels.
 */
const TOKEN = 'metrics-token-of-the-test-0123456789';
const ROUTES = JSON.stringify([
  { name: 'e-metrics-a', url: 'smtp://user:hunter2-secret@127.0.0.1:2525', weight: 2 },
  { name: 'e-metrics-b', url: 'smtp://127.0.0.1:2526', warmup: { start: new Date().toISOString().slice(0, 10), schedule: 'standard' } },
]);
const off = setupApp();
const on = setupApp({ METRICS_TOKEN: TOKEN, SMTP_ROUTES: ROUTES });
let a: TestAccount;

beforeAll(async () => {
  a = await makeAccount(on.db);
  // route_state is the installation's: start from routes no process has used.
  await on.db('route_state').whereIn('name', ['e-metrics-a', 'e-metrics-b']).delete();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * The Prometheus text exposition format (0.0.4), strictly: every line is a HELP, a TYPE declared
 * once and before its samples, or a sample `name{label="value",…} value` whose name is its family's
 * (histograms: _bucket with `le`, _sum, _count); label values escaped as the format says. Throws on
 * anything else.
 */
function parsePrometheus(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const lines = text.split('\n');
  expect(lines.at(-1)).toBe('');
  for (const [i, line] of lines.slice(0, -1).entries()) {
    const where = `line ${i + 1}: ${line}`;
    let m: RegExpExecArray | null;
    // The format ignores empty lines (prom-client writes one between families).
    if (line === '') continue;
    if ((m = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line))) continue;
    if ((m = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line))) {
      if (types.has(m[1])) throw new Error(`TYPE twice, ${where}`);
      types.set(m[1], m[2]);
      continue;
    }
    m = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (-?(?:[0-9]+(?:\\.[0-9]+)?(?:e[+-]?[0-9]+)?|\\+Inf|-Inf|NaN))$`).exec(line);
    if (!m) throw new Error(`not a sample, ${where}`);
    const [, name, rawLabels = '', raw] = m;
    const labels: Record<string, string> = {};
    const labelRe = new RegExp(`(${NAME})="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"(,|$)`, 'y');
    let rest = rawLabels;
    while (rest.length) {
      labelRe.lastIndex = 0;
      const l = labelRe.exec(rest);
      if (!l) throw new Error(`bad labels, ${where}`);
      labels[l[1]] = l[2].replace(/\\(["\\n])/g, (_s, c: string) => (c === 'n' ? '\n' : c));
      rest = rest.slice(l[0].length);
    }
    const family = [name, name.replace(/_(bucket|sum|count)$/, '')].find((n) => types.has(n));
    if (!family) throw new Error(`sample before its TYPE, ${where}`);
    if (family !== name && types.get(family) !== 'histogram' && types.get(family) !== 'summary') throw new Error(`suffix on a ${types.get(family)}, ${where}`);
    if (name.endsWith('_bucket') && labels.le === undefined) throw new Error(`bucket without le, ${where}`);
    samples.push({ name, labels, value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) });
  }
  return { types, samples };
}

const scrape = () => request(on.app).get('/metrics').set('Authorization', `Bearer ${TOKEN}`);

async function samples(): Promise<Sample[]> {
  const res = await scrape();
  expect(res.status).toBe(200);
  return parsePrometheus(res.text).samples;
}

const valueOf = (list: Sample[], name: string, labels: Record<string, string> = {}) =>
  list.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

describe('GET /metrics', () => {
  it('without METRICS_TOKEN: 404 in the envelope, as an unknown path, whatever the header', async () => {
    for (const auth of [undefined, `Bearer ${TOKEN}`]) {
      const t = request(off.app).get('/metrics');
      const res = await (auth ? t.set('Authorization', auth) : t);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 'failed', errors: 'Route not found' });
    }
  });

  it('with it: 401 in the envelope without the bearer token, with another, or with the token in another scheme', async () => {
    for (const auth of [undefined, 'Bearer wrong-token-0123456789abcdef', `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN, 'Bearer ']) {
      const t = request(on.app).get('/metrics');
      const res = await (auth ? t.set('Authorization', auth) : t);
      expect({ auth, status: res.status }).toEqual({ auth, status: 401 });
      expect(res.body).toEqual({ status: 'failed', errors: expect.stringContaining('bearer token') });
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(res.text).not.toContain(TOKEN);
    }
    // API keys are not the token.
    const withKeys = await api(on.app, a).get('/metrics');
    expect(withKeys.status).toBe(401);
  });

  it('with the token: Prometheus text, every metric named, the queue and routes read from the database', async () => {
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const { types, samples: list } = parsePrometheus(res.text);
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith('herald_')))).toEqual({
      herald_messages_total: 'counter',
      herald_deferrals_total: 'counter',
      herald_queue_depth: 'gauge',
      herald_queue_oldest_seconds: 'gauge',
      herald_route_status: 'gauge',
      herald_http_request_duration_seconds: 'histogram',
    });
    expect(valueOf(list, 'herald_queue_depth')).toBeGreaterThanOrEqual(0);
    // Both configured routes, one status each at 1: b is inside its warm-up (day 0 today).
    const status = list.filter((s) => s.name === 'herald_route_status');
    expect(status.filter((s) => s.value === 1).map((s) => s.labels).sort((x, y) => x.route.localeCompare(y.route))).toEqual([
      { route: 'e-metrics-a', status: 'up' },
      { route: 'e-metrics-b', status: 'warming' },
    ]);
    expect(status).toHaveLength(8);
    // Never a URL or a credential of a route.
    expect(res.text).not.toMatch(/hunter2|smtp:\/\//);
  });

  it('route status follows route_state', async () => {
    await on.db('route_state').insert({ name: 'e-metrics-a', status: 'down', down_since: on.db.fn.now(), consecutive_failures: 5 }).onConflict('name').merge();
    try {
      const list = await samples();
      expect(valueOf(list, 'herald_route_status', { route: 'e-metrics-a', status: 'down' })).toBe(1);
      expect(valueOf(list, 'herald_route_status', { route: 'e-metrics-a', status: 'up' })).toBe(0);
    } finally {
      await on.db('route_state').where('name', 'e-metrics-a').delete();
    }
  });

  it('herald_queue_depth and herald_queue_oldest_seconds count due rows (queued, or a lease run out), not future or finished ones', async () => {
    const before = await samples();
    const depth0 = valueOf(before, 'herald_queue_depth')!;
    const past = new Date(Date.now() - 600_000);
    const future = new Date(Date.now() + 600_000);
    await on.db('deliveries').insert([
      { user_id: a.id, email: 'due1@example.com', status: 'queued', next_attempt_at: past },
      { user_id: a.id, email: 'due2@example.com', status: 'queued', next_attempt_at: new Date() },
      { user_id: a.id, email: 'lease@example.com', status: 'sending', next_attempt_at: past, attempts: 1 },
      { user_id: a.id, email: 'later@example.com', status: 'queued', next_attempt_at: future },
      { user_id: a.id, email: 'inflight@example.com', status: 'sending', next_attempt_at: future, attempts: 1 },
      { user_id: a.id, email: 'sent@example.com', status: 'sent', next_attempt_at: past, attempts: 1 },
    ]);
    try {
      const after = await samples();
      expect(valueOf(after, 'herald_queue_depth')).toBe(depth0 + 3);
      expect(valueOf(after, 'herald_queue_oldest_seconds')).toBeGreaterThanOrEqual(599);
    } finally {
      await on.db('deliveries').where('user_id', a.id).delete();
    }
  });

  it('a message sent through a route moves herald_messages_total{route,outcome="delivered"}', async () => {
    const sink = await startSmtpSink();
    const dns = await startDnsServer();
    // The runtime router of the same process (C's RoutedMailer), on a route of its own to a sink on loopback.
    const config = { ...on.config, routes: [{ name: 'e-metrics-live', url: sink.url, weight: 1, poolSize: 1, streams: ['marketing' as const, 'system' as const] }], dnsServers: [dns.servers] };
    const mailer = createMailer(config, { db: on.db, logger: createLogger('silent'), dns: dnsFor(config) });
    try {
      const before = valueOf(await samples(), 'herald_messages_total', { route: 'e-metrics-live', outcome: 'delivered' }) ?? 0;
      const raw = 'From: herald@herald.test\r\nTo: reader@example.com\r\nSubject: metrics\r\n\r\nHello\r\n';
      await mailer.send({ from: 'herald@herald.test', to: 'reader@example.com', raw, stream: 'system' });
      expect(sink.accepted).toHaveLength(1);
      expect(valueOf(await samples(), 'herald_messages_total', { route: 'e-metrics-live', outcome: 'delivered' })).toBe(before + 1);
    } finally {
      await mailer.close();
      await sink.close();
      await dns.close();
      await on.db('route_state').where('name', 'e-metrics-live').delete();
    }
  });

  it('counts messages by route and outcome, and deferrals by reason', async () => {
    const before = await samples();
    const delivered = valueOf(before, 'herald_messages_total', { route: 'e-metrics-a', outcome: 'delivered' }) ?? 0;
    const quota = valueOf(before, 'herald_deferrals_total', { reason: 'quota' }) ?? 0;
    countMessage('e-metrics-a', 'delivered');
    countMessage('e-metrics-a', 'delivered');
    countMessage('e-metrics-a', 'bounced');
    countDeferral('quota');
    const after = await samples();
    expect(valueOf(after, 'herald_messages_total', { route: 'e-metrics-a', outcome: 'delivered' })).toBe(delivered + 2);
    expect(valueOf(after, 'herald_messages_total', { route: 'e-metrics-a', outcome: 'bounced' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(after, 'herald_deferrals_total', { reason: 'quota' })).toBe(quota + 1);
  });

  it('times HTTP requests by the route’s pattern, never the raw URL (an unknown path is `unmatched`)', async () => {
    await api(on.app, a).get('/routes').expect(200);
    await api(on.app, a).get('/single-send/details?utr=nope').expect(404);
    await request(on.app).get('/no/such/path/8c1f0e').expect(404);
    await request(on.app).get('/images/no-such-image-5d2.png').expect(404);
    const res = await scrape();
    const list = parsePrometheus(res.text).samples.filter((s) => s.name === 'herald_http_request_duration_seconds_count');
    expect(list).toContainEqual({ name: 'herald_http_request_duration_seconds_count', labels: { method: 'GET', route: '/routes', status: '200' }, value: expect.any(Number) });
    expect(list).toContainEqual({ name: 'herald_http_request_duration_seconds_count', labels: { method: 'GET', route: '/single-send/details', status: '404' }, value: expect.any(Number) });
    expect(list.some((s) => s.labels.route === 'unmatched' && s.labels.status === '404')).toBe(true);
    expect(res.text).not.toMatch(/8c1f0e|5d2|utr=nope/);
    // The scrape itself is timed too.
    const again = parsePrometheus((await scrape()).text).samples;
    expect(valueOf(again, 'herald_http_request_duration_seconds_count', { route: '/metrics', status: '200' })).toBeGreaterThanOrEqual(1);
  });

  it('a standalone worker’s METRICS_PORT serves the same /metrics, with the token, and nothing else', async () => {
    const server = await startMetricsServer({ config: { ...on.config, host: '127.0.0.1' }, db: on.db, logger: createLogger('silent') }, 0);
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const good = await request(base).get('/metrics').set('Authorization', `Bearer ${TOKEN}`);
      expect(good.status).toBe(200);
      expect(parsePrometheus(good.text).types.get('herald_queue_depth')).toBe('gauge');
      const bad = await request(base).get('/metrics');
      expect({ status: bad.status, body: bad.body }).toEqual({ status: 401, body: { status: 'failed', errors: expect.stringContaining('bearer token') } });
      const other = await request(base).get('/routes').set('Authorization', `Bearer ${TOKEN}`);
      expect({ status: other.status, body: other.body }).toEqual({ status: 404, body: { status: 'failed', errors: 'Route not found' } });
    } finally {
      await server.close();
    }
  });
});
