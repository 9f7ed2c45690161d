import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { createApp } from '../../src/app';
import { createLogger } from '../../src/logger';
import { smtpMailer, type Mailer } from '../../src/mail/mailer';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium } from '../helpers/browser';
import { makeContacts, makeContactType, makeGroup, makeSegment, makeSender } from '../helpers/fixtures';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { runWorker, waitForSend } from '../helpers/worker';
import { FlowBrowser } from './lib/flow-browser';
import { localAhead } from './lib/local-time';
import { serve, type Served } from './lib/serve';
import { signIn, type Browserish } from './lib/session';
import { measureWidth } from './lib/width';

/**
 * The Sends area of the dashboard (issue 34): the list, its calendar, the editor (drafts,
 * scheduling, send now with its confirmation), a send's page (schedule, unschedule, duplicate,
 * delete, preview as a contact, test send) — each action through the API's own route, refused
 * forms with the API's words beside their fields; then the whole loop in a browser, the test
 * copy and the real send arriving at an SMTP server.
 */
const { db, config } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50' }, 'sends_ui');
let sink: SmtpSink;
let sinkMailer: Mailer;
// The API's own mail (test sends) goes to the same SMTP sink as the worker's.
const app = createApp({ config, db, logger: createLogger('silent'), mailer: { target: 'sink', send: (m) => sinkMailer.send(m), close: async () => undefined } });

beforeAll(async () => {
  sink = await startSmtpSink();
  sinkMailer = smtpMailer(sink.url, { poolSize: 1 });
});
runWorker({ config, db, mailer: () => smtpMailer(sink.url, { poolSize: 2 }) });
afterAll(async () => {
  await sinkMailer?.close();
  await sink?.close();
});

const TZ = 'America/New_York';

interface Account {
  a: TestAccount;
  s: Browserish;
  list: number;
  segment: number;
  sender: number;
  group: number;
  contacts: number[];
  emails: string[];
}

async function makeWorld(name: string): Promise<Account> {
  const a = await makeAccount(db, name);
  const list = await makeContactType(db, a, 'Readers');
  const emails = ['ada@example.com', 'bob@example.com', 'cy@example.com'].map((e) => `${name.toLowerCase()}.${e}`);
  const contacts = await makeContacts(db, a, list, emails.map((email, i) => ({ email, first_name: ['Ada', 'Bob', 'Cy'][i] })));
  const segment = await makeSegment(db, a, list);
  const sender = await makeSender(db, a);
  const group = await makeGroup(db, a, 'News');
  return { a, s: await signIn(app, a, TZ), list, segment, sender, group, contacts, emails };
}

let w: Account;
let other: Account;

beforeAll(async () => {
  [w, other] = [await makeWorld('Owner'), await makeWorld('Other')];
}, 60_000);

const get = (path: string, who: Account = w) => request(app).get(path).set('Cookie', who.s.cookie);
const post = (path: string, fields: Record<string, string | string[]>, who: Account = w, csrf = true) => {
  const body = new URLSearchParams();
  if (csrf) body.append('_csrf', who.s.csrf);
  for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
  return request(app).post(path).set('Cookie', who.s.cookie).type('form').send(body.toString());
};

