import fs from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { MailError } from '../../src/mail/mailer';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium, loopbackOnly } from '../helpers/browser';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { waitFor } from '../helpers/wait';
import { setupDelivery } from '../helpers/worker';
import { serve, type Served } from './lib/serve';
import { signIn, type Browserish } from './lib/session';
import { measureWidth } from './lib/width';

/**
 * The settings pages of the dashboard: senders (add, edit, resend the verification mail,
 * delete), unsubscribe groups, new automations and their emails, set live, pause and resume.
 * Each form runs the API's own route: a refused form shows the API's messages beside its
 * fields and keeps what was typed. Then in a browser: a sender, a group and an automation with
 * two emails made by hand, set live, and its first email arriving at an SMTP sink (the worker
 * runs on this file's own database).
 */
const { app, db, config, mailer } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50' }, 'settings_ui');
const rig = setupDelivery({ config, db });
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const LINK = /http:\/\/herald\.test(\/senders\/verify\/[0-9]+\.[A-Za-z0-9_-]+)/;

let a: TestAccount;
let b: TestAccount;
let sa: Browserish;
let sb: Browserish;
const geo = { us: 0, california: 0, sanFrancisco: 0, texas: 0 };

beforeAll(async () => {
  [a, b] = await Promise.all([makeAccount(db, 'Settings'), makeAccount(db, 'Stranger')]);
  [sa, sb] = await Promise.all([signIn(app, a), signIn(app, b)]);
  geo.us = (await db('countries').where({ iso_code: 'US' }).first('id')).id;
  geo.california = (await db('states').where({ country_id: geo.us, iso_code: 'CA' }).first('id')).id;
  geo.texas = (await db('states').where({ country_id: geo.us, iso_code: 'TX' }).first('id')).id;
  geo.sanFrancisco = (await db('cities').where({ state_id: geo.california, name: 'San Francisco' }).first('id')).id;
});

beforeEach(() => mailer.clear());

/** The verification link (its path) in the last mail to `email`. */
async function linkMailedTo(email: string): Promise<string> {
  const mails = (await mailer.parsed()).filter((m) => JSON.stringify(m.to).includes(email));
  const found = LINK.exec(mails[mails.length - 1]?.text ?? '');
  if (!found) throw new Error(`no verification link mailed to ${email}`);
  return found[1];
}

const get = (path: string, s: Browserish = sa) => request(app).get(path).set('Cookie', s.cookie);
/** A form as the browser posts it, with the session's CSRF token unless `csrf` is false. */
const post = (path: string, fields: Record<string, string | number> = {}, s: Browserish = sa, csrf = true) =>
  request(app)
    .post(path)
    .set('Cookie', s.cookie)
    .type('form')
    .send({ ...(csrf ? { _csrf: s.csrf } : {}), ...fields });

const decode = (html: string) =>
  html.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');

/** The messages shown beside a field (its `field-errors` list). */
function beside(html: string, name: string): string[] {
  const list = new RegExp(`<ul class="field-errors" id="field-${name}-errors">(.*?)</ul>`, 's').exec(html);
  return list ? [...list[1].matchAll(/<li>(.*?)<\/li>/gs)].map((m) => decode(m[1])) : [];
}

/** What a field holds as the page shows it: an input's value, a select's chosen option, a textarea's text. */
function shown(html: string, name: string): string | undefined {
  const id = `id="field-${name}"`;
  const input = new RegExp(`<input[^>]*${id}[^>]*>`).exec(html);
  if (input) return decode(/ value="([^"]*)"/.exec(input[0])?.[1] ?? '');
  const area = new RegExp(`<textarea[^>]*${id}[^>]*>(.*?)</textarea>`, 's').exec(html);
  if (area) return decode(area[1]);
  const select = new RegExp(`<select[^>]*${id}[^>]*>(.*?)</select>`, 's').exec(html);
  if (select) return decode(/<option value="([^"]*)" selected/.exec(select[1])?.[1] ?? '');
  return undefined;
}

