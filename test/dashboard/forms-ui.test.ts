import fs from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { SENDER_REQUIRED } from '../../src/resources/forms/forms.service';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium, loopbackOnly } from '../helpers/browser';
import { makeContactType, makeSender } from '../helpers/fixtures';
import { serve, type Served } from './lib/serve';
import { signIn, type Browserish } from './lib/session';
import { measureWidth } from './lib/width';

/**
 * The signup form pages of the dashboard (issue 35): list, new, edit, details, delete. Each form
 * runs the API's own route (POST /forms/save, /forms/update, DELETE /forms/delete): a refused form
 * shows the API's messages. Then in a browser: a form made from the page, its details with the
 * hosted URL and the snippet, axe-core clean, no console error.
 */
const { app, db } = setupApp();
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let a: TestAccount;
let b: TestAccount;
let sa: Browserish;
let sb: Browserish;
let list: number;
let sender: number;

beforeAll(async () => {
  [a, b] = await Promise.all([makeAccount(db, 'Former'), makeAccount(db, 'Stranger')]);
  [sa, sb] = await Promise.all([signIn(app, a), signIn(app, b)]);
  list = await makeContactType(db, a, 'Readers');
  sender = await makeSender(db, a);
});

const page = (url: string, s: Browserish = sa) => request(app).get(url).set('Cookie', s.cookie);
function submit(url: string, fields: Record<string, string>, s: Browserish = sa) {
  return request(app).post(url).set('Cookie', s.cookie).type('form').send({ _csrf: s.csrf, ...fields });
}

describe('the forms pages (server side)', () => {
  it('a refused form shows the API’s message; a good one saves and goes to its page; another account gets 404', async () => {
    const refused = await submit('/app/forms/new', {
      name: 'No sender',
      'contact_type_ids[]': String(list),
      'fields[0][field_name]': 'email',
      'fields[0][required]': '1',
      consent_text: 'Yes please',
      double_opt_in: '1',
    });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain(SENDER_REQUIRED);
    expect(refused.text).toContain('value="No sender"');

    const saved = await submit('/app/forms/new', {
      name: 'Readers signup',
      'contact_type_ids[]': String(list),
      'fields[0][field_name]': 'email',
      'fields[0][required]': '1',
      'fields[1][label]': 'unticked rows are left out',
      'fields[2][field_name]': 'first_name',
      'fields[2][label]': 'Given name',
      consent_text: 'Yes please',
      double_opt_in: '1',
      confirmation_sender_id: String(sender),
      captcha: 'none',
    });
    expect(saved.status).toBe(303);
    const id = Number(/\/app\/forms\/(\d+)\?done=added/.exec(saved.headers.location)?.[1]);
    const stored = (await api(app, a).get(`/forms/details?id=${id}`)).body.message.form;
    expect(stored.fields.map((f: { field_name: string; label: string }) => [f.field_name, f.label])).toEqual([
      ['email', 'Email'],
      ['first_name', 'Given name'],
    ]);

    const edit = await page(`/app/forms/${id}/edit`);
    expect(edit.status).toBe(200);
    expect(edit.text).toContain('value="Given name"');
    const updated = await submit(`/app/forms/${id}/edit`, {
      name: 'Readers signup (single)',
      'contact_type_ids[]': String(list),
      'fields[0][field_name]': 'email',
      consent_text: 'Yes please',
      double_opt_in: '0',
      captcha: 'proof_of_work',
    });
    expect(updated.text.match(/<li>[^<]*<\/li>/g) ?? []).toEqual([]);
    expect(updated.status).toBe(303);
    expect((await api(app, a).get(`/forms/details?id=${id}`)).body.message.form).toMatchObject({ name: 'Readers signup (single)', double_opt_in: 0, captcha: 'proof_of_work' });

    expect((await page(`/app/forms/${id}`, sb)).status).toBe(404);
    expect((await page(`/app/forms/${id}/edit`, sb)).status).toBe(404);
    expect((await submit(`/app/forms/${id}/delete`, {}, sb)).status).toBe(404);

    expect((await page(`/app/forms/${id}/delete`)).status).toBe(200);
    const deleted = await submit(`/app/forms/${id}/delete`, {});
    expect(deleted.status).toBe(303);
    expect((await page(`/app/forms/${id}`)).status).toBe(404);
  });
});

describeBrowser('the forms pages in a browser', () => {
  let browser: Browser;
  let context: BrowserContext;
  let tab: Page;
  let served: Served;
  const problems: string[] = [];

  beforeAll(async () => {
    served = await serve(app);
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    await loopbackOnly(context);
    tab = await context.newPage();
    tab.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    tab.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await tab.goto(`${served.base}/app`);
    await tab.fill('input[name="public_key"]', a.public_key);
    await tab.fill('input[name="secret_key"]', a.secret_key);
    await Promise.all([tab.waitForURL(`${served.base}/app`), tab.click('button:has-text("Sign in with the keys")')]);
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await served?.close();
  });

  async function axe(): Promise<string[]> {
    await tab.evaluate(AXE);
    const result = (await tab.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as {
      violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
    };
    return result.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  it('creates a form from the page, then shows its hosted URL, snippet and stats; axe-clean', async () => {
    await tab.click('nav a:has-text("Forms")');
    await tab.waitForURL(`${served.base}/app/forms`);
    expect(await axe()).toEqual([]);
    await tab.click('a:has-text("New form")');
    expect(await axe()).toEqual([]);
    await tab.fill('#field-name', 'Browser signup');
    await tab.selectOption('#field-contact_type_ids', String(list));
    await tab.check('input[aria-label="Show first_name"]');
    await tab.fill('#field-consent_text', 'I want the <newsletter> & more');
    await tab.selectOption('#field-confirmation_sender_id', String(sender));
    await Promise.all([tab.waitForURL(/\/app\/forms\/\d+\?done=added$/), tab.click('button:has-text("Save the form")')]);
    expect(await tab.locator('h1').innerText()).toBe('Browser signup');
    const hosted = await tab.locator('[data-hosted-url]').innerText();
    expect(hosted).toMatch(/\/subscribe\/[0-9a-f]{48}$/);
    const snippet = await tab.locator('#form-snippet').inputValue();
    expect(snippet).toContain(`action="${hosted}"`);
    expect(snippet).toContain('name="first_name"');
    expect(snippet).toContain('I want the &#60;newsletter&#62; &#38; more');
    expect(await tab.locator('[data-table="form-stats"] tbody tr').count()).toBe(30);
    expect(await axe()).toEqual([]);
    // A phone's width: the details page, the new-form page (its fields table) and the list fit.
    const details = tab.url();
    await tab.setViewportSize({ width: 375, height: 800 });
    for (const url of [details, `${served.base}/app/forms/new`, `${served.base}/app/forms`]) {
      await tab.goto(url);
      const width = await measureWidth(tab);
      expect({ url, outside: width.outside, scroll: width.scroll }).toEqual({ url, outside: [], scroll: width.view });
    }
    expect(problems).toEqual([]);
  }, 60_000);
});
