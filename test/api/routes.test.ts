import { z } from 'zod';
import { WRONG_KEYS } from '../../src/http/auth';
import { routeRecord } from '../../src/resources/routes/routes.schemas';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectSuccess } from '../helpers/expect';

/**
 * GET /routes (issue 36): the routes an account may use, with their health, quotas, usage, warm-up
 * and blocks, read from the installation's route tables, never with a URL or a credential.
 */
const USER = 'ses-user-AKIAEXAMPLE';
const PASSWORD = 'p@ss/w0rd-hunter2';
const today = new Date().toISOString().slice(0, 10);
const ROUTES = [
  {
    name: 'e-r-ses',
    url: `smtps://${encodeURIComponent(USER)}:${encodeURIComponent(PASSWORD)}@email-smtp.example.com:465`,
    weight: 3,
    max_per_second: 14,
    max_per_day: 50000,
  },
  { name: 'e-r-own', url: 'smtp://relay.example.net:25', streams: ['system'] },
  { name: 'e-r-new', url: 'smtp://other:secret-of-new@new.example.net:587', max_per_hour: 500, warmup: { start: today, schedule: [20, 40, 80] } },
];
const NAMES = ROUTES.map((r) => r.name);
// Registered before setupApp's, so it runs while the pool is open: the route tables are the
// installation's, and a block left behind would make other files' routers resolve providers.
afterAll(async () => {
  await db('route_state').whereIn('name', NAMES).delete();
  await db('route_usage').whereIn('route', NAMES).delete();
  await db('route_blocks').whereIn('route', NAMES).delete();
});
const { app, db } = setupApp({ SMTP_ROUTES: JSON.stringify(ROUTES) });
let a: TestAccount;
let b: TestAccount;

const hourStart = () => db.raw(`date_trunc('hour', now())`);
const dayStart = () => db.raw(`date_trunc('day', now())`);

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  // The route tables are the installation's: this file's routes start unused.
  await db('route_state').whereIn('name', NAMES).delete();
  await db('route_usage').whereIn('route', NAMES).delete();
  await db('route_blocks').whereIn('route', NAMES).delete();
  const b64 = Buffer.from(`\0${USER}\0${PASSWORD}`).toString('base64');
  await db('route_state').insert([
    {
      name: 'e-r-ses',
      status: 'down',
      consecutive_failures: 5,
      down_since: db.raw(`now() - interval '10 minutes'`),
      // As an older runtime or a chatty relay might have written it.
      last_error: `535 Authentication failed for ${USER} (${PASSWORD}) AUTH PLAIN ${b64} at smtps://${encodeURIComponent(USER)}:${encodeURIComponent(PASSWORD)}@email-smtp.example.com:465`,
    },
    { name: 'e-r-own', status: 'throttled', throttled_at: db.fn.now(), throttled_rate: 5, last_error: '454 Throttling failure: Maximum sending rate exceeded.' },
  ]);
  await db('route_usage').insert([
    { route: 'e-r-ses', period: 'hour', period_start: hourStart(), used: 7 },
    { route: 'e-r-ses', period: 'hour', period_start: db.raw(`date_trunc('hour', now()) - interval '2 hours'`), used: 100 },
    { route: 'e-r-ses', period: 'day', period_start: dayStart(), used: 130 },
    { route: 'e-r-ses', period: 'day', period_start: db.raw(`date_trunc('day', now()) - interval '1 day'`), used: 9999 },
    { route: 'e-r-new', period: 'hour', period_start: hourStart(), used: 12 },
    { route: 'e-r-new', period: 'day', period_start: dayStart(), used: 12 },
  ]);
  await db('route_blocks').insert([
    { route: 'e-r-ses', provider: 'microsoft', since: db.raw(`now() - interval '1 hour'`), until: db.raw(`now() + interval '23 hours'`), last_error: `550 5.7.1 S3150 ${PASSWORD}` },
    { route: 'e-r-ses', provider: 'yahoo', since: db.raw(`now() - interval '30 hours'`), until: db.raw(`now() - interval '6 hours'`) },
  ]);
});

