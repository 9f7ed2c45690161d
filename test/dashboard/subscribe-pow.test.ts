import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { secret } from '../../src/db/secrets';
import { formPublicId } from '../../src/forms/public-id';
import { makeAccount, setupApp } from '../helpers/app';
import { describeBrowser, launchChromium, loopbackOnly } from '../helpers/browser';
import { makeContactType } from '../helpers/fixtures';
import { waitFor } from '../helpers/wait';

/**
 * The hosted form's proof-of-work widget in Chromium (issue 35): ALTCHA's widget and worker load
 * from Herald's own origin under the strict CSP (no inline script or style, no violation
 * reported), solve the challenge, and the submission is accepted.
 */
const { app, db } = setupApp({ SUBSCRIBE_LIMIT_PER_HOUR: '0' });

describeBrowser('the proof-of-work widget of a hosted form', () => {
  let server: Server;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server.close(resolve));
  });

  it('solves the challenge in the browser and the form is accepted', async () => {
    const account = await makeAccount(db);
    const list = await makeContactType(db, account, 'Pow');
    const email = (await db('reserved_fields').where({ field_name: 'email' }).first('id')).id;
    const [form] = await db('forms')
      .insert({
        user_id: account.id,
        name: 'Protected form',
        contact_type_ids: [list],
        fields: JSON.stringify([{ field_id: email, required: 1, label: 'Email' }]),
        double_opt_in: 1,
        consent_text: 'Send me the news.',
        confirmation_subject: 'Confirm',
        captcha: 'proof_of_work',
      })
      .returning('id');
    const publicId = formPublicId(await secret(db, 'tracking'), { userId: account.id, formId: form.id });

    const context = await browser.newContext();
    await loopbackOnly(context);
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
    });
    await page.goto(`${base}/subscribe/${publicId}`);
    await page.fill('#field-email', 'pow-browser@example.com');
    await page.check('input[name=consent]');
    // The widget draws its tick over its checkbox: a person's click lands on the tick, inside the checkbox's label.
    await page.locator('altcha-widget input[type=checkbox]').click({ force: true });
    await page.waitForFunction(() => (document.querySelector('input[name=altcha]') as HTMLInputElement | null)?.value, undefined, { timeout: 60_000 });
    await page.click('button[type=submit]:has-text("Subscribe")');
    await page.waitForSelector('text=Please check your inbox');
    expect(violations).toEqual([]);
    await waitFor('the pending subscription', () => db('pending_subscriptions').where({ user_id: account.id, email: 'pow-browser@example.com' }).first('id'));
    await context.close();
  }, 120_000);
});
