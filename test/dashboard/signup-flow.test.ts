import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { secret } from '../../src/db/secrets';
import { optinToken, readOptinToken } from '../../src/forms/optin-token';
import { api, setupApp } from '../helpers/app';
import { describeBrowser, launchChromium, loopbackOnly } from '../helpers/browser';
import { makeContactType } from '../helpers/fixtures';
import { closeServers, freePort } from '../helpers/net';
import { waitFor } from '../helpers/wait';
import { setupDelivery } from '../helpers/worker';

/**
 * Issue 35's browser "Done when": a double opt-in form made through the API, used the two ways
 * a site uses it — (a) the hosted page `/subscribe/<id>`, (b) the HTML snippet from
 * `/forms/details` pasted into a plain page of another loopback origin, submitted there with
 * JavaScript off — and for each: the confirmation mail reaches an SMTP sink (the worker sends it),
 * its link opens a page with a Confirm button (the GET alone makes no contact), pressing Confirm
 * lands on the form's confirm_url (on the other origin), the contact is on the form's list, and
 * the form's stats count the submission and the confirmation. axe-core (serious and critical)
 * finds nothing on the hosted form, the confirm page, and the used and expired link pages; no
 * page logs a console error (a CSP violation included) and no request leaves loopback.
 */
const { app, db, config } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50', SUBSCRIBE_LIMIT_PER_HOUR: '0' }, 'signup_flow');

// The links in the mails and the snippet's action name Herald's real address: known once a port is.
let heraldServer: http.Server | undefined;
let herald = '';
beforeAll(async () => {
  const port = await freePort();
  herald = `http://127.0.0.1:${port}`;
  (config as unknown as { publicUrl: string }).publicUrl = herald;
});
const rig = setupDelivery({ config, db });

const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const CONSENT = 'Yes, send me the garden letter. I can unsubscribe at any time.';