const sendRow = (utr: string) => db('single_sends').where({ utr }).first();
const utrOf = (location: string) => /\/app\/sends\/([0-9a-f-]{36})/.exec(location)?.[1] ?? '';
/** The messages listed beside a field (its `field-errors` list). */
const fieldErrors = (html: string, id: string) => {
  const m = new RegExp(`<ul class="field-errors" id="field-${id}-errors">(.*?)</ul>`, 's').exec(html);
  return m ? [...m[1].matchAll(/<li>(.*?)<\/li>/g)].map((x) => x[1].replace(/&#39;|&apos;/g, "'")) : [];
};
const HTML = '<html><body><p>Hello ((first_name))</p><a href="https://example.com/x">x</a><p>((unsubscribe_preferences))</p></body></html>';

/** The form's fields of a complete send (intent added by the caller). */
const complete = (acc: Account = w, extra: Record<string, string | string[]> = {}) => ({
  single_send_name: 'Complete',
  subject: 'Hello ((first_name))',
  preheader: 'Read me',
  sender_id: String(acc.sender),
  unsubscribe_group_id: String(acc.group),
  'recipient_id[]': [`contacts_${acc.list}`],
  template_id: '1',
  template_html: HTML,
  ...extra,
});

const ahead = (seconds: number) => localAhead(TZ, seconds);

describe('the send editor', () => {
  it('saves a draft with only its name (status 0) and shows it', async () => {
    const res = await post('/app/sends/new', { single_send_name: 'Only a name', intent: 'draft' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(/\?saved=draft$/);
    const row = await sendRow(utrOf(res.headers.location));
    expect({ status: row.status, name: row.single_send_name, user: row.user_id }).toEqual({ status: 0, name: 'Only a name', user: w.a.id });
    const page = await get(res.headers.location);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Saved as a draft.');
    expect(page.text).toContain('Only a name');
  });

  it('refuses a draft without a name in the API’s words, beside the field', async () => {
    const res = await post('/app/sends/new', { subject: 'Typed subject', intent: 'draft' });
    expect(res.status).toBe(422);
    expect(fieldErrors(res.text, 'single_send_name')).toEqual(['The single send name field is required.']);
    expect(res.text).toContain('value="Typed subject"');
    expect(res.text).toContain('class="error-summary"');
  });

  it('refuses to schedule an incomplete send: every missing field beside it, what was typed kept', async () => {
    const res = await post('/app/sends/new', { single_send_name: 'Half done', preheader: 'Kept preheader', 'recipient_id[]': [`contacts_${w.list}`], intent: 'schedule' });
    expect(res.status).toBe(422);
    expect(fieldErrors(res.text, 'subject')).toEqual(['The subject field is required.']);
    expect(fieldErrors(res.text, 'sender_id')).toEqual(['The sender id field is required.']);
    expect(res.text).toContain('value="Half done"');
    expect(res.text).toContain('value="Kept preheader"');
    expect(res.text).toMatch(new RegExp(`<option value="contacts_${w.list}" selected`));
    expect(await db('single_sends').where({ user_id: w.a.id, single_send_name: 'Half done' }).first()).toBeUndefined();
    // Complete but for its time: the schedule's messages beside the one time field.
    const timeless = await post('/app/sends/new', { ...complete(), single_send_name: 'Timeless', intent: 'schedule' });
    expect(timeless.status).toBe(422);
    expect(fieldErrors(timeless.text, 'schedule_at')).toEqual(['The schedule date field is required when schedule type is 1.', 'The schedule time field is required when schedule type is 1.']);
  });

  it('schedules a complete send at the time typed in the browser’s zone (UTC in the API)', async () => {
    const at = ahead(3 * 86400);
    const res = await post('/app/sends/new', { ...complete(), single_send_name: 'Scheduled one', schedule_at: at.local, intent: 'schedule' });
    expect(res.status).toBe(303);
    const row = await sendRow(utrOf(res.headers.location));
    expect(row.status).toBe(1);
    expect(new Date(row.due_at).getTime()).toBe(at.utc.getTime());
    const edit = await get(`/app/sends/${row.utr}/edit`);
    expect(edit.text).toContain(`value="${at.local}"`);
    const page = await get(`/app/sends/${row.utr}`);
    expect(page.text).toContain('3 recipients');
  });

  it('a draft is left, then finished in the editor: the stored values come back', async () => {
    const first = await post('/app/sends/new', { single_send_name: 'Later', subject: 'Hi', intent: 'draft' });
    const utr = utrOf(first.headers.location);
    const edit = await get(`/app/sends/${utr}/edit`);
    expect(edit.status).toBe(200);
    expect(edit.text).toContain('value="Later"');
    expect(edit.text).toContain('value="Hi"');
    const done = await post(`/app/sends/${utr}/edit`, { ...complete(), single_send_name: 'Later', schedule_at: ahead(86400).local, intent: 'schedule' });
    expect(done.status).toBe(303);
    expect((await sendRow(utr)).status).toBe(1);
  });

  it('send now: a draft, then a confirmation naming the audience, then ready now', async () => {
    const res = await post('/app/sends/new', { ...complete(), single_send_name: 'Right away', 'exclude_specific_recipient_id[]': [], intent: 'now' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(/\/send-now$/);
    const utr = utrOf(res.headers.location);
    expect((await sendRow(utr)).status).toBe(0);
    const confirm = await get(res.headers.location);
    expect(confirm.text).toContain('data-audience-size="3"');
    expect(confirm.text).toContain('Send now to 3 recipients');
    const sent = await post(`/app/sends/${utr}/send-now`, {});
    expect(sent.status).toBe(303);
    const row = await waitForSend(db, utr, 3);
    expect(row.triggered).toBe(3);
  });

  it('send now of an incomplete draft opens the editor with the API’s words', async () => {
    const first = await post('/app/sends/new', { single_send_name: 'Not ready', intent: 'draft' });
    const utr = utrOf(first.headers.location);
    const res = await post(`/app/sends/${utr}/send-now`, {});
    expect(res.status).toBe(422);
    expect(fieldErrors(res.text, 'subject')).toEqual(['The subject field is required.']);
    expect(res.text).toContain(`action="/app/sends/${utr}/edit"`);
    expect((await sendRow(utr)).status).toBe(0);
  });

  it('the A/B fieldset goes to the API as its fields, and its refusals come back beside them', async () => {
    const res = await post('/app/sends/new', { ...complete(), single_send_name: 'AB', ab_test_type: 'subject', 'ab_variations.0.subject': '', 'ab_variations.1.template_id': '1', intent: 'draft' });
    expect(res.status).toBe(422);
    expect(res.text).toContain('field-ab_variations-1-template_id');
    expect(fieldErrors(res.text, 'ab_variations-1-template_id').length).toBe(1);
    const ok = await post('/app/sends/new', { ...complete(), single_send_name: 'AB ok', ab_test_type: 'subject', 'ab_variations.0.subject': 'Subject B', ab_test_percentage: '50', intent: 'draft' });
    expect(ok.status).toBe(303);
    const details = await api(app, w.a).get(`/single-send/details?utr=${utrOf(ok.headers.location)}`);
    expect(details.body.message.singleSend[0]).toMatchObject({ ab_test_type: 'subject', ab_test_percentage: 50, ab_variations: [{ subject: 'Subject B' }] });
  });

  it('the live audience count: each address once, exclusions left out, the suppressed counted apart', async () => {
    await db('global_unsubscribers').insert({ user_id: w.a.id, email_address: w.emails[2] });
    const res = await get(`/app/sends/audience-count?recipient_id[]=contacts_${w.list}&recipient_id[]=segments_${w.segment}&unsubscribe_group_id=${w.group}`).set('Accept', 'application/json');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ recipients: 3, suppressed: 1 });
    const excluded = await get(`/app/sends/audience-count?recipient_id[]=contacts_${w.list}&exclude_specific_recipient_id[]=segments_${w.segment}`);
    expect(excluded.body).toMatchObject({ recipients: 0, suppressed: 0 });
    // Another account's list reaches nobody.
    const theirs = await get(`/app/sends/audience-count?recipient_id[]=contacts_${other.list}`);
    expect(theirs.body).toMatchObject({ recipients: 0 });
    await db('global_unsubscribers').where({ user_id: w.a.id }).delete();
  });
});

describe('a send’s actions', () => {
  let utr: string;
  beforeAll(async () => {
    const res = await post('/app/sends/new', { ...complete(), single_send_name: 'Actions', intent: 'draft' });
    utr = utrOf(res.headers.location);
  });

  it('schedules with a time in the browser’s zone, unschedules, schedules again', async () => {
    const at = ahead(2 * 86400);
    const s1 = await post(`/app/sends/${utr}/schedule`, { send_at: at.local });
    expect(s1.status).toBe(303);
    let row = await sendRow(utr);
    expect({ status: row.status, due: new Date(row.due_at).getTime() }).toEqual({ status: 1, due: at.utc.getTime() });
    const page = await get(`/app/sends/${utr}`);
    expect(page.text).toContain('Unschedule');
    const u = await post(`/app/sends/${utr}/unschedule`, {});
    expect(u.status).toBe(303);
    row = await sendRow(utr);
    expect({ status: row.status, due: row.due_at }).toEqual({ status: 0, due: null });
    expect((await post(`/app/sends/${utr}/schedule`, { send_at: at.local })).status).toBe(303);
    expect((await sendRow(utr)).status).toBe(1);
    expect((await post(`/app/sends/${utr}/unschedule`, {})).status).toBe(303);
  });

  it('a time in the past is refused beside the field in the API’s words', async () => {
    const res = await post(`/app/sends/${utr}/schedule`, { send_at: '2001-01-01T10:00' });
    expect(res.status).toBe(422);
    expect(fieldErrors(res.text, 'send_at')).toEqual(['The send at must be a date after now.']);
    expect(res.text).toContain('value="2001-01-01T10:00"');
    expect((await sendRow(utr)).status).toBe(0);
  });

  it('unscheduling a draft is refused in the API’s words', async () => {
    const res = await post(`/app/sends/${utr}/unschedule`, {});
    expect(res.status).toBe(422);
    expect(res.text).toContain('The single send is not scheduled.');
  });

  it('duplicates into a draft copy and opens its editor', async () => {
    const res = await post(`/app/sends/${utr}/duplicate`, {});
    expect(res.status).toBe(303);
    const copy = await sendRow(utrOf(res.headers.location));
    expect({ status: copy.status, name: copy.single_send_name }).toEqual({ status: 0, name: 'Actions (copy)' });
    expect(res.headers.location).toMatch(/\/edit/);
  });

  it('deletes after a confirmation page', async () => {
    const made = await post('/app/sends/new', { single_send_name: 'Doomed', intent: 'draft' });
    const doomed = utrOf(made.headers.location);
    const confirm = await get(`/app/sends/${doomed}/delete`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Delete this send?');
    const res = await post(`/app/sends/${doomed}/delete`, {});
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app/sends?deleted=1');
    expect((await sendRow(doomed)).deleted_at).not.toBeNull();
  });

  it('previews as a chosen contact: the subject and the frames carry the contact’s values', async () => {
    const found = await get(`/app/sends/${utr}?q=${encodeURIComponent(w.emails[1])}`);
    expect(found.text).toContain(`data-contact-id="${w.contacts[1]}"`);
    const page = await get(`/app/sends/${utr}?contact_id=${w.contacts[1]}`);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("frame-src 'self'");
    expect(page.text).toContain('Hello Bob');
    const frame = await get(`/app/sends/${utr}/preview/frame?contact_id=${w.contacts[1]}&variation=0`);
    expect(frame.headers['content-security-policy']).toContain('sandbox');
    expect(frame.text).toContain('Hello Bob');
    // Another account's contact: said beside the contact field.
    const theirs = await get(`/app/sends/${utr}?contact_id=${other.contacts[0]}`);
    expect(theirs.status).toBe(200);
    expect(fieldErrors(theirs.text, 'contact_id').length).toBe(1);
  });

  it('sends a test: [Test] subject, the contact’s values, to the SMTP server; a suppressed address refused beside the field', async () => {
    const before = sink.received.length;
    const res = await post(`/app/sends/${utr}/test`, { emails: 'qa1@example.net, qa2@example.net', contact_id: String(w.contacts[0]) });
    expect(res.status).toBe(303);
    expect(res.headers.location).toContain('tested=2');
    await waitFor('two test copies', async () => (sink.received.length >= before + 2 ? true : undefined));
    const mails = await sink.parsed();
    const copy = mails.find((m) => m.to && JSON.stringify(m.to).includes('qa1@example.net'))!;
    expect(copy.subject).toBe('[Test] Hello Ada');
    expect(copy.html).toContain('Hello Ada');
    await db('suppressions').insert({ user_id: w.a.id, email: 'gone@example.net', type: 'manual', reason: 'test', diagnostic: '', source: 'api' });
    const refused = await post(`/app/sends/${utr}/test`, { emails: 'ok@example.net\ngone@example.net' });
    expect(refused.status).toBe(422);
    expect(fieldErrors(refused.text, 'emails')).toEqual(['The emails.1 is suppressed (suppressed): this account sends it no mail.']);
    expect(refused.text).toContain('gone@example.net</textarea>');
    const many = await post(`/app/sends/${utr}/test`, { emails: Array.from({ length: 11 }, (_, i) => `m${i}@example.net`).join(' ') });
    expect(many.status).toBe(422);
    expect(fieldErrors(many.text, 'emails').length).toBe(1);
  });

  it('past the hourly limit of test messages, the 429 is said beside the addresses', async () => {
    const sent = await db('test_sends').where({ user_id: w.a.id }).count<{ count: string }[]>({ count: '*' });
    await db('test_sends').insert(Array.from({ length: 50 - Number(sent[0].count) }, () => ({ user_id: w.a.id, single_send_id: 1, email: 'x@example.net' })));
    const res = await post(`/app/sends/${utr}/test`, { emails: 'late@example.net' });
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBeDefined();
    expect(fieldErrors(res.text, 'emails')[0]).toMatch(/^Too Many Requests: at most 50 test messages are sent per hour/);
    await db('test_sends').where({ user_id: w.a.id }).delete();
  });
});

describe('the list and the calendar', () => {
  it('lists every send with search, a status filter and pages', async () => {
    for (let i = 0; i < 26; i += 1) await post('/app/sends/new', { single_send_name: `Bulk ${String(i).padStart(2, '0')}`, intent: 'draft' });
    const all = await get('/app/sends');
    expect(all.status).toBe(200);
    expect(all.text).toContain('Next page');
    const page2 = await get('/app/sends?page=2');
    expect(page2.text).toContain('Previous page');
    const found = await get('/app/sends?q=bulk%2007');
    expect(found.text).toContain('Bulk 07');
    expect(found.text).not.toContain('Bulk 08');
    expect(found.text).toContain('1 send match');
    const scheduled = await get('/app/sends?status=scheduled');
    expect(scheduled.text).toContain('Scheduled one');
    expect(scheduled.text).not.toContain('Bulk 01');
    const completed = await get('/app/sends?status=completed');
    expect(completed.text).toContain('Right away');
    // The other account sees none of these.
    const theirs = await get('/app/sends?q=bulk', other);
    expect(theirs.text).toContain('No send matches.');
  });

  it('places scheduled sends on their day in the browser’s zone, month by month', async () => {
    const row = await db('single_sends').where({ user_id: w.a.id, single_send_name: 'Scheduled one' }).first('due_at', 'utr');
    const day = new Intl.DateTimeFormat('en-CA', { timeZone: TZ, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(row.due_at));
    const res = await get(`/app/sends/calendar?month=${day.slice(0, 7)}`);
    expect(res.status).toBe(200);
    const cell = new RegExp(`data-day="${day}">.*?</li></ul></li>`, 's').exec(res.text)?.[0] ?? '';
    expect(cell).toContain(`/app/sends/${row.utr}`);
    expect(res.text).toContain('Previous month');
  });
});

describe('guards', () => {
  let utr: string;
  beforeAll(async () => {
    utr = utrOf((await post('/app/sends/new', { single_send_name: 'Guarded', intent: 'draft' })).headers.location);
  });

  it('every action needs the CSRF token', async () => {
    for (const path of ['/app/sends/new', `/app/sends/${utr}/edit`, `/app/sends/${utr}/schedule`, `/app/sends/${utr}/unschedule`, `/app/sends/${utr}/delete`, `/app/sends/${utr}/duplicate`, `/app/sends/${utr}/test`, `/app/sends/${utr}/send-now`]) {
      const res = await post(path, { single_send_name: 'x', intent: 'draft', emails: 'a@example.net' }, w, false);
      expect([path, res.status]).toEqual([path, 403]);
    }
    expect((await sendRow(utr)).deleted_at).toBeNull();
  });

  it('another account’s send is a 404 page, for every page and action', async () => {
    const pages = ['', '/edit', '/preview', '/preview/frame', '/send-now', '/delete'].map((s) => `/app/sends/${utr}${s}`);
    for (const path of pages) {
      const res = await get(path, other);
      expect([path, res.status]).toEqual([path, 404]);
      expect(res.text).toContain('belongs to another account');
    }
    for (const action of ['edit', 'schedule', 'unschedule', 'delete', 'duplicate', 'test', 'send-now']) {
      const res = await post(`/app/sends/${utr}/${action}`, { single_send_name: 'x', intent: 'draft', emails: 'a@example.net', send_at: ahead(86400).local }, other);
      expect([action, res.status]).toEqual([action, 404]);
    }
    const row = await sendRow(utr);
    expect({ name: row.single_send_name, status: row.status, deleted: row.deleted_at }).toEqual({ name: 'Guarded', status: 0, deleted: null });
    expect(await db('single_sends').where({ user_id: other.a.id, single_send_name: 'Guarded (copy)' }).first()).toBeUndefined();
  });
});

describeBrowser('a campaign from the browser', () => {
  let browser: Browser;
  let f: FlowBrowser;
  let page: Page;
  let served: Served;

  beforeAll(async () => {
    served = await serve(app);
    browser = await launchChromium();
    f = await FlowBrowser.open(browser, served.base, TZ);
    page = f.page;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  afterEach(() => {
    // The previews' emails load their open pixel from PUBLIC_URL (http://herald.test here), which
    // loopbackOnly stops on purpose (the browser logs each as blocked); nothing else may leave or fail.
    const problems = f.problems.splice(0).filter((m) => !/net::ERR_BLOCKED_BY_CLIENT/.test(m));
    const elsewhere = f.stopped.splice(0).filter((url) => !url.startsWith(`${config.publicUrl}/`));
    expect({ problems, elsewhere }).toEqual({ problems: [], elsewhere: [] });
  });

  const base = () => served.base;
  const axe = () => f.axe();

  async function click(selector: string): Promise<void> {
    await f.navigate(() => page.click(selector));
  }

  let utr = '';

  it('signs in, makes a draft with only its name, leaves, comes back and finishes it (the live count as recipients are chosen)', async () => {
    await page.goto(`${base()}/app`);
    await page.fill('input[name="public_key"]', w.a.public_key);
    await page.fill('input[name="secret_key"]', w.a.secret_key);
    await click('button:has-text("Sign in with the keys")');
    await page.goto(`${base()}/app/sends`);
    expect(await axe()).toEqual([]);
    await click('a:has-text("New send")');
    expect(await axe()).toEqual([]);
    await page.fill('#field-single_send_name', 'Browser campaign');
    await click('button[value="draft"]');
    expect(await page.locator('.flash').innerText()).toBe('Saved as a draft.');
    utr = utrOf(page.url());
    expect((await sendRow(utr)).status).toBe(0);

    // Leave, come back through the list, finish it.
    await page.goto(`${base()}/app/sends?q=Browser`);
    await click('a:has-text("Browser campaign")');
    await click('a.button:has-text("Edit")');
    expect(await page.inputValue('#field-single_send_name')).toBe('Browser campaign');
    await page.fill('#field-subject', 'Hi ((first_name))');
    await page.fill('#field-preheader', 'From the browser');
    await page.selectOption('#field-template_id', '1');
    await page.fill('#field-template_html', HTML);
    await page.selectOption('#field-sender_id', String(w.sender));
    await page.selectOption('#field-unsubscribe_group_id', String(w.group));
    await page.selectOption('#field-recipient_id', [`contacts_${w.list}`]);
    await page.locator('#audience-count', { hasText: /^3 recipients$/ }).waitFor();
    await page.selectOption('#field-exclude_specific_recipient_id', [`segments_${w.segment}`]);
    await page.locator('#audience-count', { hasText: /^0 recipients$/ }).waitFor();
    await page.selectOption('#field-exclude_specific_recipient_id', []);
    await page.locator('#audience-count', { hasText: /^3 recipients$/ }).waitFor();
    expect(await axe()).toEqual([]);
    await click('button[value="draft"]');
    expect(await page.locator('.flash').innerText()).toBe('Saved as a draft.');
    const row = await sendRow(utr);
    expect({ status: row.status, subject: row.subject, sender: row.sender_id }).toEqual({ status: 0, subject: 'Hi ((first_name))', sender: w.sender });
  }, 60_000);

  it('previews it as a contact found by address, at desktop and phone width, with its text part', async () => {
    await page.fill('#preview-q', w.emails[1]);
    await click('#preview button:has-text("Find")');
    await click(`a[data-contact-id="${w.contacts[1]}"]`);
    expect(await page.locator('[data-preview-subject]').innerText()).toBe('Hi Bob');
    const desktop = page.frameLocator('iframe[title="The email at desktop width"]');
    await expect(desktop.locator('body').innerText()).resolves.toContain('Hello Bob');
    const phone = page.locator('iframe[title="The email at phone width"]');
    await phone.scrollIntoViewIfNeeded();
    await expect(page.frameLocator('iframe[title="The email at phone width"]').locator('body').innerText()).resolves.toContain('Hello Bob');
    expect((await phone.boundingBox())!.width).toBeLessThanOrEqual(377);
    await page.click('summary:has-text("Text part")');
    expect(await page.locator('[data-preview-text]').innerText()).toContain('Hello Bob');
    expect(await axe()).toEqual([]);
  }, 60_000);

  it('sends a test to the SMTP server: [Test], DKIM-signed, the contact’s values', async () => {
    const before = sink.received.length;
    expect(await page.inputValue('#test #test-contact_id')).toBe(String(w.contacts[1]));
    await page.fill('#field-emails', 'tester@example.net');
    await click('button:has-text("Send the test")');
    expect(await page.locator('.flash').innerText()).toBe('Test sent: 1 message.');
    const mail = await waitFor('the test copy', () => sink.received.slice(before).find((m) => m.to.includes('tester@example.net')));
    expect(mail.raw).toMatch(/^DKIM-Signature:/m);
    expect(mail.raw).toMatch(/^Subject: \[Test\] Hi Bob/m);
    expect((await sendRow(utr)).status).toBe(0);
  }, 60_000);

  it('schedules it a minute ahead, unschedules it, schedules it again and it completes; the report shows it', async () => {
    await page.fill('#field-send_at', ahead(60).local);
    await click('#schedule button:has-text("Schedule")');
    expect(await page.locator('.flash').innerText()).toBe('Scheduled.');
    expect((await sendRow(utr)).status).toBe(1);
    await page.goto(`${base()}/app/sends/calendar`);
    expect(await page.locator(`.calendar a[href="/app/sends/${utr}"]`).count()).toBe(1);
    expect(await axe()).toEqual([]);
    await page.goto(`${base()}/app/sends/${utr}`);
    await click('button:has-text("Unschedule")');
    expect(await page.locator('.flash').innerText()).toBe('Unscheduled: the send is a draft again.');
    expect((await sendRow(utr)).status).toBe(0);
    const at = ahead(60);
    await page.fill('#field-send_at', at.local);
    await click('#schedule button:has-text("Schedule")');
    expect(new Date((await sendRow(utr)).due_at).getTime()).toBe(at.utc.getTime());
    await waitForSend(db, utr, 3, 180_000);
    await page.goto(`${base()}/app/sends/${utr}`);
    expect(await page.locator('h1').innerText()).toBe('Browser campaign');
    expect(await page.locator('[data-metric="delivered"]').innerText()).toBe('3');
    expect(sink.received.filter((m) => m.raw.includes('Subject: Hi Bob')).length).toBe(1);
  }, 240_000);

  it('fits a 375 px window and stays axe-clean there', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const path of ['/app/sends', '/app/sends/calendar', '/app/sends/new', `/app/sends/${utr}/preview?contact_id=${w.contacts[0]}`, `/app/sends/${utr}`]) {
      await page.goto(`${base()}${path}`, { waitUntil: 'load' });
      const m = await measureWidth(page);
      expect({ path, scroll: m.scroll, outside: m.outside }).toEqual({ path, scroll: 375, outside: [] });
      expect({ path, axe: await axe() }).toEqual({ path, axe: [] });
    }
  }, 60_000);
});
