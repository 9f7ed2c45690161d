import fs from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { issueToken } from '../../src/team/members';
import { totpCode } from '../../src/team/totp';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium, loopbackOnly } from '../helpers/browser';
import { addMember, MEMBER_PASSWORD, nextTotpCode, type AddedMember } from '../helpers/team';
import { serve, type Served } from './lib/serve';
import { measureWidth } from './lib/width';

/**
 * Signing in as a user in Chromium (issue 37): email and password, setting up two-factor sign-in
 * on "Your account" (the QR code loads as an image under the page's CSP, the secret is shown as
 * text), the recovery codes shown once, then signing in again with a TOTP code. The identity pages
 * (sign-in, your account, two-factor, reset, welcome) are axe-clean in light and dark and fit a
 * phone's width.
 */
const { app, db, config } = setupApp();
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let a: TestAccount;
let m: AddedMember;
let served: Served | undefined;
let base: string;

beforeAll(async () => {
  a = await makeAccount(db, 'Team browser');
  m = await addMember(db, a.id, 'editor', { name: 'Eddie Editor' });
  served = await serve(app);
  base = served.base;
}, 60_000);

afterAll(async () => {
  await served?.close();
});

describeBrowser('signing in as a user in a browser', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await loopbackOnly(context);
    page = await context.newPage();
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  async function axeViolations(): Promise<string[]> {
    await page.evaluate(AXE);
    const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as {
      violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
    };
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  /** The page now: axe-clean in light and dark, and no wider than a phone. */
  async function checked(what: string): Promise<void> {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      expect({ what, scheme, violations: await axeViolations() }).toEqual({ what, scheme, violations: [] });
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 360, height: 740 });
    expect({ what, ...(await measureWidth(page)) }).toEqual({ what, view: 360, scroll: 360, outside: [], scrolling: [] });
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  async function submit(name: string): Promise<void> {
    const navigated = page.waitForEvent('framenavigated', (f) => f === page.mainFrame());
    await page.getByRole('button', { name, exact: true }).click();
    await navigated;
    await page.waitForLoadState('load');
  }

  async function signInWith(code?: string): Promise<void> {
    await page.goto(`${base}/app`);
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    await page.getByLabel('Email').fill(m.email);
    await page.getByLabel('Password').fill(MEMBER_PASSWORD);
    if (code) await page.getByRole('textbox', { name: 'Code', exact: true }).fill(code);
    await submit('Sign in');
  }

  it('signs in with a password, sets up TOTP by the page’s secret, and signs in again with a code', async () => {
    await page.goto(`${base}/app`);
    await checked('sign-in');
    await signInWith();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    // The header says who is signed in, and leads to their account.
    await page.getByRole('link', { name: `Your account: signed in as ${m.email}` }).click();
    await page.getByRole('heading', { name: 'Your account', level: 1 }).waitFor();
    await checked('your account');

    await page.getByRole('link', { name: 'Set up two-factor sign-in' }).click();
    await page.getByRole('heading', { name: 'Two-factor sign-in', level: 1 }).waitFor();
    await checked('two-factor, before');
    await submit('Set up two-factor sign-in: with an authenticator app');
    const img = page.getByRole('img', { name: /QR code/ });
    await img.waitFor();
    // The QR code is an image the page's own CSP lets load (img-src 'self'), square and drawn.
    expect(await img.evaluate((el) => ({ complete: (el as HTMLImageElement).complete, width: (el as HTMLImageElement).naturalWidth > 0 }))).toEqual({ complete: true, width: true });
    const secret = (await page.locator('code.secret').innerText()).trim();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    await checked('two-factor, setting up');
    await page.getByRole('textbox', { name: 'Code', exact: true }).fill(totpCode(secret));
    await submit('Turn on');
    await page.getByRole('heading', { name: 'Two-factor sign-in is on', level: 1 }).waitFor();
    const codes = await page.getByRole('list', { name: 'Recovery codes' }).locator('code').allInnerTexts();
    expect(codes).toHaveLength(10);
    await checked('recovery codes');

    await submit('Sign out');
    await page.getByRole('heading', { name: 'Sign in', level: 1 }).waitFor();
    // Without the code: refused, the same words as a wrong password.
    await signInWith();
    await page.getByRole('alert').filter({ hasText: 'Invalid email, password or code.' }).waitFor();
    await signInWith(await nextTotpCode(db, m, secret));
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    expect(problems.filter((p) => !/401/.test(p))).toEqual([]);
  });

  it('the reset and welcome pages are clean too', async () => {
    await page.goto(`${base}/app/reset`);
    await checked('reset request');
    const invited = await addMember(db, a.id, 'viewer', { password: null });
    const link = await issueToken(db, config, a.id, invited.id, 'invite');
    await page.goto(link.url.replace(config.publicUrl, base));
    await page.getByRole('heading', { name: 'Accept the invitation', level: 1 }).waitFor();
    await checked('welcome');
    const reset = await issueToken(db, config, a.id, m.id, 'reset');
    await page.goto(reset.url.replace(config.publicUrl, base));
    await page.getByRole('heading', { name: 'Choose a new password', level: 1 }).waitFor();
    await checked('reset');
  });
});
