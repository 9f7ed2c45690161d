import os from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import { simpleParser } from 'mailparser';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import type { Browser } from 'playwright-core';
import { createApp } from '../../src/app';
import { domainRecords } from '../../src/dkim/records';
import { createLogger } from '../../src/logger';
import { smtpMailer, type Mailer } from '../../src/mail/mailer';
import { setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium } from '../helpers/browser';
import type { Received } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { setupDelivery } from '../helpers/worker';
import { FlowBrowser } from './lib/flow-browser';
import { localAhead as localTime } from './lib/local-time';
import { serve, type Served } from './lib/serve';

/**
 * Issue 34's "Done when", as a new user does it in the browser and nowhere else: sign in with the
 * account's keys; make a list; add two contacts by hand and import a `;`-delimited CSV through the
 * column-mapping step; build a segment and see its count; make a design in the block editor and
 * one in Markdown; start a send as a draft, leave, come back and finish it; preview it as a
 * contact; send a test to a real SMTP server (`[Test]`, DKIM-signed, the contact's values);
 * schedule it, unschedule it, schedule it again and watch it complete (one message per recipient);
 * read its report. Then an automation with two emails, set live: its first email arrives.
 *
 * Only the account (keys, a verified sender, an unsubscribe group, its DKIM key) is made outside
 * the browser; the database and the SMTP server are read only to check what the pages said.
 * Every page passes axe-core, nothing logs a console error, no request leaves loopback, and the
 * main pages fit a 375 px window.
 */
const { db, config } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50' }, 'campaign_flow');
const rig = setupDelivery({ config, db });

// The dashboard's own mail (test sends) goes to the same SMTP server as the worker's.
let apiMailer: Mailer | undefined;
const app: Express = createApp({ config, db, logger: createLogger('silent'), mailer: { target: 'sink', send: (m) => apiMailer!.send(m), close: async () => undefined } });

const TZ = 'Europe/Berlin';
const LIST = 'Spring readers';
const BLOCK_DESIGN = 'Spring letter (blocks)';
const MARKDOWN_DESIGN = 'Welcome note (Markdown)';
const SEND = 'Spring news';
const AUTOMATION = 'Spring welcome';
const BY_HAND = [
  { email: 'ada@example.com', first: 'Ada' },
  { email: 'bob@example.org', first: 'Bob' },
];
const IMPORTED = [
  { email: 'cy@example.org', first: 'Cy', city: 'Köln' },
  { email: 'dee@example.com', first: 'Dee', city: 'Bonn' },
  { email: 'eve@example.org', first: 'Eve', city: 'Essen' },
];
const EVERYONE = [...BY_HAND, ...IMPORTED];
/** A header Herald does not read by itself (German, `;` between values, as a spreadsheet in Germany saves it). */
const CSV = `E-Mail-Adresse;Vorname;Ort\r\n${IMPORTED.map((c) => `${c.email};${c.first};${c.city}`).join('\r\n')}\r\n`;
const MARKDOWN = '# Welcome, ((first_name))\n\nGlad you are here. Read [the spring issue](https://example.com/spring).\n';

let a: TestAccount;
let dnsTxt: Map<string, string>;
let served: Served;

beforeAll(async () => {
  apiMailer = smtpMailer(rig.sink.url, { poolSize: 1 });
  a = rig.account;
  // What GET /sender/dns tells the account to publish for its sender's domain, answered as DNS would.
  const { records } = await domainRecords(db, config, a.id, 'acme.test');
  dnsTxt = new Map(records.filter((r) => r.type === 'TXT').map((r) => [r.host.toLowerCase(), r.value]));
  served = await serve(app);
});
afterAll(async () => {
  await served?.close();
  await apiMailer?.close();
});