let seq = 0;
function senderFields(overrides: Record<string, string | number> = {}): Record<string, string | number> {
  seq += 1;
  return {
    nickname: `Newsletter ${seq}`,
    from_name: 'Acme News',
    from_email: `news${seq}@acme.example`,
    reply_to_email: 'support@acme.example',
    company_address: '1 Market St',
    company_address2: 'Suite 200',
    zip_code: '94105',
    country_id: geo.us,
    state_id: geo.california,
    city_id: geo.sanFrancisco,
    ...overrides,
  };
}

const senders = async (account: TestAccount) => (await api(app, account).get('/senders')).body.message.senders as Array<Record<string, unknown>>;
const groups = async (account: TestAccount) => (await api(app, account).get('/unsubscribes-groups')).body.message.unsubscribesGroups as Array<Record<string, unknown>>;

/** A refused form: the API's words for the same input beside each field it names, and every typed value shown again. */
async function expectRefusedLikeApi(page: request.Response, apiAnswer: request.Response, typed: Record<string, string | number>, names: Record<string, string> = {}) {
  expect(apiAnswer.status).toBe(422);
  expect(page.status).toBe(422);
  const errors = apiAnswer.body.errors as Record<string, string[]>;
  expect(Object.keys(errors).length).toBeGreaterThan(0);
  for (const [field, messages] of Object.entries(errors)) expect({ field, shown: beside(page.text, names[field] ?? field) }).toEqual({ field, shown: messages });
  for (const [field, value] of Object.entries(typed)) expect({ field, shown: shown(page.text, field) }).toEqual({ field, shown: String(value) });
  expect(page.text).toContain('class="error-summary"');
}

