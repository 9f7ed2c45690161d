import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium, loopbackOnly } from '../helpers/browser';
import { serve, type Served } from './lib/serve';
import { signIn, type Browserish } from './lib/session';
import { measureWidth } from './lib/width';

/**
 * The Deliverability page's delivery routes (issue 36): the routes table (routeViews, as GET
 * /routes) and the SVG chart of the account's messages per route and hour, drawn without script or
 * inline style, and fitting a phone's 375 px with long route names, errors and providers.
 */
const PASSWORD = 'dash-secret-pw-77';
const LONG_NAME = `e-dash-${'r'.repeat(57)}`; // 64 characters, nowhere to break
const ROUTES = [
  { name: 'e-dash-ses', url: `smtps://user:${PASSWORD}@email-smtp.example.com:465`, weight: 2, max_per_hour: 1000 },
  { name: LONG_NAME, url: 'smtp://127.0.0.1:2599', warmup: { start: new Date().toISOString().slice(0, 10), schedule: 'standard' } },
];
// Before setupApp's (which closes the pool): the route tables are the installation's.
afterAll(async () => {
  await db('route_state').whereIn('name', ROUTES.map((r) => r.name)).delete();
  await db('route_blocks').whereIn('route', ROUTES.map((r) => r.name)).delete();
});
const { app, db } = setupApp({ SMTP_ROUTES: JSON.stringify(ROUTES) });
const outbox = setupApp();
let a: TestAccount;
let other: TestAccount;
let session: Browserish;

const LONG_ERROR = `421 4.7.0 ${'x'.repeat(180)} at smtps://user:${PASSWORD}@email-smtp.example.com:465`;
const LONG_PROVIDER = `${'p'.repeat(60)}.${'q'.repeat(60)}.example`;

beforeAll(async () => {
  a = await makeAccount(db, 'Dash');
  other = await makeAccount(db, 'Other');
  session = await signIn(app, a);
  await db('route_state').whereIn('name', ROUTES.map((r) => r.name)).delete();
  await db('route_blocks').whereIn('route', ROUTES.map((r) => r.name)).delete();
  await db('route_state').insert({ name: 'e-dash-ses', status: 'throttled', throttled_at: db.fn.now(), throttled_rate: 5, last_error: LONG_ERROR });
  await db('route_blocks').insert({ route: LONG_NAME, provider: LONG_PROVIDER, until: db.raw(`now() + interval '1 day'`) });
  const at = (hoursAgo: number) => db.raw(`now() - make_interval(mins => ?)`, [hoursAgo * 60 + 1]);
  const events = [];
  // e-dash-ses: 5 an hour over the last 3 hours (3 delivered, 1 deferred, 1 bounced each); the long one: 2, 2 hours ago.
  for (const h of [0, 1, 2]) {
    for (const type of ['delivered', 'delivered', 'delivered', 'deferred', 'bounced']) events.push({ user_id: a.id, type, email: 'r@example.com', occurred_at: at(h), data: { route: 'e-dash-ses' } });
  }
  events.push(...[0, 1].map(() => ({ user_id: a.id, type: 'delivered', email: 'r@example.com', occurred_at: at(2), data: { route: LONG_NAME } })));
  // Not shown: older than 24 hours, without a route, another type, another account.
  events.push({ user_id: a.id, type: 'delivered', email: 'r@example.com', occurred_at: at(25), data: { route: 'e-dash-ses' } });
  events.push({ user_id: a.id, type: 'delivered', email: 'r@example.com', occurred_at: at(1), data: {} });
  events.push({ user_id: a.id, type: 'opened', email: 'r@example.com', occurred_at: at(1), data: { route: 'e-dash-ses' } });
  events.push({ user_id: other.id, type: 'delivered', email: 'r@example.com', occurred_at: at(1), data: { route: 'other-accounts-route' } });
  await db('events').insert(events);
});

const page = (s: Browserish, on = app) => request(on).get('/app/deliverability').set('Cookie', s.cookie);