async function dkimResult(raw: string): Promise<{ result: string; domain: string }> {
  const resolver = async (name: string, rr: string) => {
    const value = rr === 'TXT' ? dnsTxt.get(name.toLowerCase()) : undefined;
    if (!value) throw Object.assign(new Error('NXDOMAIN'), { code: 'ENOTFOUND' });
    return [value.match(/.{1,255}/g)!];
  };
  const { results } = await dkimVerify(Buffer.from(raw), { resolver } as never);
  return { result: results[0]?.status.result ?? 'none', domain: (results[0] as unknown as { signingDomain?: string })?.signingDomain ?? '' };
}

const mailTo = (to: string, subject: RegExp): Received[] => rig.sink.received.filter((m) => m.to.includes(to) && subject.test(/^Subject: (.*)$/m.exec(m.raw)?.[1] ?? ''));

const localAhead = (seconds: number) => localTime(TZ, seconds);

describeBrowser('a campaign from the browser (issue 34)', () => {
  let browser: Browser;
  let f: FlowBrowser;
  const started = Date.now();
  const timings: Array<[string, number]> = [];
  let mark = Date.now();
  const lap = (step: string) => {
    timings.push([step, Date.now() - mark]);
    mark = Date.now();
  };

  beforeAll(async () => {
    browser = await launchChromium();
    f = await FlowBrowser.open(browser, served.base, TZ);
    f.page.setDefaultTimeout(20_000);
  }, 60_000);
  afterAll(async () => {
    await f?.close();
    await browser?.close();
    process.stdout.write(`campaign flow: ${timings.map(([s, ms]) => `${s} ${(ms / 1000).toFixed(1)} s`).join(', ')}; in all ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  });

  let listId = 0;
  let blockDesign = 0;
  let markdownDesign = 0;
  let utr = '';
  /** The main pages, for the phone-width pass. */
  const main: string[] = [];
  const page = () => f.page;
  /**
   * One step of the walk: it runs only if every step before it passed (each builds on the last),
   * and a failing one leaves a picture of the page in the temporary directory.
   */
  let broken = '';
  const step = (name: string, fn: () => Promise<void>, timeoutMs?: number) =>
    it(
      name,
      async () => {
        if (broken) throw new Error(`not run: “${broken}” failed before it`);
        try {
          await fn();
        } catch (err) {
          broken = name;
          const shot = path.join(os.tmpdir(), `campaign-flow-${name.slice(0, 2).replace(/\W/g, '')}-${process.pid}.png`);
          await page()
            .screenshot({ path: shot, fullPage: true })
            .then(() => process.stdout.write(`campaign flow: “${name}” failed on ${page().url()}; its page: ${shot}\n`))
            .catch(() => undefined);
          throw err;
        }
      },
      timeoutMs,
    );

  step('1. signs in with the account’s keys and makes a list (a refused name said beside its field)', async () => {
    await f.goto('/app');
    await f.heading('Sign in').waitFor();
    await f.checked();
    await f.box('PublicKey').fill(a.public_key);
    await page().getByLabel('SecretKey', { exact: true }).fill(a.secret_key);
    await f.submit('Sign in with the keys');
    await f.heading('Overview').waitFor();
    await f.checked();
    main.push(f.path);

    await f.follow('Contacts', page().getByRole('navigation', { name: 'Dashboard' }));
    await f.heading('Contacts').waitFor();
    await f.checked();
    main.push(f.path);
    await f.follow('New list');
    await f.heading('New list').waitFor();
    await f.checked();
    // Nothing typed: the API's words beside the field.
    await f.submit('Create the list');
    expect(await f.messagesBeside(f.box('Name'))).toEqual(['The name field is required.']);
    expect(await f.box('Name').getAttribute('aria-invalid')).toBe('true');
    await f.checked();
    await f.box('Name').fill(LIST);
    await f.submit('Create the list');
    await f.heading(LIST).waitFor();
    await f.status('The list was created.').waitFor();
    listId = Number(/\/app\/lists\/(\d+)/.exec(page().url())![1]);
    await f.checked();
    expect(await db('contact_types').where({ user_id: a.id, id: listId }).first('name')).toEqual({ name: LIST });
    lap('list');
  });

  step('2. adds two contacts by hand and imports a ;-delimited CSV through the mapping step', async () => {
    for (const c of BY_HAND) {
      await f.follow('Add a contact');
      await f.heading(`Add a contact to ${LIST}`).waitFor();
      await f.checked();
      await f.box('Email address').fill(c.email);
      await f.box('First name').fill(c.first);
      await f.select('Country').selectOption({ label: 'Germany' });
      await f.submit('Add the contact');
      await f.status('The contact was added.').waitFor();
    }
    const contacts = page().getByRole('table', { name: `Contacts of ${LIST}, newest first` });
    for (const c of BY_HAND) await contacts.getByRole('link', { name: c.email, exact: true }).waitFor();

    await page().getByRole('button', { name: 'CSV file', exact: true }).setInputFiles({ name: 'spring-readers.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV, 'utf8') });
    await f.submit('Upload and map the columns');
    await f.heading('Import spring-readers.csv').waitFor();
    await f.checked();
    // The delimiter as read from the file, the header against Herald's fields, the first rows shown.
    expect(await f.select('Values are separated by').inputValue()).toBe('semicolon');
    const preview = page().getByRole('table', { name: /first 5 rows/ });
    for (const c of IMPORTED) await preview.getByRole('cell', { name: c.email, exact: true }).waitFor();
    await f.select('Column 1: E-Mail-Adresse').selectOption('email');
    await f.select('Column 2: Vorname').selectOption('first_name');
    await f.select('Column 3: Ort').selectOption('city');
    await f.submit('Import');
    await f.heading(LIST).waitFor();
    await f.status(/Imported spring-readers\.csv/).waitFor();
    expect(await page().locator('[data-metric="contacts"]').innerText()).toBe('5');
    await f.checked();
    main.push(f.path);
    const stored = await db('contacts').where({ user_id: a.id, contact_type_id: listId }).orderBy('email').select('email', 'first_name', 'city');
    expect(stored.map((c) => [c.email, c.first_name])).toEqual(EVERYONE.map((c) => [c.email, c.first]).sort((x, y) => x[0].localeCompare(y[0])));
    expect(stored.find((c) => c.email === 'cy@example.org')!.city).toBe('Köln');
    lap('contacts');
  });

  step('3. builds a segment and sees its count, live and once saved; its members open', async () => {
    await f.follow('New segment');
    await f.heading('New segment').waitFor();
    await f.box('Name').fill('On example.org');
    expect(await f.select('Of the list').inputValue()).toBe(String(listId));
    const rule = page().getByRole('group', { name: 'Rule 1' });
    await f.select('Field', rule).selectOption({ label: 'email (text)' });
    await f.select('Operator', rule).selectOption('ends with');
    await f.box('Value', rule).fill('@example.org');
    const counted = page().locator('#segment-count');
    await f.status('3 contacts match these rules.').waitFor();
    expect(await counted.getAttribute('aria-live')).toBe('polite');
    await f.checked();
    await f.submit('Save the segment');
    await f.status('The segment was saved.').waitFor();
    // Once saved, the count of the saved rules (the script then counts the rules shown: the same).
    await f.status(/^3 contacts match (the saved|these) rules\.$/).waitFor();
    await f.checked();
    main.push(f.path);
    await f.follow('Open its members');
    await f.heading('Members of On example.org').waitFor();
    const members = page().getByRole('table', { name: /Members of On example.org/ });
    for (const c of EVERYONE) {
      const link = members.getByRole('link', { name: c.email, exact: true });
      expect({ c: c.email, shown: await link.count() }).toEqual({ c: c.email, shown: c.email.endsWith('.org') ? 1 : 0 });
    }
    await f.checked();
    lap('segment');
  });

  step('4. makes a design in the block editor and another in Markdown, each previewed as it is typed', async () => {
    await f.follow('Designs', page().getByRole('navigation', { name: 'Dashboard' }));
    await f.heading('Designs').waitFor();
    await f.checked();
    main.push(f.path);
    await f.follow('New block design');
    await f.heading('New design').waitFor();
    await f.box('Name').fill(BLOCK_DESIGN);
    const blocks = page().getByRole('region', { name: 'Blocks', exact: true });
    const add = async (type: string) => {
      await f.select('Block to add', blocks).selectOption({ label: type });
      await blocks.getByRole('button', { name: 'Add block', exact: true }).click();
    };
    const block = (n: number) => blocks.getByRole('listitem').filter({ has: page().getByRole('heading', { name: new RegExp(`^${n}\\. `) }) });
    await add('Heading');
    await f.box('Text', block(1)).fill('Spring news for ((first_name))');
    await add('Text');
    await f.box('Text', block(2)).fill('The garden opens on Saturday, ((first_name)). Bring a friend.');
    await add('Button');
    await f.box('Button text', block(3)).fill('See the programme');
    await f.box('Link address', block(3)).fill('https://example.com/programme');
    // The preview follows the blocks (sample values: Jane).
    await f.frame('as a recipient sees it').getByText('The garden opens on Saturday, Jane.').waitFor();
    await f.frame('as a recipient sees it').getByRole('link', { name: 'See the programme' }).waitFor();
    await f.checked();
    await f.submit('Save design');
    await f.status('Design saved.').waitFor();
    blockDesign = Number(/\/app\/designs\/(\d+)\/edit/.exec(page().url())![1]);
    // The editor opens again on the saved document, with the unsubscribe link Herald added said.
    await f.status(/Herald changed the design so that it can be sent/).waitFor();
    await block(3).waitFor();
    await f.checked();
    main.push(f.path);
    const saved = await db('designs').where({ user_id: a.id, id: blockDesign }).first('format', 'source', 'html_code');
    expect(saved.format).toBe('blocks');
    expect(JSON.parse(saved.source).blocks.map((b: { type: string }) => b.type)).toEqual(expect.arrayContaining(['heading', 'text', 'button']));
    expect(saved.html_code).toContain('((unsubscribe_preferences))');

    await f.follow('All designs');
    await f.follow('New Markdown design');
    await f.heading('New design').waitFor();
    await f.box('Name').fill(MARKDOWN_DESIGN);
    const editor = f.box('Markdown');
    await editor.click();
    await page().keyboard.press('Control+a');
    await page().keyboard.insertText(MARKDOWN);
    await f.frame('as a recipient sees it').getByRole('heading', { name: 'Welcome, Jane' }).waitFor();
    await f.checked();
    await f.submit('Save design');
    await f.status('Design saved.').waitFor();
    markdownDesign = Number(/\/app\/designs\/(\d+)\/edit/.exec(page().url())![1]);
    // A form posts its text with CRLF line breaks (HTML's form encoding); the design keeps them as posted.
    const md = await db('designs').where({ user_id: a.id, id: markdownDesign }).first('format', 'source');
    expect({ format: md.format, source: md.source.replace(/\r\n/g, '\n') }).toEqual({ format: 'markdown', source: MARKDOWN });
    await f.checked();
    main.push(f.path);
    lap('designs');
  });

  step('5. starts a send as a draft, leaves, comes back and finishes it', async () => {
    await f.follow('Sends', page().getByRole('navigation', { name: 'Dashboard' }));
    await f.heading('Sends').waitFor();
    await f.checked();
    main.push(f.path);
    await f.follow('New send');
    await f.heading('New send').waitFor();
    await f.checked();
    main.push(f.path);
    await f.box('Subject').fill('Spring news for ((first_name))');
    // A draft needs its name: said beside the field, the subject typed kept.
    await f.submit('Save draft');
    expect(await f.messagesBeside(f.box('Name'))).toEqual(['The single send name field is required.']);
    expect(await f.box('Subject').inputValue()).toBe('Spring news for ((first_name))');
    await f.checked();
    await f.box('Name').fill(SEND);
    await f.submit('Save draft');
    await f.heading(SEND).waitFor();
    await f.status('Saved as a draft.').waitFor();
    utr = /\/app\/sends\/([0-9a-f-]{36})/.exec(page().url())![1];
    expect((await db('single_sends').where({ user_id: a.id, utr }).first('status')).status).toBe(0);

    // Away to the overview, then back through the list of sends.
    await f.follow('Overview', page().getByRole('navigation', { name: 'Dashboard' }));
    await f.follow('Sends', page().getByRole('navigation', { name: 'Dashboard' }));
    await f.follow(`Edit ${SEND}`);
    await f.heading(`Edit: ${SEND}`).waitFor();
    expect(await f.box('Name').inputValue()).toBe(SEND);
    expect(await f.box('Subject').inputValue()).toBe('Spring news for ((first_name))');
    await f.box('Preheader').fill('The garden opens on Saturday');
    await f.select('Design').selectOption({ label: BLOCK_DESIGN });
    await f.choose(f.select('Sender'), 'Acme News <news@acme.test>');
    await f.select('Unsubscribe group').selectOption({ label: 'Newsletter' });
    await page().getByRole('listbox', { name: 'Send to', exact: true }).selectOption({ label: `List: ${LIST} (5)` });
    await page().getByRole('group', { name: 'Recipients', exact: true }).getByText('5 recipients', { exact: true }).waitFor();
    await f.checked();
    await f.submit('Save draft');
    await f.status('Saved as a draft.').waitFor();
    await page().getByRole('definition').filter({ hasText: /^5 recipients$/ }).waitFor();
    await f.checked();
    const row = await db('single_sends').where({ user_id: a.id, utr }).first('status', 'template_id', 'subject', 'preheader');
    expect(row).toEqual({ status: 0, template_id: blockDesign, subject: 'Spring news for ((first_name))', preheader: 'The garden opens on Saturday' });
    lap('draft');
  });

  let ada = 0;
  step('6. previews it as a contact: the subject and the email carry her values', async () => {
    await page().getByRole('searchbox', { name: 'Find a contact by address or name' }).fill('ada@');
    await f.submit('Find');
    await f.follow('Preview as ada@example.com');
    ada = Number(new URL(page().url()).searchParams.get('contact_id'));
    expect(ada).toBeGreaterThan(0);
    const preview = f.region('Preview');
    await preview.getByText('Spring news for Ada', { exact: true }).waitFor();
    for (const width of ['desktop', 'phone']) {
      // The frames load as they come into view.
      await page().locator(`iframe[title="The email at ${width} width"]`).scrollIntoViewIfNeeded();
      await f.frame(`The email at ${width} width`).getByText('The garden opens on Saturday, Ada.').waitFor();
    }
    await page().getByText('Text part').click();
    expect(await page().locator('[data-preview-text]').innerText()).toContain('The garden opens on Saturday, Ada.');
    await f.checked();
    lap('preview');
  });

  step('7. sends a test to the SMTP server: [Test], DKIM-signed, her placeholders filled', async () => {
    const test = f.region('Send a test');
    await f.box('To', test).fill('me@team.example');
    // Whose values fill it: the contact previewed. (Found by its name attribute: its id is the preview form's too, so its label names the other field.)
    expect(await test.locator('input[name="contact_id"]').inputValue()).toBe(String(ada));
    await f.submit('Send the test', test);
    await f.status('Test sent: 1 message.').waitFor();
    await f.checked();
    const [raw] = await waitFor('the test copy at the SMTP server', () => {
      const got = mailTo('me@team.example', /^\[Test\] /);
      return got.length ? got : undefined;
    });
    const mail = await simpleParser(raw.raw);
    expect(mail.subject).toBe('[Test] Spring news for Ada');
    expect(mail.html).toContain('Spring news for Ada');
    expect(mail.text).toContain('The garden opens on Saturday, Ada.');
    expect(await dkimResult(raw.raw)).toEqual({ result: 'pass', domain: 'acme.test' });
    // A test changes nothing of the send.
    expect((await db('single_sends').where({ user_id: a.id, utr }).first('status')).status).toBe(0);
    lap('test send');
  });

  step('8. schedules it a minute ahead, unschedules it, schedules it again and watches it complete', async () => {
    const schedule = f.region('Schedule');
    const minute = localAhead(60);
    await schedule.getByLabel('Send at').fill(minute.local);
    await f.submit('Schedule', schedule);
    await f.status('Scheduled.').waitFor();
    const ready = await db('single_sends').where({ user_id: a.id, utr }).first('status', 'due_at');
    expect({ status: ready.status, due: new Date(ready.due_at).getTime() }).toEqual({ status: 1, due: minute.utc.getTime() });
    await f.checked();

    await f.submit(`Unschedule: ${SEND}`);
    await f.status('Unscheduled: the send is a draft again.').waitFor();
    expect(await db('single_sends').where({ user_id: a.id, utr }).first('status', 'due_at')).toEqual({ status: 0, due_at: null });

    // Again, a few seconds ahead: the form takes a time to the second and refuses only the past.
    const soon = localAhead(20);
    await f.region('Schedule').getByLabel('Send at').fill(soon.local);
    await f.submit('Schedule', f.region('Schedule'));
    await f.status('Scheduled.').waitFor();
    expect(new Date((await db('single_sends').where({ user_id: a.id, utr }).first('due_at')).due_at).getTime()).toBe(soon.utc.getTime());
    expect(rig.sink.received.filter((m) => /^Subject: Spring news/m.test(m.raw))).toEqual([]);

    // The page turns into the send's report once it has gone out.
    await f.reloadUntil('the send’s report', async () => (await page().locator('[data-metric="delivered"]').count()) > 0, 90_000);
    await waitFor('one message per recipient', () => (EVERYONE.every((c) => mailTo(c.email, /^Spring news for /).length >= 1) ? true : undefined), { timeoutMs: 60_000 });
    for (const c of EVERYONE) {
      const got = mailTo(c.email, /^Spring news for /);
      expect({ to: c.email, n: got.length }).toEqual({ to: c.email, n: 1 });
      const mail = await simpleParser(got[0].raw);
      expect({ to: c.email, subject: mail.subject }).toEqual({ to: c.email, subject: `Spring news for ${c.first}` });
      expect(mail.text).toContain(`The garden opens on Saturday, ${c.first}.`);
      expect(await dkimResult(got[0].raw)).toEqual({ result: 'pass', domain: 'acme.test' });
    }
    expect((await db('single_sends').where({ user_id: a.id, utr }).first('status')).status).toBe(3);
    lap('schedule and send');
  }, 240_000);

  step('9. reads the report: every recipient delivered', async () => {
    const delivered = page().locator('[data-metric="delivered"]');
    await f.reloadUntil('5 delivered in the report', async () => (await delivered.innerText()) === '5');
    await f.heading(SEND).waitFor();
    await f.checked();
    main.push(f.path);
    lap('report');
  });

  step('the same for an automation with two emails: made, set live, its first email arrives', async () => {
    await f.follow('Automations', page().getByRole('navigation', { name: 'Dashboard' }));
    await f.heading('Automations').waitFor();
    await f.checked();
    main.push(f.path);
    await f.follow('New automation');
    await f.heading('New automation').waitFor();
    await f.checked();
    await f.box('Name').fill(AUTOMATION);
    await f.select('Who enters').selectOption('custom');
    await f.select('List or segment').selectOption({ label: `List: ${LIST}` });
    await f.select('Unsubscribe group').selectOption({ label: 'Newsletter' });
    await f.submit('Create the automation');
    await f.heading(AUTOMATION).waitFor();
    await f.status(/created as a draft/).waitFor();
    const autoUtr = /\/app\/automations\/([0-9a-f-]{36})/.exec(page().url())![1];
    await f.checked();

    const emails: Array<[subject: string, wait: string, period: string]> = [
      ['Welcome, ((first_name))', 'Right away', '1'],
      ['A week in, ((first_name))', 'Days', '7'],
    ];
    for (const [i, [subject, wait, period]] of emails.entries()) {
      await f.follow('Add an email');
      await f.heading('Add an email').waitFor();
      if (i === 0) {
        // Nothing chosen: the API's words beside the fields.
        await f.submit('Add the email');
        expect(await f.messagesBeside(f.box('Subject'))).toEqual(['The subject field is required.']);
      }
      await f.box('Subject').fill(subject);
      await f.choose(f.select('Sender'), '<news@acme.test>');
      await f.select('Design').selectOption({ label: MARKDOWN_DESIGN });
      await f.select('Wait').selectOption({ label: wait });
      await page().getByRole('spinbutton', { name: 'How many hours or days' }).fill(period);
      await f.checked();
      await f.submit('Add the email');
      await f.status(/The email was added/).waitFor();
    }
    expect(await page().getByRole('table').filter({ hasText: 'A week in' }).getByRole('row').count()).toBeGreaterThanOrEqual(3);
    await f.submit(`Set live: ${AUTOMATION}`);
    await f.status('The automation is live.').waitFor();
    await f.checked();

    await waitFor('the first email to every contact of the list', () => (EVERYONE.every((c) => mailTo(c.email, /^Welcome, /).length >= 1) ? true : undefined), { timeoutMs: 60_000 });
    for (const c of EVERYONE) {
      const got = mailTo(c.email, /^Welcome, /);
      expect({ to: c.email, n: got.length }).toEqual({ to: c.email, n: 1 });
      const mail = await simpleParser(got[0].raw);
      expect(mail.subject).toBe(`Welcome, ${c.first}`);
      expect(mail.html).toContain(`Welcome, ${c.first}`);
      expect(await dkimResult(got[0].raw)).toEqual({ result: 'pass', domain: 'acme.test' });
      expect(mailTo(c.email, /^A week in, /)).toEqual([]);
    }
    const delivered = page().locator('[data-metric="total_delivered"]');
    await f.reloadUntil('5 delivered on the automation’s page', async () => (await delivered.innerText()) === '5');
    expect((await db('automations').where({ user_id: a.id, utr: autoUtr }).first('status')).status).toBe(1);
    await f.checked();
    main.push(f.path);
    lap('automation');
  }, 180_000);

  step('every page visited works without a console error or a request off loopback; the main pages fit 375 px', async () => {
    expect(f.problems).toEqual([]);
    // The only requests stopped on their way off loopback are the previews' own loads of Herald's public address
    // (PUBLIC_URL: the open pixel a recipient's mail client would fetch); nothing else left, nothing else tried to.
    expect([...new Set(f.stopped.map((u) => new URL(u).host))]).toEqual(f.stopped.length ? [new URL(config.publicUrl).host] : []);
    const paths = [...new Set(main)];
    expect(paths.length).toBe(12);
    await page().setViewportSize({ width: 375, height: 800 });
    for (const path of paths) {
      await f.goto(path);
      expect({ path, ...(await f.width()) }).toEqual({ path, view: 375, scroll: 375, outside: [], scrolling: [] });
      expect({ path, axe: await f.axe() }).toEqual({ path, axe: [] });
    }
    expect(f.problems).toEqual([]);
    lap('phone width');
  }, 120_000);
});