describe('senders', () => {
  it('adds a sender through the form (POST /sender/save): listed unverified, its link mailed', async () => {
    const fields = senderFields();
    const res = await post('/app/senders/new', fields);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app/senders?done=added');
    const s = (await senders(a)).find((x) => x.from_email === fields.from_email)!;
    expect(s).toMatchObject({ nickname: fields.nickname, state_id: geo.california, city_id: geo.sanFrancisco, company_address2: 'Suite 200', is_verified: 0 });
    expect(mailer.sent.map((m) => m.to)).toEqual([fields.from_email]);
    const list = await get(res.headers.location);
    expect(list.text).toContain('The sender was added.');
    expect(list.text).toContain(`/app/deliverability#sender-${s.id}`);
    expect(list.text).toContain('Not verified');
  });

  it('a refused sender shows the API’s messages beside the fields and keeps what was typed', async () => {
    const typed = senderFields({ from_email: 'not an address', reply_to_email: 'also@bad', nickname: '' });
    const { nickname: _n, ...sent } = typed;
    const page = await post('/app/senders/new', sent);
    await expectRefusedLikeApi(page, await api(app, a).form('/sender/save', sent), sent);
    expect(beside(page.text, 'nickname')).toEqual(['The nickname field is required.']);
    // A state that is not of the country: the geography rule's words, the typed id kept.
    const wrongState = senderFields({ state_id: 999999, city_id: '' });
    const { city_id: _c, ...sent2 } = wrongState;
    const page2 = await post('/app/senders/new', sent2);
    await expectRefusedLikeApi(page2, await api(app, a).form('/sender/save', sent2), sent2);
    expect(await senders(a)).not.toContainEqual(expect.objectContaining({ from_email: sent2.from_email }));
  });

  it('the form offers the states of the chosen country and the cities of the chosen state; places.json feeds the script', async () => {
    const id = await makeSender(db, a);
    await api(app, a).form('/sender/update', { sender_id: id, ...senderFields() });
    const page = await get(`/app/senders/${id}/edit`);
    expect(page.status).toBe(200);
    expect(shown(page.text, 'country_id')).toBe(String(geo.us));
    expect(shown(page.text, 'state_id')).toBe(String(geo.california));
    expect(shown(page.text, 'city_id')).toBe(String(geo.sanFrancisco));
    expect(page.text).toMatch(/<select[^>]*id="field-city_id"/);
    const blank = await get('/app/senders/new');
    expect(blank.text).toMatch(/<input[^>]*id="field-state_id"[^>]*type="number"/);
    const states = await get(`/app/senders/places.json?country_id=${geo.us}`);
    expect(states.status).toBe(200);
    expect(states.body.states).toContainEqual({ id: geo.texas, name: 'Texas' });
    const cities = await get(`/app/senders/places.json?state_id=${geo.california}`);
    expect(cities.body.cities).toContainEqual({ id: geo.sanFrancisco, name: 'San Francisco' });
    expect(cities.body.cities.every((c: { id: number }) => typeof c.id === 'number')).toBe(true);
    expect((await get('/app/senders/places.json')).status).toBe(422);
  });

  it('edits a sender (POST /sender/update); a refusal keeps what was typed', async () => {
    const id = await makeSender(db, a);
    const fields = senderFields({ nickname: 'Renamed', state_id: '', city_id: '' });
    const { state_id: _s, city_id: _c, ...sent } = fields;
    const res = await post(`/app/senders/${id}/edit`, sent);
    expect(res.status).toBe(303);
    expect((await api(app, a).get(`/sender/details?sender_id=${id}`)).body.message.sender).toMatchObject({ nickname: 'Renamed', state_id: null, from_email: sent.from_email });
    const bad = { ...sent, from_name: 'x'.repeat(300) };
    const page = await post(`/app/senders/${id}/edit`, bad);
    await expectRefusedLikeApi(page, await api(app, a).form('/sender/update', { sender_id: id, ...bad }), bad);
  });

  it('resends the verification mail; a mail server that refuses is a message with Retry-After, not an error page', async () => {
    const id = await makeSender(db, a, false);
    const res = await post(`/app/senders/${id}/resend`);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app/senders?done=mailed');
    expect(mailer.sent).toHaveLength(1);
    expect(await linkMailedTo(mailer.sent[0].to)).toMatch(/^\/senders\/verify\//);
    const original = mailer.send;
    mailer.send = async () => {
      throw new MailError('connect ECONNREFUSED 127.0.0.1:25', false);
    };
    try {
      const refused = await post(`/app/senders/${id}/resend`);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('60');
      expect(refused.text).toContain('The verification mail could not be sent. Try again later.');
      expect(refused.text).toContain('<h1>Senders and unsubscribe groups</h1>');
    } finally {
      mailer.send = original;
    }
  });

  it('deletes a sender; one an automation email uses is refused in the API’s words', async () => {
    const id = await makeSender(db, a);
    expect((await post(`/app/senders/${id}/delete`)).status).toBe(303);
    expect((await senders(a)).map((s) => s.id)).not.toContain(id);
    const used = await makeSender(db, a);
    const utr = await newAutomation(a, await makeGroup(db, a));
    await addEmailByApi(a, utr, used, 'Uses the sender');
    const refused = await post(`/app/senders/${used}/delete`);
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('The sender is used by an automation email.');
    expect((await senders(a)).map((s) => s.id)).toContain(used);
  });
});

describe('unsubscribe groups', () => {
  it('adds, edits and deletes a group through the API’s routes', async () => {
    const added = await post('/app/senders/groups/new', { group_name: 'Product news', description: 'Launches', is_display: 1 });
    expect(added.status).toBe(303);
    const g = (await groups(a)).find((x) => x.group_name === 'Product news')!;
    expect(g).toMatchObject({ description: 'Launches', is_display: 1 });
    expect((await get('/app/senders')).text).toContain('Product news');
    const form = await get(`/app/senders/groups/${g.id}/edit`);
    expect(shown(form.text, 'group_name')).toBe('Product news');
    expect(shown(form.text, 'is_display')).toBe('1');
    expect((await post(`/app/senders/groups/${g.id}/edit`, { group_name: 'Launches', description: 'New things', is_display: 0 })).status).toBe(303);
    expect((await api(app, a).get(`/unsubscribes-groups/details?id=${g.id}`)).body.message.unsubscribesGroup).toMatchObject({ group_name: 'Launches', is_display: 0 });
    expect((await post(`/app/senders/groups/${g.id}/delete`)).status).toBe(303);
    expect((await groups(a)).map((x) => x.id)).not.toContain(g.id);
  });

  it('a refused group shows the API’s messages beside the fields and keeps what was typed', async () => {
    const typed = { description: 'd'.repeat(2001), is_display: 0 };
    const page = await post('/app/senders/groups/new', typed);
    await expectRefusedLikeApi(page, await api(app, a).form('/unsubscribes-groups/save', typed), typed);
    expect(beside(page.text, 'group_name')).toEqual(['The group name field is required.']);
  });
});

async function newAutomation(account: TestAccount, group: number, name = 'Onboarding'): Promise<string> {
  const list = await makeContactType(db, account, `List for ${name}`);
  const res = await api(app, account).form('/automations/create', { type: 'custom', automation_for: `contacts_${list}`, automation_name: name, unsubscribe_group_id: group });
  expect(res.status).toBe(200);
  return res.body.message.utr;
}

async function addEmailByApi(account: TestAccount, utr: string, sender: number, subject: string) {
  const res = await api(app, account).form('/automations/schedule/create', { utr, sender_id: sender, subject, waiting_period: 1, waiting_type: 'instantly', template_id: 3, preview_img: 'x.png' });
  expect(res.status).toBe(200);
}

const schedules = async (account: TestAccount, utr: string) =>
  (await api(app, account).get(`/automations/schedule?utr=${utr}`)).body.message.automation_schedules as Array<Record<string, unknown>>;
const status = async (account: TestAccount, utr: string) => (await api(app, account).get(`/automations/details?utr=${utr}`)).body.message.automation.status as number;

describe('automations', () => {
  it('creates an automation with every field of the route; a refusal keeps what was typed', async () => {
    const list = await makeContactType(db, a, 'Signups');
    const group = await makeGroup(db, a, 'Onboarding mail');
    const form = await get('/app/automations/new');
    expect(form.text).toContain(`value="contacts_${list}"`);
    expect(form.text).toContain(`value="${group}"`);
    const fields = { automation_name: 'Welcome flow', type: 'welcome', automation_for: `contacts_${list}`, unsubscribe_group_id: group, exit_criteria: 1 };
    const res = await post('/app/automations/new', fields);
    expect(res.status).toBe(303);
    const utr = /\/app\/automations\/([0-9a-f-]{36})\?done=created$/.exec(res.headers.location)![1];
    expect((await api(app, a).get(`/automations/details?utr=${utr}`)).body.message.automation).toMatchObject({
      automation_name: 'Welcome flow',
      automation_type: 1,
      automation_for: list,
      exit_criteria: 1,
      unsubscribe_group_id: String(group),
      status: 0,
    });
    const typed = { automation_name: 'No target', type: 'custom', automation_for: 'segments_999999', unsubscribe_group_id: 999999 };
    const page = await post('/app/automations/new', typed);
    // The select cannot show an id it does not offer; the name and type stay as typed.
    await expectRefusedLikeApi(page, await api(app, a).form('/automations/create', typed), { automation_name: 'No target', type: 'custom' });
  });

  it('adds and removes emails (design from GET /get-design/template); an unverified sender is refused in the API’s words', async () => {
    const group = await makeGroup(db, a);
    const utr = await newAutomation(a, group, 'Two steps');
    const sender = await makeSender(db, a);
    const unverified = await makeSender(db, a, false);
    const designs = (await api(app, a).get('/get-design/template')).body.message.templates as Array<{ id: number; template_name: string; preview_image: string }>;
    const form = await get(`/app/automations/${utr}/emails/new`);
    for (const d of designs) expect(form.text).toContain(`<option value="${d.id}">${d.template_name}</option>`);
    const design = designs[designs.length - 1];
    const first = { subject: 'Hello', sender_id: sender, template_id: design.id, waiting_type: 'instantly', waiting_period: 1 };
    expect((await post(`/app/automations/${utr}/emails/new`, first)).status).toBe(303);
    expect((await post(`/app/automations/${utr}/emails/new`, { ...first, subject: 'Later', waiting_type: 'days', waiting_period: 2 })).status).toBe(303);
    const rows = await schedules(a, utr);
    expect(rows.map((r) => [r.subject, r.waiting_type, r.waiting_period, r.template_id, r.preview_img])).toEqual([
      ['Hello', 'instantly', 1, design.id, design.preview_image],
      ['Later', 'days', 2, design.id, design.preview_image],
    ]);
    const detail = await get(`/app/automations/${utr}`);
    expect(detail.text).toContain('data-table="schedules"');
    expect(detail.text).toContain('2 days');

    const typed = { subject: 'Third', sender_id: unverified, template_id: design.id, waiting_type: 'hours', waiting_period: 0 };
    const page = await post(`/app/automations/${utr}/emails/new`, typed);
    const apiAnswer = await api(app, a).form('/automations/schedule/create', { ...typed, utr, preview_img: design.preview_image });
    await expectRefusedLikeApi(page, apiAnswer, typed);
    expect(beside(page.text, 'sender_id')).toEqual(['The selected sender id is not verified.']);
    // Without a design: the route's message on template_id, and no preview image to ask of a person.
    const noDesign = await post(`/app/automations/${utr}/emails/new`, { ...first, template_id: '' });
    expect(noDesign.status).toBe(422);
    expect(beside(noDesign.text, 'template_id').length).toBeGreaterThan(0);
    expect(noDesign.text).not.toContain('preview img');

    const removed = await post(`/app/automations/${utr}/emails/${rows[1].utr}/delete`);
    expect(removed.status).toBe(303);
    expect((await schedules(a, utr)).map((r) => r.subject)).toEqual(['Hello']);
    // Another automation's email through this one's path: not found, nothing removed.
    const other = await newAutomation(a, group, 'Other');
    await addEmailByApi(a, other, sender, 'Elsewhere');
    const elsewhere = (await schedules(a, other))[0].utr as string;
    expect((await post(`/app/automations/${utr}/emails/${elsewhere}/delete`)).status).toBe(404);
    expect(await schedules(a, other)).toHaveLength(1);
  });

  it('edits an email in place (POST /automations/schedule/update): its own HTML kept while its design stays; a refusal keeps what was typed', async () => {
    const group = await makeGroup(db, a);
    const utr = await newAutomation(a, group, 'Editable');
    const sender = await makeSender(db, a);
    const other = await makeSender(db, a);
    const html = '<html><body><p>Own HTML for ((first_name))</p><a href="((unsubscribe_preferences))">prefs</a></body></html>';
    expect((await api(app, a).form('/automations/schedule/create', { utr, sender_id: sender, subject: 'Own', waiting_period: 1, waiting_type: 'instantly', template_id: 3, preview_img: 'own.png', template_html: html })).status).toBe(200);
    await addEmailByApi(a, utr, sender, 'Second');
    const [first, second] = await schedules(a, utr);
    const form = await get(`/app/automations/${utr}/emails/${first.utr}/edit`);
    expect(form.status).toBe(200);
    expect(shown(form.text, 'subject')).toBe('Own');
    expect(shown(form.text, 'template_id')).toBe('3');
    expect(form.text).toContain('HTML of its own');

    const res = await post(`/app/automations/${utr}/emails/${first.utr}/edit`, { subject: 'Own, renamed', sender_id: other, template_id: 3, waiting_type: 'hours', waiting_period: 5 });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`/app/automations/${utr}?done=email-updated#sequence`);
    const [renamed, untouched] = await schedules(a, utr);
    expect(renamed).toMatchObject({ utr: first.utr, subject: 'Own, renamed', sender_id: other, waiting_type: 'hours', waiting_period: 5, template_html: html, preview_img: 'own.png' });
    expect(untouched).toEqual(second);
    // Another design: that design's image, nothing of the email's own.
    const designs = (await api(app, a).get('/get-design/template')).body.message.templates as Array<{ id: number; preview_image: string }>;
    const design = designs.find((d) => d.id !== 3)!;
    expect((await post(`/app/automations/${utr}/emails/${first.utr}/edit`, { subject: 'Designed', sender_id: other, template_id: design.id, waiting_type: 'hours', waiting_period: 5 })).status).toBe(303);
    const [after] = await schedules(a, utr);
    expect(after).toMatchObject({ subject: 'Designed', template_id: design.id, template_html: null, template_json: null, preview_img: design.preview_image });

    const typed = { subject: 'Kept as typed', sender_id: other, template_id: design.id, waiting_type: 'days', waiting_period: 0 };
    const page = await post(`/app/automations/${utr}/emails/${first.utr}/edit`, typed);
    await expectRefusedLikeApi(page, await api(app, a).form('/automations/schedule/update', { ...typed, utr: first.utr, preview_img: design.preview_image }), typed);
    expect((await schedules(a, utr))[0]).toEqual(after);
  });

  it('set live is refused without an email (the API’s words on the page); then live, pause and resume', async () => {
    const group = await makeGroup(db, a);
    const utr = await newAutomation(a, group, 'Lifecycle');
    const refused = await post(`/app/automations/${utr}/live`);
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('Add at least one email before setting the automation live.');
    expect(await status(a, utr)).toBe(0);
    await addEmailByApi(a, utr, await makeSender(db, a), 'Only one');
    const live = await post(`/app/automations/${utr}/live`);
    expect(live.status).toBe(303);
    expect(live.headers.location).toBe(`/app/automations/${utr}?done=live`);
    expect(await status(a, utr)).toBe(1);
    expect((await get(live.headers.location)).text).toContain('The automation is live.');
    expect((await post(`/app/automations/${utr}/pause`)).status).toBe(303);
    expect(await status(a, utr)).toBe(2);
    const again = await post(`/app/automations/${utr}/pause`);
    expect(again.status).toBe(422);
    expect(again.text).toContain('Only a live automation can be paused');
    expect((await post(`/app/automations/${utr}/resume`)).status).toBe(303);
    expect(await status(a, utr)).toBe(1);
  });
});

