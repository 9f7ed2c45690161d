import fs from 'node:fs';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { rotateKeys } from '../../src/accounts/accounts.service';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium } from '../helpers/browser';
import { startDnsServer, type DnsServer } from '../helpers/dns';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';
import { makeWaitingAbSend } from './lib/ab-send';
import { dashboardPages } from './lib/pages';
import { serve, type Served } from './lib/serve';
import { measureWidth } from './lib/width';
import { makeWorld, type World } from './lib/world';

/**
 * The dashboard in a real browser (Chromium driven by playwright-core): signing in, every page
 * showing what the API answers for the same account, charts drawn, the CSV upload's progress,
 * sessions ending, values with markup shown as text, no console error, axe-core clean, no
 * sideways scrolling at phone width, light and dark.
 */
const { app, db, config } = setupApp({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1' });
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const TZ = 'America/New_York';

const XSS = {
  contact: '<img src=x onerror=alert(1)>',
  subject: 'Sale <b>50%</b> off <script>alert(2)</script><img src=x onerror=alert(3)>',
  link: 'https://example.com/deal?x="><svg onload=alert(4)>',
};

let a: TestAccount;
let b: TestAccount;
let w: World;
let wb: World;
let served: Served | undefined;
let base: string;
let dns: DnsServer;
let receiver: Receiver;
let testHookId: number;
/** An A/B send of account a that waits for a person to pick: counters as a test phase left them. */
let abSend: { utr: string; id: number };

beforeAll(async () => {
  dns = await startDnsServer();
  config.dnsServers = [dns.servers];
  receiver = await startReceiver();
  [a, b] = await Promise.all([makeAccount(db, 'Browser'), makeAccount(db, 'Stranger')]);
  w = await makeWorld(db, a, { contactName: XSS.contact, subject: XSS.subject, linkUrl: XSS.link });
  wb = await makeWorld(db, b);
  const saved = await api(app, a).form('/webhooks/save', { url: receiver.url, description: 'local receiver' });
  expect(saved.status).toBe(200);
  testHookId = saved.body.message.id;
  abSend = await makeWaitingAbSend(app, db, a, w, { name: 'A/B in the browser', subjects: ['Subject A', 'Subject <b>B</b>', 'Subject C'] });
  served = await serve(app);
  base = served.base;
}, 120_000);

afterAll(async () => {
  await served?.close();
  await dns?.close();
  await receiver?.close();
});

const fmt = (n: number) => n.toLocaleString('en-US');
const pct = (rate: number | null, digits = 1) => (rate === null ? '–' : `${(rate * 100).toFixed(digits)} %`);

describeBrowser('the dashboard in a browser', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const dialogs: string[] = [];

  /** A fresh browser context (its own cookies), watched for console errors, failed loads and dialogs. */
  async function open(opts: { width?: number } = {}): Promise<void> {
    await context?.close();
    context = await browser.newContext({ timezoneId: TZ, viewport: { width: opts.width ?? 1280, height: 900 } });
    context.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page = await context.newPage();
    page.on('console', (m) => {
      // A page answered 404 on purpose logs the document's status; nothing else may complain, but for an
      // email preview's own images on other hosts (its open pixel at PUBLIC_URL), which this network cannot reach.
      const elsewhere = /^https?:/.test(m.location().url) && !m.location().url.startsWith(base);
      if (m.type() === 'error' && !/status of 404/.test(m.text()) && !elsewhere) problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('response', (r) => {
      if (r.status() >= 400 && r.request().resourceType() !== 'document' && r.request().resourceType() !== 'fetch') problems.push(`${r.status()} ${r.url()}`);
    });
  }

  async function signInByForm(account: TestAccount): Promise<void> {
    await page.goto(`${base}/app`);
    await page.fill('input[name="public_key"]', account.public_key);
    await page.fill('input[name="secret_key"]', account.secret_key);
    await Promise.all([page.waitForURL(`${base}/app`), page.click('button:has-text("Sign in with the keys")')]);
    await page.locator('h1', { hasText: 'Overview' }).waitFor();
  }

  async function visit(path: string): Promise<number> {
    const res = await page.goto(`${base}${path}`, { waitUntil: 'load' });
    await page.waitForTimeout(50);
    return res?.status() ?? 0;
  }

  /**
   * Clicks a button whose form leads back to a page (the same URL, often) and waits for that new
   * page to load. `waitForLoadState('load')` beside the click would resolve on the page still shown.
   */
  async function submitAndLoad(button: Locator): Promise<void> {
    const navigated = page.waitForEvent('framenavigated', (frame) => frame === page.mainFrame());
    await button.click();
    await navigated;
    await page.waitForLoadState('load');
    await page.waitForTimeout(50);
  }

  const text = (selector: string) => page.locator(selector).first().innerText();

  /** Every chart of the page drew its data: Chart.js holds the points and the canvas has painted pixels. */
  async function chartsDrawn(): Promise<Array<{ id: string; points: number; painted: number }>> {
    return page.evaluate(`(() => [...document.querySelectorAll('canvas[data-chart]')].map((c) => {
      const chart = window.Chart && window.Chart.getChart(c);
      const points = chart ? chart.data.datasets.reduce((n, d) => n + d.data.filter((v) => v !== null).length, 0) : 0;
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      let painted = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) painted += 1;
      return { id: c.id, points, painted };
    }))()`);
  }

  async function axeViolations(): Promise<string[]> {
    await page.evaluate(AXE);
    const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as {
      violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
    };
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  /** Elements a payload could have planted, and whether its text shows. */
  async function injected(): Promise<string[]> {
    return page.evaluate(`(() => {
      const out = [];
      for (const el of document.querySelectorAll('body *')) {
        const tag = el.tagName.toLowerCase();
        if (['script', 'img', 'svg', 'iframe', 'b'].includes(tag)) out.push(tag);
        for (const attr of el.getAttributeNames()) if (/^on/i.test(attr)) out.push(tag + '[' + attr + ']');
      }
      return out;
    })()`);
  }

  const pages = () => dashboardPages(w, abSend.utr);

  beforeAll(async () => {
    browser = await launchChromium();
    await open();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  afterEach(() => {
    const seen = { problems: problems.splice(0), dialogs: dialogs.splice(0) };
    expect(seen).toEqual({ problems: [], dialogs: [] });
  });

  it('signs in with the form by keyboard alone, and the overview shows the API’s numbers', async () => {
    await page.goto(`${base}/app`);
    await page.keyboard.press('Tab'); // the skip link
    await page.keyboard.press('Tab'); // the brand
    // A user's form first (email, password, code, its button, the reset link), then the keys' form.
    for (let i = 0; i < 6; i += 1) await page.keyboard.press('Tab');
    expect(await page.evaluate(`document.activeElement.name`)).toBe('public_key');
    await page.keyboard.type(a.public_key);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(`document.activeElement.type`)).toBe('password');
    await page.keyboard.type(a.secret_key);
    await Promise.all([page.waitForURL(`${base}/app`), page.keyboard.press('Enter')]);
    await page.locator('h1', { hasText: 'Overview' }).waitFor();
    // The script told the server the browser's zone: the page and the API count the same days.
    expect(await page.locator('main').innerText()).toContain(TZ);
    const o = (await api(app, a).get(`/reports/overview?days=30&tz=${encodeURIComponent(TZ)}`)).body.message;
    expect({
      sends: await text('[data-metric="sends"]'),
      delivered: await text('[data-metric="delivered"]'),
      open: await text('[data-metric="unique_open"]'),
      click: await text('[data-metric="human_click"]'),
      bounce: await text('[data-metric="bounce"]'),
      complaint: await text('[data-metric="complaint"]'),
    }).toEqual({
      sends: fmt(o.totals.sends),
      delivered: fmt(o.totals.delivered),
      open: pct(o.rates.unique_open),
      click: pct(o.rates.human_click),
      bounce: pct(o.rates.bounce),
      complaint: pct(o.rates.complaint, 2),
    });
    expect(o.totals.delivered).toBe(16);
    expect(await page.locator('.metric.over [data-metric="complaint"]').count()).toBe(1);
    const latest = await page.locator('table[data-table="latest-sends"] tbody tr').allInnerTexts();
    expect(latest).toHaveLength(o.latest_sends.length);
    expect(latest[0]).toContain(fmt(o.latest_sends[0].delivered));
    const warnings = await page.locator('[data-warning]').allInnerTexts();
    expect(warnings).toHaveLength(o.warnings.length);
    expect(warnings.join('\n')).toContain('DKIM record is missing');
    const charts = await chartsDrawn();
    expect(charts.map((c) => c.id)).toEqual(['chart-daily', 'chart-complaints']);
    for (const c of charts) expect(c).toEqual({ id: c.id, points: expect.any(Number), painted: expect.any(Number) });
    expect(charts.every((c) => c.points >= 30 && c.painted > 1000)).toBe(true);
  });

  it('a send’s report shows the stats API’s numbers, its chart, its links and its problems; markup in its subject and link is text', async () => {
    expect(await visit(`/app/sends/${w.send.utr}`)).toBe(200);
    const s = (await api(app, a).get(`/single/send/stats?utr=${w.send.utr}`)).body.message;
    expect({
      recipients: await text('[data-funnel="recipients"]'),
      dropped: await text('[data-funnel="dropped"]'),
      delivered: await text('[data-funnel="delivered"]'),
      opened: await text('[data-funnel="opened"]'),
      clicked: await text('[data-funnel="clicked"]'),
      opens: await text('[data-metric="total_opens"]'),
      clicks: await text('[data-metric="total_clicks"]'),
      bounces: await text('[data-metric="bounces"]'),
      complaints: await text('[data-metric="complaints"]'),
    }).toEqual({
      recipients: fmt(s.triggered + s.dropped),
      dropped: fmt(s.dropped),
      delivered: fmt(s.delivered),
      opened: fmt(s.unique_opens),
      clicked: fmt(s.unique_clicks),
      opens: fmt(s.total_opens),
      clicks: fmt(s.total_clicks),
      bounces: fmt(s.bounces),
      complaints: fmt(s.complaints),
    });
    expect(s.delivered).toBe(10);
    const links = await page.locator('table[data-table="links"] tbody tr').allInnerTexts();
    expect(links).toHaveLength(s.links.length);
    expect(links[0]).toContain(XSS.link);
    expect(links[0]).toContain(fmt(s.links[0].unique_clicks));
    const events = (await api(app, a).get(`/events?single_send_utr=${w.send.utr}&type=bounced,complained`)).body.message.events;
    expect(await page.locator('table[data-table="problems"] tbody tr').count()).toBe(events.length);
    expect(await page.locator('main').innerText()).toContain(XSS.subject);
    expect(await page.locator('h1').innerText()).toBe(w.send.name);
    expect(await injected()).toEqual([]);
    const [timeline] = await chartsDrawn();
    expect(timeline.id).toBe('chart-timeline');
    expect(timeline.points).toBeGreaterThan(0);
    expect(timeline.painted).toBeGreaterThan(1000);
    // The kept report, on demand.
    await Promise.all([page.waitForURL(/\/reports\//), page.locator('a', { hasText: 'View the report' }).first().click()]);
    expect(await page.locator('pre.raw').innerText()).toContain('550 5.1.1 User unknown');
  });

  it('an A/B send: the variations side by side as the API has them, and a person picks the winner', async () => {
    expect(await visit(`/app/sends/${abSend.utr}`)).toBe(200);
    const { ab } = (await api(app, a).get(`/single/send/stats?utr=${abSend.utr}`)).body.message;
    expect(ab.status).toBe('waiting');
    expect(await page.locator('[data-ab-status]').getAttribute('data-ab-status')).toBe('waiting');
    const rows = await page.locator('table[data-table="variations"] tbody tr').allInnerTexts();
    expect(rows).toHaveLength(3);
    for (const v of ab.variations as Array<{ index: number; subject: string; recipients: number; open_rate: number; click_rate: number; interval: number[]; probability_best: number }>) {
      const row = rows[v.index];
      expect(row).toContain(v.subject);
      expect(row).toContain(pct(v.click_rate));
      expect(row).toContain(`${pct(v.interval[0])} – ${pct(v.interval[1])}`);
      expect(await text(`[data-probability-best="${v.index}"]`)).toBe(pct(v.probability_best));
    }
    // The variation's subject with markup is text.
    expect(await injected()).toEqual([]);
    // Picking B: the rest is released to it, and the report says so.
    await Promise.all([page.waitForURL(`${base}/app/sends/${abSend.utr}#ab`), page.click('button[aria-label="Send this to the rest: variation B"]')]);
    expect(await page.locator('[data-ab-winner]').getAttribute('data-ab-winner')).toBe('1');
    // Released: the workers' claims take the held rows to B from now on (no worker runs here).
    expect(await db('ab_tests').where({ single_send_id: abSend.id, user_id: a.id }).first('status', 'winner', 'decided_by', 'releasing')).toEqual({
      status: 'decided',
      winner: 1,
      decided_by: 'manual',
      releasing: true,
    });
    // Decided: no button any more.
    expect(await page.locator('table[data-table="variations"] button').count()).toBe(0);
  });

  it('automations: the list and each email’s counters, in order, as the API has them; pause and resume', async () => {
    expect(await visit('/app/automations')).toBe(200);
    const list = (await api(app, a).get('/automations')).body.message;
    const key = Object.keys(list).find((k) => Array.isArray(list[k]))!;
    expect(await page.locator('table[data-table="automations"] tbody tr').count()).toBe(list[key].length);
    await Promise.all([page.waitForURL(/\/app\/automations\/.+/), page.locator('a', { hasText: 'Welcome' }).first().click()]);
    const r = (await api(app, a).get(`/reports/automation?utr=${w.automation.utr}`)).body.message;
    const rows = await page.locator('table[data-table="emails"] tbody tr').allInnerTexts();
    expect(rows).toHaveLength(r.emails.length);
    for (const [i, e] of r.emails.entries()) {
      const cells = await page.locator('table[data-table="emails"] tbody tr').nth(i).locator('td').allInnerTexts();
      expect(cells).toEqual([String(i + 1), e.subject, expect.any(String), fmt(e.triggered), fmt(e.delivered), fmt(e.unique_opens), fmt(e.unique_clicks), fmt(e.bounces), fmt(e.complaints), fmt(e.unsubscribes)]);
    }
    const stats = (await api(app, a).get(`/automations/stats?utr=${w.automation.utr}`)).body.message;
    expect(await text('[data-metric="total_delivered"]')).toBe(fmt(stats.total_delivered));
    expect((await chartsDrawn())[0].painted).toBeGreaterThan(1000);
    await Promise.all([page.waitForLoadState('load'), page.locator('button', { hasText: 'Pause' }).click()]);
    await page.locator('button', { hasText: 'Resume' }).waitFor();
    expect((await api(app, a).get(`/automations/details?utr=${w.automation.utr}`)).body.message).toBeDefined();
    expect((await db('automations').where({ id: w.automation.id }).first('status')).status).toBe(2);
    await Promise.all([page.waitForLoadState('load'), page.locator('button', { hasText: 'Resume' }).click()]);
    await page.locator('button', { hasText: 'Pause' }).waitFor();
    expect((await db('automations').where({ id: w.automation.id }).first('status')).status).toBe(1);
  });

  it('contacts: list sizes as the API counts them; a search opens the contact; its name with markup is text', async () => {
    expect(await visit('/app/contacts')).toBe(200);
    const types = (await api(app, a).get('/contacts-type')).body.message.contactTypes as Array<{ name: string; contacts_count: number }>;
    const rows = await page.locator('table[data-table="lists"] tbody tr').allInnerTexts();
    expect(rows).toHaveLength(types.length);
    for (const t of types) expect(rows.some((r) => r.includes(t.name) && r.includes(fmt(t.contacts_count)))).toBe(true);
    await page.fill('#search-email', w.emails[0].toUpperCase());
    await Promise.all([page.waitForURL(new RegExp(`/app/contacts/${w.contactIds[0]}$`)), page.keyboard.press('Enter')]);
    const contact = (await api(app, a).get(`/contacts/details?contact_id=${w.contactIds[0]}`)).body.message.contact;
    expect(await text('[data-field="first_name"]')).toBe(XSS.contact);
    expect(contact.first_name).toBe(XSS.contact);
    expect(await text('[data-field="email"]')).toBe(contact.email);
    expect(await injected()).toEqual([]);
    const history = (await api(app, a).get(`/events?email=${encodeURIComponent(w.emails[0])}&limit=100`)).body.message.events;
    expect(await page.locator('table[data-table="history"] tbody tr').count()).toBe(history.length);
    expect(history.length).toBeGreaterThanOrEqual(4);
    const complainer = await visit(`/app/contacts/${w.contactIds[3]}`);
    expect(complainer).toBe(200);
    expect(await page.locator('[data-suppression="complaint"]').innerText()).toContain('complaint');
  });

  it('the CSV upload’s progress reaches 100 % and shows the result, and stays there', async () => {
    expect(await visit('/app/contacts')).toBe(200);
    await page.selectOption('#import-list', String(w.typeId));
    const csv = ['email,first_name', `${w.emails[1]},Again`, 'fresh1@example.com,Fresh', 'fresh2@example.com,Fresh', 'nope,Bad', ''].join('\n');
    await page.setInputFiles('#import-file', { name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.click('#import-form button[type="submit"]');
    await page.locator('#import-status', { hasText: 'Imported' }).waitFor({ timeout: 30_000 });
    expect(await text('#import-status')).toBe('Imported: created 2, updated 1, refused 1.');
    expect(await page.locator('#import-progress').evaluate((el) => (el as HTMLProgressElement).value)).toBe(100);
    await page.waitForTimeout(1000);
    expect(await page.locator('#import-progress').evaluate((el) => (el as HTMLProgressElement).value)).toBe(100);
    const [latest] = (await api(app, a).get('/contacts/imports?page=1&per_page=1')).body.message.imports;
    expect(latest).toMatchObject({ file_name: 'people.csv', status: 'completed', inserted: 2, updated: 1, skipped: 1 });
  });

  it('deliverability: records and suppressions as the API has them; "check now" looks the records up; a filter and a lift', async () => {
    expect(await visit('/app/deliverability')).toBe(200);
    const records = (await api(app, a).get(`/sender/dns?sender_id=${w.senderId}`)).body.message;
    const shown = await page.locator(`table[data-table="records-${w.senderId}"] tbody tr`).allInnerTexts();
    expect(shown).toHaveLength(records.records.length);
    for (const [i, r] of records.records.entries()) expect(shown[i]).toContain(r.status);
    dns.set(`_dmarc.${records.domain}`, 'TXT', ['v=DMARC1; p=none']);
    await Promise.all([page.waitForURL(/#sender-/), page.locator(`#sender-${w.senderId} button`, { hasText: 'Check now' }).click()]);
    const after = (await api(app, a).get(`/sender/dns?sender_id=${w.senderId}`)).body.message.records.find((r: { purpose: string }) => r.purpose === 'dmarc');
    expect(after.status).toBe('verified');
    expect(await page.locator(`table[data-table="records-${w.senderId}"] tbody tr`, { hasText: 'DMARC' }).innerText()).toContain('verified');
    const all = (await api(app, a).get('/suppressions/list')).body.message.suppressions;
    expect(await page.locator('table[data-table="suppressions"] tbody tr').count()).toBe(all.length);
    await page.selectOption('#suppression-type', 'bounce');
    await Promise.all([page.waitForURL(/type=bounce/), page.click('button:has-text("Filter")')]);
    const bounces = (await api(app, a).get('/suppressions/list?type=bounce')).body.message.suppressions;
    expect(await page.locator('table[data-table="suppressions"] tbody tr').count()).toBe(bounces.length);
    await submitAndLoad(page.locator('table[data-table="suppressions"] button', { hasText: 'Lift' }).first());
    expect((await api(app, a).get('/suppressions/list?type=bounce')).body.message.suppressions).toHaveLength(bounces.length - 1);
    const [trend] = await chartsDrawn();
    expect(trend.points).toBeGreaterThanOrEqual(30);
    expect(trend.painted).toBeGreaterThan(1000);
  });

  it('webhooks: endpoints and batches as the API has them; "send test" reaches the endpoint', async () => {
    expect(await visit('/app/webhooks')).toBe(200);
    const hooks = (await api(app, a).get('/webhooks/list')).body.message;
    const list = hooks[Object.keys(hooks).find((k) => Array.isArray(hooks[k]))!];
    expect(await page.locator('table[data-table="webhooks"] tbody tr').count()).toBe(list.length);
    expect(await page.locator('[data-state="failing"]').count()).toBe(1);
    expect(await visit(`/app/webhooks/${w.webhookId}`)).toBe(200);
    const batches = (await api(app, a).get(`/webhooks/deliveries?id=${w.webhookId}`)).body.message;
    const rows = batches[Object.keys(batches).find((k) => Array.isArray(batches[k]))!];
    expect(await page.locator('table[data-table="batches"] tbody tr').count()).toBe(rows.length);
    expect(await page.locator('table[data-table="failures"]').innerText()).toContain('HTTP 500: upstream down');
    expect(await visit(`/app/webhooks/${testHookId}`)).toBe(200);
    const before = receiver.hits.length;
    await Promise.all([page.waitForURL(/\/test$/), page.locator('button', { hasText: 'Send test' }).click()]);
    expect(await page.locator('[data-test-result]').getAttribute('data-test-result')).toBe('ok');
    expect(receiver.hits.length).toBe(before + 1);
    expect(receiver.hits[before].payload.type).toBe('webhook.test');
  });

  it('another account’s send, automation, contact and webhook are not found', async () => {
    for (const path of [`/app/sends/${wb.send.utr}`, `/app/automations/${wb.automation.utr}`, `/app/contacts/${wb.contactIds[0]}`, `/app/webhooks/${wb.webhookId}`]) {
      expect({ path, status: await visit(path) }).toEqual({ path, status: 404 });
      expect(await page.locator('h1').innerText()).toBe('Not found');
    }
  });

  it('a request without the CSRF token is refused with 403', async () => {
    await visit('/app');
    const status = await page.evaluate(`fetch('/app/sign-out', { method: 'POST' }).then((r) => r.status)`);
    expect(status).toBe(403);
    const withToken = await page.evaluate(`fetch('/app/suppressions/lift', { method: 'POST', headers: { 'X-CSRF-Token': 'forged' } }).then((r) => r.status)`);
    expect(withToken).toBe(403);
    // The browser logs the two refusals; nothing else.
    expect(problems.splice(0)).toEqual([expect.stringContaining('403 (Forbidden)'), expect.stringContaining('403 (Forbidden)')]);
    expect(await visit('/app/contacts')).toBe(200);
  });

  it('every page: a CSP header, axe-core clean (light and dark), no sideways scrolling at phone width', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const path of pages()) {
        const res = await page.goto(`${base}${path}`);
        expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
        expect({ path, scheme, violations: await axeViolations() }).toEqual({ path, scheme, violations: [] });
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 360, height: 740 });
    for (const path of pages()) {
      await visit(path);
      expect({ path, ...(await measureWidth(page)) }).toEqual({ path, view: 360, scroll: 360, outside: [], scrolling: [] });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('signing out, an idle session and rotated keys go back to sign-in', async () => {
    await visit('/app/contacts');
    await Promise.all([page.waitForURL(`${base}/app`), page.click('button:has-text("Sign out")')]);
    expect(await page.locator('input[name="secret_key"]').count()).toBe(1);
    expect(await visit('/app/webhooks')).toBe(200);
    expect(page.url()).toBe(`${base}/app`);
    expect(await page.locator('input[name="secret_key"]').count()).toBe(1);

    await signInByForm(a);
    await db('dashboard_sessions').where({ user_id: a.id }).update({ last_seen_at: db.raw(`now() - interval '13 hours'`) });
    await visit('/app/automations');
    expect(await page.locator('input[name="secret_key"]').count()).toBe(1);
    expect(await page.locator('main').innerText()).toContain('Your session has ended');

    const c = await makeAccount(db, 'Rotating');
    await signInByForm(c);
    expect(await visit('/app/contacts')).toBe(200);
    await rotateKeys(db, c.id, { confirmMs: 100 });
    await visit('/app/contacts');
    expect(await page.locator('input[name="secret_key"]').count()).toBe(1);
    expect(await visit('/app/automations')).toBe(200);
    expect(page.url()).toBe(`${base}/app`);
  });
});
