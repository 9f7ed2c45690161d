import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ParsedMail } from 'mailparser';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, describeBrowser, launchChromium } from '../helpers/browser';
import request from 'supertest';
import { smtpMailer, type Mailer } from '../../src/mail/mailer';
import { Worker } from '../../src/worker/worker';
import { createLogger } from '../../src/logger';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { createSend } from '../helpers/sends';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp';
import { waitForSend } from '../helpers/worker';

/**
 * The unsubscribe preferences page, reached from a real message: a single send goes through
 * the worker to a real SMTP server, and its link is opened with supertest and in Chromium.
 */
const { app, db, config } = setupApp({ WORKER_POLL_MS: '50' }, 'unsubscribe');

const SCREENSHOT = '/tmp/unsubscribe-page.png';
const XSS_NAME = '<script>alert(1)</script>';
const XSS_ATTR_NAME = '"><svg onload=alert(2)>';

let sink: SmtpSink;
let mailer: Mailer;
let a: TestAccount;
let b: TestAccount;
let utr: string;
const g = { own: 0, product: 0, xss: 0, xssAttr: 0, hidden: 0, deleted: 0, theirs: 0 };
let mails: Map<string, ParsedMail[]>;

beforeAll(async () => {
  sink = await startSmtpSink();
  mailer = smtpMailer(sink.url, { poolSize: 1 });
  const worker = new Worker({ config, db, logger: createLogger('silent'), mailer });
  a = await makeAccount(db);
  b = await makeAccount(db);
  const sender = await makeSender(db, a);
  // The message's own group is hidden from the page (is_display 0) but must still be shown.
  g.own = await makeGroup(db, a, 'Weekly digest', 0);
  g.product = await makeGroup(db, a, 'Product news', 1);
  g.xss = await makeGroup(db, a, XSS_NAME, 1);
  g.xssAttr = await makeGroup(db, a, XSS_ATTR_NAME, 1);
  g.hidden = await makeGroup(db, a, 'Hidden group', 0);
  g.deleted = await makeGroup(db, a, 'Deleted group', 1);
  await db('unsubscribe_groups').where({ id: g.deleted }).update({ deleted_at: db.fn.now() });
  g.theirs = await makeGroup(db, b, 'Their group', 1);
  const list = await makeContactType(db, a);
  await makeContacts(db, a, list, [
    { email: 'ada@example.com', first_name: 'Ada' },
    { email: 'grace@example.com', first_name: 'Grace' },
  ]);
  ({ utr } = await createSend(app, db, a, { sender, group: g.own, list }, {
    template_html: '<html><body><p>Hello ((first_name))</p><p><a href="((unsubscribe_preferences))">Preferences</a></p></body></html>',
    single_send_name: 'Digest',
    subject: 'Your digest',
    preheader: 'This week',
  }));
  // The worker as production runs it, until the send is complete.
  worker.start();
  try {
    await waitForSend(db, utr);
  } finally {
    await worker.stop();
  }
  mails = await sink.byRecipient();
});

afterAll(async () => {
  await mailer.close();
  await sink.close();
});

/** The preferences link of the one message this address received (path only). */
function linkFor(address: string): string {
  const list = mails.get(address) ?? [];
  expect(list).toHaveLength(1);
  const m = /http:\/\/herald\.test(\/unsubscribe\/[a-f0-9]{56})/.exec(String(list[0].html));
  expect(m).not.toBeNull();
  return m![1];
}

/** The group ids the page offers, in page order. */
function offeredGroups(html: string): number[] {
  return [...html.matchAll(/<input type="checkbox" name="keep" value="(\d+)"/g)].map((m) => Number(m[1]));
}

async function recipientsOf(groupId: number): Promise<string[]> {
  const res = await api(app, a).get(`/unsubscribes-groups/recipients-list?groupId=${groupId}`);
  expectSuccess(res);
  return (res.body.message.recipients as Array<{ email_address: string }>).map((r) => r.email_address.toLowerCase());
}

async function globalUnsubscribers(): Promise<string[]> {
  const res = await api(app, a).get('/global-unsubscribes');
  expectSuccess(res);
  return (res.body.message.unSubscribers as Array<{ email_address: string }>).map((r) => r.email_address.toLowerCase());
}