/** The other site: the snippet on a plain page, and the page confirm_url names. */
function otherSite(snippet: () => string): http.Server {
  return http.createServer((req, res) => {
    const page = (title: string, body: string) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body><main>${body}</main></body></html>`);
    };
    if (req.url === '/join') page('Join the garden letter', `<h1>Join the garden letter</h1>\n${snippet()}`);
    else if (req.url === '/welcome') page('Welcome', '<h1>Welcome aboard</h1><p>Your subscription is confirmed.</p>');
    else {
      res.writeHead(404).end();
    }
  });
}

async function axe(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as {
    violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
  };
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

describeBrowser('signing up from a form, double opt-in (issue 35)', () => {
  let browser: Browser;
  let site: http.Server | undefined;
  let siteBase = '';
  let snippet = '';
  let listId = 0;
  let formId = 0;
  let hostedUrl = '';
  const problems: string[] = [];
  const stopped: string[] = [];
  const contexts: BrowserContext[] = [];
  /** The first confirmation link, once used. */
  let usedLink = '';

  beforeAll(async () => {
    heraldServer = app.listen(Number(new URL(herald).port), '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      heraldServer!.once('listening', resolve);
      heraldServer!.once('error', reject);
    });
    site = otherSite(() => snippet);
    site.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => site!.once('listening', resolve));
    siteBase = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await closeServers(site, heraldServer);
  });

  async function newPage(javaScriptEnabled: boolean): Promise<Page> {
    const context = await browser.newContext({ javaScriptEnabled, viewport: { width: 1024, height: 800 } });
    contexts.push(context);
    stopped.push(...(await loopbackOnly(context)));
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on('console', (m) => {
      // A used or expired link's page answers 410 and the browser logs the document's status: that is the page working.
      const gone = /status of 410/.test(m.text()) && page.url().includes('/subscribe/confirm/');
      if (m.type() === 'error' && !gone) problems.push(`console on ${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error on ${page.url()}: ${e.message}`));
    return page;
  }

  const keys = () => api(app, rig.account);

  async function contactsOnList(email: string): Promise<number[]> {
    const res = await keys().get('/contacts/list');
    expect(res.status).toBe(200);
    return (res.body.message.contacts as Array<{ email: string; contact_type_id: number }>).filter((c) => c.email === email).map((c) => c.contact_type_id);
  }

  /** Fills the form's boxes by their labels, ticks consent and submits: Herald's "check your inbox" page. */
  async function subscribe(page: Page, boxes: Record<string, string>): Promise<void> {
    for (const [label, value] of Object.entries(boxes)) await page.getByRole('textbox', { name: label, exact: true }).fill(value);
    await page.getByRole('checkbox', { name: CONSENT }).check();
    await Promise.all([page.waitForURL(hostedUrl), page.getByRole('button', { name: 'Subscribe' }).click()]);
    await expect(page.getByRole('heading', { level: 1 }).innerText()).resolves.toBe('Please check your inbox');
  }

  /** The confirmation mail to `email` the worker sent to the sink, and its link. */
  async function confirmationLink(email: string): Promise<string> {
    const mail = await waitFor(`the confirmation mail to ${email}`, () => rig.sink.received.find((m) => m.to.includes(email)));
    const parsed = await simpleParser(mail.raw);
    expect(parsed.subject).toBe('Confirm your garden letter');
    const links = [...String(parsed.html).matchAll(/href="([^"]+)"/g)].map((m) => m[1].replace(/&amp;/g, '&')).filter((h) => h.includes('/subscribe/confirm/'));
    expect(links).toHaveLength(1);
    expect(links[0].startsWith(`${herald}/subscribe/confirm/`)).toBe(true);
    return links[0];
  }

  /** Opens the mail's link: a Confirm button, and nothing confirmed yet; pressing it lands on confirm_url. */
  async function confirmFromMail(page: Page, email: string, checkAxe: boolean): Promise<void> {
    const link = await confirmationLink(email);
    usedLink ||= link;
    await page.goto(link);
    await expect(page.getByRole('heading', { level: 1 }).innerText()).resolves.toBe('Confirm your subscription');
    const button = page.getByRole('button', { name: 'Confirm', exact: true });
    await expect(button.count()).resolves.toBe(1);
    if (checkAxe) expect(await axe(page)).toEqual([]);
    // The GET (what a mail scanner does) made nothing.
    expect(await contactsOnList(email)).toEqual([]);
    expect((await db('pending_subscriptions').where({ user_id: rig.account.id, email }).first())?.confirmed_at).toBeNull();
    await Promise.all([page.waitForURL(`${siteBase}/welcome`), button.click()]);
    await expect(page.getByRole('heading', { level: 1 }).innerText()).resolves.toBe('Welcome aboard');
    expect(await contactsOnList(email)).toEqual([listId]);
  }

  it('makes a double opt-in form through the API, its confirm_url on another origin', async () => {
    listId = await makeContactType(db, rig.account, 'Garden letter');
    await keys().form('/custom-fields/save', { field_name: 'favourite_plant', field_type: 'text' }).expect(200);
    const body = new URLSearchParams({
      name: 'Garden letter',
      'contact_type_ids[0]': String(listId),
      'fields[0][field_name]': 'email',
      'fields[0][label]': 'Email',
      'fields[1][field_name]': 'first_name',
      'fields[1][label]': 'First name',
      'fields[2][field_name]': 'favourite_plant',
      'fields[2][label]': 'Favourite plant',
      double_opt_in: '1',
      consent_text: CONSENT,
      confirm_url: `${siteBase}/welcome`,
      confirmation_subject: 'Confirm your garden letter',
      confirmation_sender_id: String(rig.sender),
    });
    const saved = await keys().urlencoded('/forms/save', body.toString());
    expect(saved.status).toBe(200);
    formId = saved.body.message.id;
    const details = await keys().get(`/forms/details?id=${formId}`);
    expect(details.status).toBe(200);
    hostedUrl = details.body.message.form.hosted_url;
    snippet = details.body.message.form.html_snippet;
    expect(hostedUrl).toBe(`${herald}/subscribe/${saved.body.message.public_id}`);
    expect(snippet).toContain(`action="${hostedUrl}"`);
  });

  it('(a) the hosted form: fill, tick consent, submit; confirm from the mail; arrive on confirm_url', async () => {
    const page = await newPage(true);
    await page.goto(hostedUrl);
    await expect(page.getByRole('heading', { level: 1 }).innerText()).resolves.toBe('Garden letter');
    expect(await axe(page)).toEqual([]);
    await subscribe(page, { Email: 'ada@example.com', 'First name': 'Ada', 'Favourite plant': 'Fern' });
    await confirmFromMail(page, 'ada@example.com', true);
    const contact = await db('contacts').where({ user_id: rig.account.id, email: 'ada@example.com' }).first();
    expect(contact.first_name).toBe('Ada');
  });

  it('(b) the snippet on a plain page of another origin, JavaScript off: submit there; confirm from the mail', async () => {
    const page = await newPage(false);
    await page.goto(`${siteBase}/join`);
    await subscribe(page, { Email: 'grace@example.org', 'First name': 'Grace' });
    await confirmFromMail(page, 'grace@example.org', false);
  });

  it('counts both submissions and both confirmations in the form’s stats', async () => {
    const res = await keys().get(`/forms/stats?id=${formId}`);
    expect(res.status).toBe(200);
    expect(res.body.message.stats.totals).toMatchObject({ submissions: 2, confirmations: 2, pending: 0 });
  });

  it('a used link and an expired link show their pages (axe-clean), and confirm nothing', async () => {
    const page = await newPage(true);
    await page.goto(usedLink);
    await expect(page.getByRole('heading', { level: 1 }).innerText()).resolves.toBe('Already confirmed');
    expect(await axe(page)).toEqual([]);
    expect(await page.getByRole('button', { name: 'Confirm', exact: true }).count()).toBe(0);

    // A new submission's link, signed as Herald signs it, past its expiry.
    await request(app).post(new URL(hostedUrl).pathname).set('Accept', 'application/json').send({ email: 'cy@example.net', consent: '1' }).expect(200);
    const pending = await db('pending_subscriptions').where({ user_id: rig.account.id, email: 'cy@example.net' }).first();
    const key = await secret(db, 'tracking');
    const ref = readOptinToken(key, usedLink.split('/').pop())!;
    const expired = optinToken(key, { ...ref, pendingId: Number(pending.id), generation: pending.generation, expiresAt: Math.floor(Date.now() / 1000) - 60 });
    await page.goto(`${herald}/subscribe/confirm/${expired}`);
    await expect(page.getByRole('heading', { level: 1 }).innerText()).resolves.toBe('This link has expired');
    expect(await axe(page)).toEqual([]);
    expect(await page.getByRole('button', { name: 'Confirm', exact: true }).count()).toBe(0);
    const post = await request(app).post(`/subscribe/confirm/${expired}`).type('form').send('');
    expect(post.status).toBe(410);
    expect((await db('pending_subscriptions').where({ user_id: rig.account.id, id: pending.id }).first()).confirmed_at).toBeNull();
  });

  it('logged no console error or CSP violation, and no request left loopback', () => {
    expect(problems).toEqual([]);
    expect(stopped).toEqual([]);
  });
});