const TS = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);

describe('GET /routes', () => {
  it('lists every route with its status, quotas, usage this hour and today, warm-up, down_since, last error and live blocks', async () => {
    const res = await api(app, a).get('/routes');
    expectSuccess(res);
    expect(Object.keys(res.body.message)).toEqual(['routes']);
    const routes = z.array(routeRecord).parse(res.body.message.routes);
    expect(routes.map((r) => r.name)).toEqual(NAMES);
    const [ses, own, fresh] = routes;
    expect(ses).toEqual({
      name: 'e-r-ses',
      status: 'down',
      weight: 3,
      max_per_second: 14,
      max_per_hour: null,
      max_per_day: 50000,
      streams: ['marketing', 'system'],
      sent_last_hour: 7,
      sent_today: 130,
      warmup: null,
      down_since: TS,
      last_error: expect.stringContaining('535 Authentication failed for'),
      blocked_providers: [{ provider: 'microsoft', since: TS, until: TS }],
    });
    expect(own).toMatchObject({ name: 'e-r-own', status: 'throttled', weight: 1, streams: ['system'], sent_last_hour: 0, sent_today: 0, down_since: null, blocked_providers: [] });
    expect(own.last_error).toBe('454 Throttling failure: Maximum sending rate exceeded.');
    // Up, inside its warm-up: shown warming, with today's step.
    expect(fresh).toMatchObject({ name: 'e-r-new', status: 'warming', max_per_hour: 500, warmup: { day: 0, cap_per_hour: 20 }, sent_last_hour: 12, sent_today: 12, last_error: null });
  });

  it('never shows a URL or a credential, even when the stored error carries them', async () => {
    const res = await api(app, a).get('/routes');
    const text = JSON.stringify(res.body);
    for (const route of res.body.message.routes) expect(Object.keys(route)).not.toContain('url');
    // The relay's host may be named by an error it answered; its credentials never are.
    for (const secret of [USER, PASSWORD, encodeURIComponent(PASSWORD), encodeURIComponent(USER), 'secret-of-new', Buffer.from(`\0${USER}\0${PASSWORD}`).toString('base64'), 'new.example.net', 'relay.example.net', '@email-smtp']) {
      expect({ secret, shown: text.includes(secret) }).toEqual({ secret, shown: false });
    }
    expect(res.body.message.routes[0].last_error).toMatch(/^535 Authentication failed for \*\*\* \(\*\*\*\)/);
  });

  it('an account pinned to routes sees only those; another account its own view', async () => {
    await db('accounts').where('id', b.id).update({ routes: db.raw('?::text[]', [['e-r-new', 'e-r-own']]) });
    try {
      const pinned = await api(app, b).get('/routes');
      expectSuccess(pinned);
      // Configuration order, whatever the pinning's.
      expect(pinned.body.message.routes.map((r: { name: string }) => r.name)).toEqual(['e-r-own', 'e-r-new']);
      const all = await api(app, a).get('/routes');
      expect(all.body.message.routes.map((r: { name: string }) => r.name)).toEqual(NAMES);
      // Pinned to a route no longer configured: nothing.
      await db('accounts').where('id', b.id).update({ routes: db.raw('?::text[]', [['gone']]) });
      expectSuccess(await api(app, b).get('/routes'), { routes: [] });
    } finally {
      await db('accounts').where('id', b.id).update({ routes: null });
    }
  });

  it('without keys, or with wrong ones: 401 as every endpoint', async () => {
    expectAuthMissing(await api(app).get('/routes'));
    const wrong = await api(app, { ...a, headers: { PublicKey: a.public_key, SecretKey: 'nope' } }).get('/routes');
    expect({ status: wrong.status, body: wrong.body }).toEqual({ status: 401, body: { status: 'failed', errors: WRONG_KEYS } });
  });
});

describe('GET /routes without routes', () => {
  const outbox = setupApp();
  it('is an empty list (mail goes to the outbox)', async () => {
    expectSuccess(await api(outbox.app, a).get('/routes'), { routes: [] });
  });
});