async function sendStats() {
  const res = await api(app, a).get(`/single-send/details?utr=${utr}`);
  expectSuccess(res);
  return res.body.message.singleSend[0] as { unsubscribes: number; delivered: number; status: number };
}

describe('the message', () => {
  it('was delivered to both contacts with a preferences link', async () => {
    expect([...mails.keys()].sort()).toEqual(['ada@example.com', 'grace@example.com']);
    expect(linkFor('ada@example.com')).not.toBe(linkFor('grace@example.com'));
    expect(await sendStats()).toMatchObject({ status: 3, delivered: 2, unsubscribes: 0 });
  });
});

describe('GET /unsubscribe/:token (supertest)', () => {
  it('answers an HTML page with a strict CSP, no API keys needed', async () => {
    const res = await request(app).get(linkFor('ada@example.com'));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['content-security-policy']).not.toContain('script-src');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toMatch(/^<!doctype html>/);
    expect(res.text).toContain('ada@example.com');
    expect(res.text).not.toContain('grace@example.com');
    expect(res.text).toContain('name="all" value="1"');
  });

  it('offers the message’s own group (even hidden) first, then every displayed group of the account only', async () => {
    const res = await request(app).get(linkFor('ada@example.com'));
    expect(offeredGroups(res.text)).toEqual([g.own, g.product, g.xss, g.xssAttr]);
    expect(res.text).toContain('Weekly digest');
    expect(res.text).toContain('Product news');
    for (const absent of ['Hidden group', 'Deleted group', 'Their group']) expect(res.text).not.toContain(absent);
    // Everything starts subscribed, "all" unticked.
    expect(res.text.match(/name="keep" value="\d+" checked/g)).toHaveLength(4);
    expect(res.text).not.toMatch(/name="all" value="1" checked/);
  });

  it('escapes every value: a group named like a script tag shows as text', async () => {
    const res = await request(app).get(linkFor('ada@example.com'));
    expect(res.text).not.toContain(XSS_NAME);
    expect(res.text).not.toContain('<svg');
    // preact writes every value as text: `<`, `&` and `"` become entities (a lone `>` is harmless).
    expect(res.text).toContain('&lt;script>alert(1)&lt;/script>');
    expect(res.text).toContain('&quot;>&lt;svg onload=alert(2)>');
    expect(res.text.match(/<script/gi)).toBeNull();
  });

  it('answers 404 HTML for an unknown or malformed token', async () => {
    for (const path of ['/unsubscribe/ffffffffffffffffffffffffffffffff', '/unsubscribe/nope', `/unsubscribe/${'a'.repeat(33)}`]) {
      const res = await request(app).get(path);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.text).toContain('Link not recognised');
    }
    const post = await request(app).post('/unsubscribe/ffffffffffffffffffffffffffffffff').type('form').send('action=save&all=1');
    expect(post.status).toBe(404);
    expect(post.text).toContain('Link not recognised');
  });
});

