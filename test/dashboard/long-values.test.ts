import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { failImportRecord, openImportRecord } from '../../src/resources/contacts/import-history.service';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium } from '../helpers/browser';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';
import { makeWaitingAbSend } from './lib/ab-send';
import { dashboardPages } from './lib/pages';
import { serve, type Served } from './lib/serve';
import { measureWidth } from './lib/width';
import { makeWorld, type World } from './lib/world';

/**
 * Every dashboard page holding values of 200 characters with nowhere to break (names, subjects,
 * addresses, URLs, import errors, bounce diagnostics, webhook errors), at a phone's width, a
 * tablet's and a small laptop's: the page is never wider than the window, nothing sticks out
 * past it, and no table even needs its own box's scrolling: the values wrap in their cells.
 */
const { app, db } = setupApp({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1' });
const LONG = 200;

/** `value` with its spaces joined up, padded to LONG characters (before the @ of an address, at the end of anything else). */
function stretch(value: string): string {
  const joined = value.replace(/\s+/g, '_');
  const pad = 'm'.repeat(Math.max(0, LONG - joined.length));
  const at = joined.lastIndexOf('@');
  return at > 0 && !joined.includes('://') ? joined.slice(0, at) + pad + joined.slice(at) : joined + pad;
}

/** A valid address of LONG characters (a 64-character local part, 63-character labels). */
const longAddress = (local: string) => `${local.padEnd(64, 'm')}@${'d'.repeat(63)}.${'e'.repeat(63)}.example`;

let a: TestAccount;
let w: World;
let abSend: { utr: string };
let served: Served | undefined;
let base: string;
let receiver: Receiver;
/** Records made through the API, with the long value each page must show. */
const made = {
  list: { id: 0, name: stretch('Long list') },
  contact: { id: 0, email: longAddress('contact'), first_name: stretch('First'), last_name: stretch('Last') },
  segment: stretch('Segment'),
  design: { id: 0, name: stretch('Design') },
  sender: { from_name: stretch('Sender name'), from_email: longAddress('sender') },
  webhook: { id: 0, url: '', description: stretch('Description') },
  automation: { utr: '', name: stretch('Automation'), subject: stretch('Automation email subject') },
  suppressed: longAddress('suppressed'),
  importFile: `${'f'.repeat(LONG - 4)}.csv`,
  /** An import's error as its record keeps a refusal (the field errors' JSON), and the message the pages show of it. */
  importError: JSON.stringify({ file: [stretch('The file is not valid')] }),
  importMessage: stretch('The file is not valid'),
  ab: { name: stretch('AB test'), subjects: [stretch('Subject A'), stretch('Subject B'), stretch('Subject C')] as [string, string, string] },
};

async function seedThroughTheApi(): Promise<void> {
  const as = api(app, a);
  const ok = (res: request.Response) => {
    expect({ status: res.status, errors: res.body.errors }).toEqual({ status: 200, errors: undefined });
    return res.body.message;
  };
  ok(await as.form('/contacts-type/add', { name: made.list.name }));
  const types = ok(await as.get('/contacts-type')).contactTypes as Array<{ id: number; name: string }>;
  made.list.id = types.find((t) => t.name === made.list.name)!.id;
  const country = (await db('countries').where({ iso_code: 'GB' }).first('id')).id as number;
  // The same address in two lists: the search lists both.
  for (const list of [made.list.id, w.typeId]) {
    ok(await as.form('/contacts/add', { contact_type_id: list, email: made.contact.email, first_name: made.contact.first_name, last_name: made.contact.last_name, country }));
  }
  made.contact.id = (await db('contacts').where({ user_id: a.id, contact_type_id: made.list.id }).first('id')).id;
  const emailField = (await db('fields').whereNull('user_id').where({ field_name: 'email' }).first('id')).id;
  ok(await as.form('/segment/save', { segment_name: made.segment, contact_type_id: made.list.id, select_field: [emailField], select_operator: ['contains'], value: ['@'] }));
  ok(
    await as.form('/sender/save', {
      ...made.sender,
      reply_to_email: longAddress('reply'),
      country_id: country,
      company_address: stretch('Address'),
      nickname: stretch('Nickname'),
    }),
  );
  const sender = (await db('senders').where({ user_id: a.id, from_email: made.sender.from_email }).first('id')).id;
  // As if its owner had opened the link of the verification mail.
  await db('senders').where({ id: sender, user_id: a.id }).update({ is_verified: 1 });
  made.webhook.url = `${receiver.url}/${'p'.repeat(LONG - receiver.url.length - 1)}`;
  made.webhook.id = ok(await as.form('/webhooks/save', { url: made.webhook.url, description: made.webhook.description })).id;
  ok(await as.form('/suppressions/add', { emails: made.suppressed }));
  made.design.id = ok(await as.form('/designs/save', { template_name: made.design.name, format: 'markdown', source: `# ${stretch('Heading')}` })).id;
  const group = (await db('unsubscribe_groups').where({ user_id: a.id }).first('id')).id;
  made.automation.utr = ok(await as.form('/automations/create', { type: 'custom', automation_for: `contacts_${made.list.id}`, automation_name: made.automation.name, unsubscribe_group_id: group })).utr;
  ok(
    await as.form('/automations/schedule/create', {
      utr: made.automation.utr,
      sender_id: sender,
      subject: made.automation.subject,
      waiting_period: 1,
      waiting_type: 'instantly',
      template_id: 3,
      preview_img: 'template-welcome.png',
      template_html: '<html><body><p>Hi</p></body></html>',
    }),
  );
  // An upload that fails (no email column) under a long file name, and a failure whose error is long JSON.
  const upload = await request(app).post('/contacts/upload-csv').set(a.headers).field('contact_type_id', String(made.list.id)).attach('file', Buffer.from('name\nx\n'), made.importFile);
  expect(upload.status).toBe(422);
  const ctx = { userId: a.id, db };
  const id = await openImportRecord(ctx, { contactTypeId: made.list.id, fileName: made.importFile, fileBytes: 10 });
  await failImportRecord(ctx, id, { rowsRead: 1, skipped: 0, reasons: [], error: made.importError, durationMs: 1 });
  abSend = await makeWaitingAbSend(app, db, a, w, made.ab);
}

beforeAll(async () => {
  receiver = await startReceiver();
  // The endpoint fails with a long answer: the webhook's test shows it.
  receiver.respond = () => 500;
  a = await makeAccount(db, 'Long values');
  w = await makeWorld(db, a, { contactName: stretch('Reader'), stretch });
  await seedThroughTheApi();
  served = await serve(app);
  base = served.base;
}, 120_000);

afterAll(async () => {
  await served?.close();
  await receiver?.close();
});

describeBrowser('long values on every dashboard page', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  /** The long values each page must show (so a page that lost them cannot pass). */
  const expected = (): Record<string, string[]> => ({
    '/app': [w.send.name, w.send.subject, made.ab.name, made.importFile, made.importMessage],
    [`/app/sends/${w.send.utr}`]: [w.send.name, w.send.subject, w.send.linkUrl, w.emails[11]],
    [`/app/sends/${w.send.utr}/reports/${w.bounceEventId}`]: [w.emails[11]],
    [`/app/sends/${abSend.utr}`]: [made.ab.name, ...made.ab.subjects],
    '/app/sends': [w.send.name, made.ab.name],
    '/app/sends/calendar': [],
    '/app/sends/new': [made.list.name],
    [`/app/sends/${w.send.utr}/preview`]: [w.send.name],
    [`/app/sends/${w.send.utr}/delete`]: [w.send.name],
    '/app/designs': [made.design.name],
    [`/app/designs/${made.design.id}/delete`]: [made.design.name],
    '/app/automations': [made.automation.name],
    [`/app/automations/${w.automation.utr}`]: [w.automation.emails[0].subject],
    [`/app/automations/${made.automation.utr}`]: [made.automation.name, made.automation.subject],
    '/app/contacts': [made.list.name, made.segment, made.importFile, made.importMessage],
    [`/app/contacts/${w.contactIds[0]}`]: [w.emails[0], stretch('Reader')],
    [`/app/contacts/${made.contact.id}`]: [made.contact.email, made.contact.first_name, made.contact.last_name],
    [`/app/contacts/search?email=${encodeURIComponent(made.contact.email)}`]: [made.contact.email, made.list.name],
    [`/app/contacts/${w.contactIds[0]}/edit`]: [],
    '/app/lists/new': [],
    [`/app/lists/${w.typeId}`]: [],
    [`/app/lists/${w.typeId}?q=example`]: [],
    [`/app/lists/${w.typeId}/edit`]: [],
    [`/app/lists/${w.typeId}/delete`]: [],
    [`/app/lists/${w.typeId}/contacts/new`]: [],
    [`/app/segments/new?contact_type_id=${w.typeId}`]: [],
    [`/app/lists/${made.list.id}`]: [made.list.name, made.contact.email],
    [`/app/lists/${made.list.id}/delete`]: [made.list.name],
    [`/app/contacts/search?email=${encodeURIComponent(longAddress('nobody'))}`]: [longAddress('nobody')],
    '/app/senders': [made.sender.from_name, made.sender.from_email, stretch('Nickname')],
    '/app/senders/new': [],
    [`/app/senders/${w.senderId}/edit`]: [],
    '/app/senders/groups/new': [],
    '/app/automations/new': [],
    [`/app/automations/${w.automation.utr}/emails/new`]: [],
    [`/app/automations/${w.automation.utr}/emails/${w.automation.emails[0].utr}/edit`]: [],
    '/app/deliverability': [made.sender.from_name, made.sender.from_email, made.suppressed],
    '/app/webhooks': [made.webhook.url],
    [`/app/webhooks/${w.webhookId}`]: [stretch('HTTP 500: upstream down')],
    [`/app/webhooks/${made.webhook.id}`]: [made.webhook.url, made.webhook.description],
    '/app/no-such-page': [],
  });

  async function measure(): Promise<{ scroll: number; outside: string[]; scrolling: string[] }> {
    await page.waitForLoadState('load');
    const { scroll, outside, scrolling } = await measureWidth(page);
    return { scroll, outside, scrolling };
  }

  beforeAll(async () => {
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 375, height: 800 } });
    page = await context.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('the list of pages covers every page of the shared list', () => {
    expect(Object.keys(expected())).toEqual(expect.arrayContaining(dashboardPages(w, abSend.utr)));
  });

  for (const width of [375, 800, 1024]) {
    it(`at ${width} px: the sign-in page, every page and an action's answer fit the window`, async () => {
      await page.setViewportSize({ width, height: 800 });
      await context.clearCookies();
      const faults: Array<{ path: string; scroll: number; outside: string[]; scrolling: string[] }> = [];
      const check = async (path: string) => {
        const m = await measure();
        if (m.scroll > width || m.outside.length || m.scrolling.length) faults.push({ path, ...m });
      };
      await page.goto(`${base}/app`);
      await check('sign-in');
      await page.fill('input[name="public_key"]', a.public_key);
      await page.fill('input[name="secret_key"]', a.secret_key);
      await Promise.all([page.waitForURL(`${base}/app`), page.click('button:has-text("Sign in with the keys")')]);
      await page.locator('h1', { hasText: 'Overview' }).waitFor();
      for (const [path, values] of Object.entries(expected())) {
        await page.goto(`${base}${path}`);
        const shown = await page.locator('body').innerText();
        // A failed import shows its error's messages, not the JSON its record keeps.
        expect({ path, missing: values.filter((v) => !shown.includes(v)), json: shown.includes(made.importError) }).toEqual({ path, missing: [], json: false });
        await check(path);
      }
      // "Send test" on the long webhook: the endpoint's long answer on the result page.
      await page.goto(`${base}/app/webhooks/${made.webhook.id}`);
      await Promise.all([page.waitForURL(/\/test$/), page.locator('main button', { hasText: 'Send test' }).click()]);
      expect(await page.locator('[data-test-result]').getAttribute('data-test-result')).toBe('failed');
      await check('webhook test result');
      expect(faults).toEqual([]);
    });
  }
});