describe('Deliverability: delivery routes', () => {
  it('lists the routes as GET /routes does, without credentials', async () => {
    const res = await page(session);
    expect(res.status).toBe(200);
    const table = /<table class="data" data-table="routes">[\s\S]*?<\/table>/.exec(res.text)?.[0] ?? '';
    expect(table).toContain('e-dash-ses');
    expect(table).toContain(LONG_NAME);
    expect(table).toContain('<span class="status route-throttled">throttled</span>');
    expect(table).toContain('<span class="status route-warming">warming</span>');
    expect(table).toContain('1,000/h');
    expect(table).toContain('day 0: 20/h');
    expect(table).toContain(LONG_PROVIDER);
    expect(res.text).not.toContain(PASSWORD);
    expect(res.text).not.toContain('user:');
  });

  it('draws messages per route per hour as SVG: one line per route with 24 points, the busiest first, only this account’s routed events of 24 hours', async () => {
    const res = await page(session);
    const svg = /<svg class="svg-chart"[\s\S]*?<\/svg>/.exec(res.text)?.[0] ?? '';
    const lines = [...svg.matchAll(/<polyline class="line (s\d)" data-route="([^"]+)" points="([^"]+)"/g)].map((m) => ({ color: m[1], route: m[2], points: m[3].split(' ') }));
    expect(lines.map((l) => [l.color, l.route])).toEqual([
      ['s1', 'e-dash-ses'],
      ['s2', LONG_NAME],
    ]);
    for (const l of lines) expect(l.points).toHaveLength(24);
    // The last three hours of e-dash-ses are at the top (5, the largest count); the hours before at the bottom.
    const ys = lines[0].points.map((p) => Number(p.split(',')[1]));
    expect(ys.slice(21)).toEqual([5, 5, 5]);
    expect(ys.slice(0, 21).every((y) => y === 100)).toBe(true);
    expect(res.text).toContain('e-dash-ses: 9 delivered, 3 deferred, 3 bounced');
    expect(res.text).toContain(`${LONG_NAME}: 2 delivered, 0 deferred, 0 bounced`);
    expect(res.text).not.toContain('other-accounts-route');
    expect(svg).toMatch(/role="img" aria-labelledby="route-chart-title route-chart-desc"/);
  });

  it('has no inline style or script, and its policy allows none', async () => {
    const res = await page(session);
    expect(res.text).not.toMatch(/\sstyle=/i);
    expect(res.text).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/i);
    expect(res.text).not.toMatch(/\son[a-z]+=/i);
    expect(res.headers['content-security-policy']).not.toContain('unsafe-inline');
  });

  it('without a relay: the outbox says so, and no chart is drawn', async () => {
    const s = await signIn(outbox.app, await makeAccount(outbox.db, 'Outbox'));
    const res = await page(s, outbox.app);
    expect(res.status).toBe(200);
    expect(res.text).toContain('No relay is configured (SMTP_URL or SMTP_ROUTES): mail goes to the outbox.');
    expect(res.text).toContain('No message went through a route in the last 24 hours.');
    expect(res.text).not.toContain('<svg class="svg-chart"');
  });
});

describeBrowser('Deliverability routes at a phone’s width', () => {
  let browser: Browser;
  let tab: Page;
  let served: Served;

  beforeAll(async () => {
    served = await serve(app);
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 375, height: 800 } });
    await loopbackOnly(context);
    await context.addCookies(
      session.cookie.split('; ').map((pair) => {
        const i = pair.indexOf('=');
        return { name: pair.slice(0, i), value: pair.slice(i + 1), url: served.base };
      }),
    );
    tab = await context.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  it('fits 375 px: the page never scrolls sideways, nothing sticks out, the chart is as wide as its card', async () => {
    await tab.goto(`${served.base}/app/deliverability#routes`);
    await tab.locator('svg.svg-chart').waitFor();
    const m = await measureWidth(tab);
    expect({ scroll: m.scroll, outside: m.outside, scrolling: m.scrolling }).toEqual({ scroll: m.view, outside: [], scrolling: [] });
    const box = await tab.locator('svg.svg-chart').boundingBox();
    expect(box!.width).toBeGreaterThan(250);
    expect(box!.width).toBeLessThanOrEqual(375);
    expect(box!.height).toBe(200);
  });
});