describeBrowser('the page in a real browser', () => {
  let server: Server;
  let base: string;
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    page = await context.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()} (${m.location().url})`);
    });
  });

  afterAll(async () => {
    await browser?.close();
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  /** The link exactly as the mail has it, with its PUBLIC_URL base pointed at this server. */
  function browserLink(address: string): string {
    const html = String(mails.get(address)![0].html);
    const href = /href="(http:\/\/herald\.test\/unsubscribe\/[a-f0-9]{56})"/.exec(html)![1];
    return href.replace('http://herald.test', base);
  }

  const box = (id: number) => page.locator(`input[name="keep"][value="${id}"]`);
  const allBox = () => page.locator('input[name="all"]');

  async function submit(): Promise<void> {
    await Promise.all([page.waitForURL(/\/unsubscribe\//, { waitUntil: 'load' }), page.getByRole('button', { name: 'Save preferences' }).click()]);
    await page.getByRole('status').filter({ hasText: 'Your preferences have been saved.' }).waitFor();
  }

  it('shows the groups, readable on a phone; unticking one group unsubscribes from it only', async () => {
    const link = browserLink('ada@example.com');
    const res = await page.goto(link);
    expect(res!.status()).toBe(200);
    expect(await page.title()).toBe('Email preferences');
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // The script-named group shows as literal text.
    expect(await page.locator('label', { hasText: XSS_NAME }).count()).toBe(1);
    expect(await page.locator('label', { hasText: XSS_ATTR_NAME }).count()).toBe(1);
    expect(await page.locator('svg').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(0);

    // Fits the phone: nothing wider than the viewport, a full-width button.
    // (A string: the test's tsconfig has no DOM types.)
    const widths = await page.evaluate<{ scroll: number; client: number }>(
      '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
    );
    expect(widths.scroll).toBeLessThanOrEqual(widths.client);
    const button = await page.getByRole('button', { name: 'Save preferences' }).boundingBox();
    expect(button!.width).toBeGreaterThan(300);
    expect(button!.height).toBeGreaterThanOrEqual(40);

    for (const id of [g.own, g.product, g.xss, g.xssAttr]) expect(await box(id).isChecked()).toBe(true);
    expect(await allBox().isChecked()).toBe(false);

    // Tap the label text, as a person would, not the tiny box.
    await page.locator('label', { hasText: 'Product news' }).tap();
    expect(await box(g.product).isChecked()).toBe(false);
    await submit();

    expect(await recipientsOf(g.product)).toContain('ada@example.com');
    for (const id of [g.own, g.xss, g.xssAttr]) expect(await recipientsOf(id)).not.toContain('ada@example.com');
    expect(await globalUnsubscribers()).not.toContain('ada@example.com');
    expect((await sendStats()).unsubscribes).toBe(1);
    // The page after saving shows the new state.
    expect(await box(g.product).isChecked()).toBe(false);
    expect(await box(g.own).isChecked()).toBe(true);
  });

  it('re-ticking the group and choosing “unsubscribe from all” moves the address to the global list', async () => {
    await page.goto(browserLink('ada@example.com'));
    expect(await box(g.product).isChecked()).toBe(false);
    await box(g.product).check();
    await allBox().check();
    await submit();

    expect(await recipientsOf(g.product)).not.toContain('ada@example.com');
    expect(await globalUnsubscribers()).toContain('ada@example.com');
    // One message, one unsubscribe, however many times its page is saved.
    expect((await sendStats()).unsubscribes).toBe(1);
    expect(await allBox().isChecked()).toBe(true);
    // The other recipient is untouched by all this.
    expect(await globalUnsubscribers()).not.toContain('grace@example.com');
  });

  it('never ran a script or raised a dialog, and the CSP was never violated', () => {
    expect(dialogs).toEqual([]);
    expect(problems.filter((p) => !/favicon/.test(p))).toEqual([]);
  });
});

describe('POST /unsubscribe/:token (supertest), after the browser', () => {
  it('a saved form only touches the page’s groups, never hidden, deleted or another account’s ones', async () => {
    const link = linkFor('grace@example.com');
    const form = [`action=save`, `keep=${g.own}`, `keep=${g.hidden}`, `keep=${g.theirs}`].join('&');
    const res = await request(app).post(link).type('form').send(form);
    expect(res.status).toBe(200);
    expect(res.text).toContain('Your preferences have been saved.');
    const recipientsByGroup = async (id: number) =>
      (await db('unsubscribe_group_recipients').where({ unsubscribe_groups_id: id }).pluck('email_address')).map((e: string) => e.toLowerCase());
    expect(await recipientsByGroup(g.own)).not.toContain('grace@example.com');
    for (const id of [g.product, g.xss, g.xssAttr]) expect(await recipientsByGroup(id)).toContain('grace@example.com');
    for (const id of [g.hidden, g.deleted, g.theirs]) expect(await recipientsByGroup(id)).not.toContain('grace@example.com');
    expect(await globalUnsubscribers()).not.toContain('grace@example.com');
    const counted = (await sendStats()).unsubscribes;
    expect(counted).toBe(CHROMIUM ? 2 : 1);
    // Re-ticking every group takes her off them again; the count stays (one per message).
    const undo = [g.own, g.product, g.xss, g.xssAttr].map((id) => `keep=${id}`).join('&');
    expect((await request(app).post(link).type('form').send(`action=save&${undo}`)).status).toBe(200);
    for (const id of [g.own, g.product, g.xss, g.xssAttr]) expect(await recipientsByGroup(id)).not.toContain('grace@example.com');
    expect((await sendStats()).unsubscribes).toBe(counted);
  });
});