describe('guards', () => {
  let sender: number;
  let group: number;
  let utr: string;
  let emailUtr: string;
  beforeAll(async () => {
    sender = await makeSender(db, a);
    group = await makeGroup(db, a, 'Guarded');
    utr = await newAutomation(a, group, 'Guarded');
    await addEmailByApi(a, utr, sender, 'Guarded email');
    emailUtr = (await schedules(a, utr))[0].utr as string;
  });

  const actions = () => [
    { path: '/app/senders/new', fields: senderFields() },
    { path: `/app/senders/${sender}/edit`, fields: senderFields() },
    { path: `/app/senders/${sender}/resend`, fields: {} },
    { path: `/app/senders/${sender}/delete`, fields: {} },
    { path: '/app/senders/groups/new', fields: { group_name: 'G', description: 'D', is_display: 1 } },
    { path: `/app/senders/groups/${group}/edit`, fields: { group_name: 'G', description: 'D', is_display: 1 } },
    { path: `/app/senders/groups/${group}/delete`, fields: {} },
    { path: '/app/automations/new', fields: { automation_name: 'X', type: 'custom', automation_for: 'contacts_1', unsubscribe_group_id: group } },
    { path: `/app/automations/${utr}/live`, fields: {} },
    { path: `/app/automations/${utr}/pause`, fields: {} },
    { path: `/app/automations/${utr}/resume`, fields: {} },
    { path: `/app/automations/${utr}/emails/new`, fields: { subject: 'S', sender_id: sender, template_id: 3, waiting_type: 'instantly', waiting_period: 1 } },
    { path: `/app/automations/${utr}/emails/${emailUtr}/edit`, fields: { subject: 'S', sender_id: sender, template_id: 3, waiting_type: 'instantly', waiting_period: 1 } },
    { path: `/app/automations/${utr}/emails/${emailUtr}/delete`, fields: {} },
  ];

  it('every action refuses a request without the CSRF token, changing nothing', async () => {
    const before = { senders: await senders(a), groups: await groups(a), emails: await schedules(a, utr), status: await status(a, utr) };
    for (const { path, fields } of actions()) {
      const res = await post(path, fields, sa, false);
      expect({ path, status: res.status }).toEqual({ path, status: 403 });
      expect(res.text).toContain('security token');
    }
    expect({ senders: await senders(a), groups: await groups(a), emails: await schedules(a, utr), status: await status(a, utr) }).toEqual(before);
    expect(mailer.sent).toHaveLength(0);
  });

  it('another account’s sender, group, automation and email are a 404 page, and stay as they were', async () => {
    const before = { senders: await senders(a), groups: await groups(a), emails: await schedules(a, utr), status: await status(a, utr) };
    const pages = [`/app/senders/${sender}/edit`, `/app/senders/groups/${group}/edit`, `/app/automations/${utr}`, `/app/automations/${utr}/emails/new`, `/app/automations/${utr}/emails/${emailUtr}/edit`];
    for (const path of pages) {
      const res = await get(path, sb);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(res.text).toContain('belongs to another account');
    }
    for (const { path, fields } of actions().filter((x) => !x.path.endsWith('/new') || x.path.includes(utr))) {
      const res = await post(path, fields, sb);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
    }
    expect({ senders: await senders(a), groups: await groups(a), emails: await schedules(a, utr), status: await status(a, utr) }).toEqual(before);
  });

  it('signed out: the pages lead to sign-in and the actions do nothing', async () => {
    expect((await request(app).get('/app/senders')).status).toBe(303);
    expect((await request(app).post('/app/senders/new').type('form').send(senderFields())).status).toBe(303);
  });
});

describeBrowser('settings in a browser', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let served: Served;
  let base: string;
  let c: TestAccount;
  let list: number;
  const problems: string[] = [];
  const stopped: string[] = [];
  const reader = `reader.${process.pid}@example.com`;

  beforeAll(async () => {
    c = await makeAccount(db, 'Browser settings');
    list = await makeContactType(db, c, 'Readers');
    await makeContacts(db, c, list, [{ email: reader, first_name: 'Rosa' }]);
    served = await serve(app);
    base = served.base;
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    stopped.push(...(await loopbackOnly(context)));
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of (404|422)/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('response', (r) => {
      if (r.status() >= 400 && r.request().resourceType() !== 'document') problems.push(`${r.status()} ${r.url()}`);
    });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await served?.close();
  });

  async function axeViolations(): Promise<string[]> {
    await page.evaluate(AXE);
    const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as {
      violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
    };
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  /** Clicks a button that submits a form and waits for the page it leads to. */
  async function submit(label: string): Promise<void> {
    await Promise.all([page.waitForEvent('framenavigated', (f) => f === page.mainFrame()), page.getByRole('button', { name: label, exact: true }).click()]);
    await page.waitForLoadState('load');
  }

  async function follow(link: string): Promise<void> {
    await Promise.all([page.waitForEvent('framenavigated', (f) => f === page.mainFrame()), page.getByRole('link', { name: link, exact: true }).first().click()]);
    await page.waitForLoadState('load');
  }

  const checked: string[] = [];
  async function clean(): Promise<void> {
    checked.push(new URL(page.url()).pathname);
    expect({ url: page.url(), axe: await axeViolations() }).toEqual({ url: page.url(), axe: [] });
  }

  it('a sender, a group and an automation with two emails made by hand, set live: its first email arrives', async () => {
    await page.goto(`${base}/app`);
    await page.fill('input[name="public_key"]', c.public_key);
    await page.fill('input[name="secret_key"]', c.secret_key);
    await Promise.all([page.waitForURL(`${base}/app`), page.click('button:has-text("Sign in with the keys")')]);

    await page.goto(`${base}/app/senders`);
    await page.locator('h1', { hasText: 'Senders and unsubscribe groups' }).waitFor();
    await clean();
    await follow('Add a sender');
    await clean();
    // A refused form: the messages beside the fields, what was typed still there.
    await page.fill('#field-nickname', 'Main sender');
    await page.fill('#field-from_email', 'not an address');
    await submit('Add the sender');
    expect(await page.locator('#field-from_email-errors').innerText()).toContain('The from email must be a valid email address.');
    expect(await page.locator('#field-from_name-errors').innerText()).toContain('The from name field is required.');
    expect(await page.inputValue('#field-nickname')).toBe('Main sender');
    expect(await page.locator('#field-from_email').getAttribute('aria-invalid')).toBe('true');
    await clean();
    // By keyboard: the summary's link takes the focus to its field.
    await page.locator('.error-summary a').first().focus();
    await page.keyboard.press('Enter');

    await page.fill('#field-from_name', 'Herald Browser');
    await page.fill('#field-from_email', 'browser@acme.example');
    await page.fill('#field-reply_to_email', 'reply@acme.example');
    await page.fill('#field-company_address', '1 Market St');
    await page.fill('#field-zip_code', '94105');
    await page.selectOption('#field-country_id', String(geo.us));
    await page.locator('select#field-state_id option', { hasText: 'California' }).waitFor({ state: 'attached' });
    await page.selectOption('#field-state_id', String(geo.california));
    await page.locator('select#field-city_id option', { hasText: 'San Francisco' }).first().waitFor({ state: 'attached' });
    await page.selectOption('#field-city_id', String(geo.sanFrancisco));
    await clean();
    await submit('Add the sender');
    await page.locator('.flash', { hasText: 'The sender was added.' }).waitFor();
    const [s] = await senders(c);
    expect(s).toMatchObject({ nickname: 'Main sender', country_id: geo.us, state_id: geo.california, city_id: geo.sanFrancisco, is_verified: 0 });

    // The link of the verification mail, opened in the browser.
    const link = await linkMailedTo('browser@acme.example');
    await page.goto(`${base}${link}`);
    expect((await senders(c))[0].is_verified).toBe(1);
    await page.goto(`${base}/app/senders`);
    expect(await page.locator('table[data-table="senders"]').innerText()).toContain('Verified');

    await follow('Add a group');
    await clean();
    await page.fill('#field-group_name', 'Browser news');
    await page.fill('#field-description', 'What the browser test sends');
    await submit('Add the group');
    await page.locator('.flash', { hasText: 'The unsubscribe group was added.' }).waitFor();

    await page.goto(`${base}/app/automations`);
    await follow('New automation');
    await clean();
    await page.fill('#field-automation_name', 'Browser sequence');
    await page.selectOption('#field-type', 'custom');
    await page.selectOption('#field-automation_for', `contacts_${list}`);
    await page.selectOption('#field-unsubscribe_group_id', { label: 'Browser news' });
    await submit('Create the automation');
    await page.locator('.flash', { hasText: 'created as a draft' }).waitFor();
    const utr = /\/app\/automations\/([0-9a-f-]{36})/.exec(page.url())![1];
    await clean();

    for (const [subject, wait, period] of [
      ['Welcome aboard', 'instantly', '1'],
      ['A week later', 'days', '7'],
    ]) {
      await follow('Add an email');
      await page.fill('#field-subject', subject);
      await page.selectOption('#field-sender_id', String(s.id));
      await page.selectOption('#field-template_id', '3');
      await page.selectOption('#field-waiting_type', wait);
      await page.fill('#field-waiting_period', period);
      await clean();
      await submit('Add the email');
      await page.locator('.flash', { hasText: 'The email was added' }).waitFor();
    }
    expect(await page.locator('table[data-table="schedules"] tbody tr').count()).toBe(2);
    expect((await schedules(c, utr)).map((e) => e.subject)).toEqual(['Welcome aboard', 'A week later']);
    // Edit the second email: its subject and its wait.
    await follow('Edit: email 2, A week later');
    await clean();
    await page.fill('#field-subject', 'Three days later');
    await page.fill('#field-waiting_period', '3');
    await submit('Save the email');
    await page.locator('.flash', { hasText: 'The email was saved.' }).waitFor();
    expect((await schedules(c, utr)).map((e) => [e.subject, e.waiting_period, e.waiting_type])).toEqual([
      ['Welcome aboard', 1, 'instantly'],
      ['Three days later', 3, 'days'],
    ]);

    await submit('Set live: Browser sequence');
    await page.locator('.flash', { hasText: 'The automation is live.' }).waitFor();
    expect(await status(c, utr)).toBe(1);
    await clean();
    await waitFor(`the first email to ${reader}`, () => rig.sink.received.some((m) => m.to[0] === reader), { describe: () => rig.sink.received.map((m) => m.to[0]) });
    const mail = rig.sink.received.find((m) => m.to[0] === reader)!;
    expect(mail.raw).toMatch(/Subject: Welcome aboard/);
    expect(mail.raw).toMatch(/DKIM-Signature:/);

    await submit('Pause: Browser sequence');
    await page.locator('.flash', { hasText: 'paused' }).waitFor();
    expect(await status(c, utr)).toBe(2);
    expect(problems).toEqual([]);
    expect(stopped).toEqual([]);
  });

  it('every settings page fits 375 px, is axe-clean at that width, and works without a console error', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const path of [...new Set(checked)]) {
      await page.goto(`${base}${path}`);
      expect({ path, ...(await measureWidth(page)) }).toEqual({ path, view: 375, scroll: 375, outside: [], scrolling: [] });
      expect({ path, axe: await axeViolations() }).toEqual({ path, axe: [] });
    }
    expect(checked.length).toBeGreaterThanOrEqual(6);
    expect(problems).toEqual([]);
  });
});
