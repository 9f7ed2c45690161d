import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { designListRecord, designRecord, designPreviewResponse, designSavedResponse } from '../../src/resources/designs/designs.schemas';
import { IN_USE_BY_AUTOMATION, IN_USE_BY_SEND, SENDING_WITH_IT } from '../../src/resources/designs/designs.service';
import { templateRecord, type TemplateRecord } from '../../src/resources/templates/templates.schemas';
import { designParts } from '../../src/sources';
import { SendStatus } from '../../src/states';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType, makeContacts, makeGroup, makeSender } from '../helpers/fixtures';
import { createSend } from '../helpers/sends';

/**
 * Saved designs (issue 34): the six /designs routes, and saved designs as `template_id` of
 * sends, automation emails and A/B variations. Nothing is delivered here (no worker): what a
 * send of a saved design is made of is checked through designParts, the sender's own read.
 */
// The sends made here are ready and due now: soft-delete them so that worker databases cloned
// from this one later do not send them (registered before setupApp's hook closes the pool).
afterAll(async () => {
  await db('single_sends').whereIn('user_id', [a.id, b.id]).update({ deleted_at: db.fn.now() });
});
const { app, db } = setupApp();

const NEWSLETTER = fs.readFileSync(path.join(__dirname, '../../assets/templates/newsletter.json'), 'utf8');
const UNSUBSCRIBE_ADDED = 'An unsubscribe link was added to the footer.';
const VIEWPORT_ADDED = 'A viewport meta tag was added to the head.';
const VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">';
const COMPLETE_HTML =
  '<!DOCTYPE html><html><head>' + VIEWPORT + '</head><body><p>Hi ((first_name))</p><a href="((unsubscribe_preferences))">Unsubscribe</a></body></html>';
const MARKDOWN = '# Hello ((first_name))\n\nRead [our news](https://example.com/news).\n';

interface Refs {
  sender: number;
  group: number;
  list: number;
}
let a: TestAccount;
let b: TestAccount;
const A = {} as Refs;
const B = {} as Refs;

async function refsFor(account: TestAccount, into: Refs): Promise<void> {
  into.sender = await makeSender(db, account);
  into.group = await makeGroup(db, account);
  into.list = await makeContactType(db, account);
  // Two: an A/B test of two variations needs at least as many recipients.
  await makeContacts(db, account, into.list, [
    { email: `c${account.id}@example.com`, first_name: 'Carla' },
    { email: `d${account.id}@example.com`, first_name: 'Dora' },
  ]);
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  await refsFor(a, A);
  await refsFor(b, B);
});

/** POST /single/send/create for account a (due now, to its list) with these fields besides. */
function createSendOfA(fields: Record<string, unknown>) {
  return api(app, a).form('/single/send/create', {
    sender_id: A.sender,
    unsubscribe_group_id: A.group,
    single_send_name: 'X',
    subject: 'X',
    preheader: 'X',
    recipient_id: [`contacts_${A.list}`],
    schedule_type: 0,
    ...fields,
  });
}

/** A custom automation of account a (a draft); returns its utr. */
async function automationOfA(): Promise<string> {
  const created = await api(app, a).form('/automations/create', {
    type: 'custom',
    automation_for: `contacts_${A.list}`,
    automation_name: 'Flow',
    unsubscribe_group_id: A.group,
  });
  expectSuccess(created);
  return created.body.message.utr as string;
}

/** POST /automations/schedule/create: an email of automation `utr` of account a with this design. */
const addEmailOfA = (utr: string, templateId: number) =>
  api(app, a).form('/automations/schedule/create', {
    utr,
    sender_id: A.sender,
    subject: 'Hi',
    waiting_period: 1,
    waiting_type: 'instantly',
    template_id: templateId,
    preview_img: 'template-saved.png',
  });

async function save(account: TestAccount, fields: Record<string, unknown>): Promise<{ id: number; format: string; notices: string[] }> {
  const res = await api(app, account).form('/designs/save', fields);
  expectSuccess(res);
  return expectShape(designSavedResponse, res.body.message);
}

const saveHtml = (account: TestAccount, name = 'Plain', source = COMPLETE_HTML) => save(account, { template_name: name, format: 'html', source });

async function details(account: TestAccount, id: number) {
  const res = await api(app, account).get(`/designs/details?id=${id}`);
  expectSuccess(res);
  return expectShape(designRecord, res.body.message.design);
}

async function templatesOf(account: TestAccount): Promise<TemplateRecord[]> {
  const res = await api(app, account).get('/get-design/template');
  expectSuccess(res);
  return res.body.message.templates as TemplateRecord[];
}

describe('POST /designs/save and GET /designs/details', () => {
  it('saves a block design rendered to HTML, kept with its document', async () => {
    const saved = await save(a, { template_name: 'Monthly', format: 'blocks', source: NEWSLETTER });
    expect(saved.id).toBeGreaterThanOrEqual(1001);
    expect(saved).toMatchObject({ format: 'blocks', notices: [] });
    const d = await details(a, saved.id);
    expect(d).toMatchObject({ id: saved.id, template_name: 'Monthly', format: 'blocks' });
    expect(JSON.parse(d.json_code)).toEqual(JSON.parse(NEWSLETTER));
    expect(d.source).toBe(d.json_code);
    expect(d.html_code).toContain(VIEWPORT);
    expect(d.html_code).toContain('href="((unsubscribe_preferences))"');
    expect(d.html_code).toContain('A faster, cleaner dashboard');
  });

  it('adds an unsubscribe footer to a block document without one, in the document too, and says so', async () => {
    const doc = { version: 1, blocks: [{ type: 'text', text: 'Hello ((first_name))' }] };
    const saved = await save(a, { template_name: 'Bare', format: 'blocks', source: JSON.stringify(doc) });
    expect(saved.notices).toEqual([UNSUBSCRIBE_ADDED]);
    const d = await details(a, saved.id);
    const stored = JSON.parse(d.json_code) as { blocks: Array<{ type: string; unsubscribe?: { href: string } }> };
    expect(stored.blocks.at(-1)).toMatchObject({ type: 'footer', unsubscribe: { href: '((unsubscribe_preferences))' } });
    expect(d.html_code).toContain('href="((unsubscribe_preferences))"');
  });

  it('saves Markdown in the responsive layout, with the footer it lacked', async () => {
    const saved = await save(a, { template_name: 'Notes', format: 'markdown', source: MARKDOWN });
    expect(saved.notices).toEqual([UNSUBSCRIBE_ADDED]);
    const d = await details(a, saved.id);
    expect(d).toMatchObject({ format: 'markdown', source: MARKDOWN, json_code: '' });
    expect(d.html_code).toContain(VIEWPORT);
    expect(d.html_code).toMatch(/<h1 style="[^"]*">Hello \(\(first_name\)\)<\/h1>/);
    expect(d.html_code).toContain('<a href="https://example.com/news"');
    expect(d.html_code).toContain('href="((unsubscribe_preferences))"');
  });

  it('keeps HTML as written when it has the viewport and the unsubscribe link, and completes it when not', async () => {
    const complete = await saveHtml(a);
    expect(complete.notices).toEqual([]);
    expect(await details(a, complete.id)).toMatchObject({ source: COMPLETE_HTML, html_code: COMPLETE_HTML, json_code: '' });

    const fragment = await saveHtml(a, 'Fragment', '  <p>Just a line</p>\n');
    expect(fragment.notices).toEqual([UNSUBSCRIBE_ADDED, VIEWPORT_ADDED]);
    const d = await details(a, fragment.id);
    // The source is kept byte for byte (no trimming); the HTML became a document.
    expect(d.source).toBe('  <p>Just a line</p>\n');
    expect(d.html_code).toMatch(/^<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n<meta name="viewport"/);
    expect(d.html_code).toContain('<p>Just a line</p>');
    expect(d.html_code).toContain('href="((unsubscribe_preferences))"');
  });

  it('answers VAL for missing fields, an unknown format, a long name and no JSON', async () => {
    expectVal(await api(app, a).form('/designs/save', {}), {
      template_name: ['The template name field is required.'],
      format: ['The format field is required.'],
      source: ['The source field is required.'],
    });
    expectVal(await api(app, a).form('/designs/save', { template_name: 'x'.repeat(256), format: 'mjml', source: 'x' }), {
      template_name: ['The template name must not be greater than 255 characters.'],
      format: ['The selected format is invalid.'],
    });
    expectVal(await api(app, a).form('/designs/save', { template_name: 'X', format: 'blocks', source: '{"version":1,' }), {
      source: ['The source must be a valid JSON string.'],
    });
    expectVal(await api(app, a).form('/designs/save', { template_name: 'X', format: 'blocks', source: '[1]' }), {
      source: ['The source must be a JSON object with version, settings and blocks.'],
    });
  });

  it('answers VAL naming the block for an unknown type, a bad field or a refused URL, and saves nothing', async () => {
    const before = await db('designs').where({ user_id: a.id }).count<{ count: string }[]>({ count: '*' });
    const doc = {
      version: 1,
      blocks: [
        { type: 'text', text: 'fine' },
        { type: 'button', text: 'Go', href: 'javascript:alert(1)' },
        { type: 'image', src: 'https://example.com/a.png' },
        { type: 'marquee', text: 'no' },
      ],
    };
    expectVal(await api(app, a).form('/designs/save', { template_name: 'X', format: 'blocks', source: JSON.stringify(doc) }), {
      'blocks.3.type': ['The selected blocks.3.type is invalid.'],
    });
    doc.blocks.pop();
    expectVal(await api(app, a).form('/designs/save', { template_name: 'X', format: 'blocks', source: JSON.stringify(doc) }), {
      'blocks.1.href': ['The blocks.1.href must be an http, https or mailto URL, or a ((placeholder)).'],
      'blocks.2.alt': ['The blocks.2.alt field is required.'],
    });
    const after = await db('designs').where({ user_id: a.id }).count<{ count: string }[]>({ count: '*' });
    expect(after).toEqual(before);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/designs/save', { template_name: 'X', format: 'html', source: COMPLETE_HTML }));
    expectAuthMissing(await api(app).get('/designs/details?id=1001'));
  });

  it('answers NF1 for a missing, unknown, malformed or another account’s id', async () => {
    const theirs = await saveHtml(b, 'Theirs');
    expectNF1(await api(app, a).get('/designs/details'));
    expectNF1(await api(app, a).get('/designs/details?id=999999'));
    expectNF1(await api(app, a).get('/designs/details?id=abc'));
    expectNF1(await api(app, a).get('/designs/details?id=1'));
    expectNF1(await api(app, a).get(`/designs/details?id=${theirs.id}`));
  });
});

describe('GET /designs/list', () => {
  it('lists the account’s live designs newest first, with paging', async () => {
    const account = await makeAccount(db);
    const first = await saveHtml(account, 'First');
    const second = await saveHtml(account, 'Second');
    const gone = await saveHtml(account, 'Gone');
    await saveHtml(b, 'Not mine');
    expectSuccess(await api(app, account).delete(`/designs/delete?id=${gone.id}`), 'Deleted Successfully');
    const res = await api(app, account).get('/designs/list');
    expectSuccess(res);
    const list = res.body.message.designs as unknown[];
    for (const d of list) expectShape(designListRecord, d);
    expect(list).toMatchObject([
      { id: second.id, template_name: 'Second', format: 'html' },
      { id: first.id, template_name: 'First', format: 'html' },
    ]);
    const page = await api(app, account).get('/designs/list?page=2&per_page=1');
    expectSuccess(page);
    expect(page.body.message).toMatchObject({ designs: [{ id: first.id }], pagination: { page: 2, per_page: 1, total: 2 } });
    expectVal(await api(app, account).get('/designs/list?per_page=0'), { per_page: ['The per page must be an integer between 1 and 1000.'] });
  });
});

describe('POST /designs/update', () => {
  it('changes the fields given and renders the design again', async () => {
    const saved = await save(a, { template_name: 'Draft', format: 'markdown', source: MARKDOWN });
    const renamed = await api(app, a).form('/designs/update', { id: saved.id, template_name: 'Final' });
    expectSuccess(renamed, { id: saved.id, format: 'markdown', notices: [UNSUBSCRIBE_ADDED] });
    expect(await details(a, saved.id)).toMatchObject({ template_name: 'Final', source: MARKDOWN });

    const edited = await api(app, a).form('/designs/update', { id: saved.id, source: 'Bye [now](((unsubscribe_preferences)))' });
    expectSuccess(edited, { id: saved.id, format: 'markdown', notices: [] });
    const d = await details(a, saved.id);
    expect(d).toMatchObject({ template_name: 'Final', source: 'Bye [now](((unsubscribe_preferences)))' });
    expect(d.html_code).toContain('href="((unsubscribe_preferences))"');
    expect(d.html_code).not.toContain('Hello');
  });

  it('converts blocks → html and markdown → html losslessly: the rendered HTML becomes the source', async () => {
    const blocks = await save(a, { template_name: 'Blocks', format: 'blocks', source: NEWSLETTER });
    const before = await details(a, blocks.id);
    expectSuccess(await api(app, a).form('/designs/update', { id: blocks.id, format: 'html' }), { id: blocks.id, format: 'html', notices: [] });
    expect(await details(a, blocks.id)).toMatchObject({ format: 'html', source: before.html_code, html_code: before.html_code, json_code: '' });

    const markdown = await save(a, { template_name: 'Markdown', format: 'markdown', source: MARKDOWN });
    const md = await details(a, markdown.id);
    expectSuccess(await api(app, a).form('/designs/update', { id: markdown.id, format: 'html' }));
    expect(await details(a, markdown.id)).toMatchObject({ format: 'html', source: md.html_code, html_code: md.html_code });
  });

  it('refuses every other change of format, and changes nothing', async () => {
    const html = await saveHtml(a);
    expectVal(await api(app, a).form('/designs/update', { id: html.id, format: 'blocks', source: NEWSLETTER }), {
      format: ['The format cannot change from html to blocks. Only a blocks or markdown design can change, to html (its rendered HTML becomes the source).'],
    });
    expectVal(await api(app, a).form('/designs/update', { id: html.id, format: 'markdown' }), {
      format: ['The format cannot change from html to markdown. Only a blocks or markdown design can change, to html (its rendered HTML becomes the source).'],
    });
    const blocks = await save(a, { template_name: 'Blocks', format: 'blocks', source: NEWSLETTER });
    expectVal(await api(app, a).form('/designs/update', { id: blocks.id, format: 'markdown', source: MARKDOWN }), {
      format: ['The format cannot change from blocks to markdown. Only a blocks or markdown design can change, to html (its rendered HTML becomes the source).'],
    });
    const markdown = await save(a, { template_name: 'Markdown', format: 'markdown', source: MARKDOWN });
    expectVal(await api(app, a).form('/designs/update', { id: markdown.id, format: 'blocks' }), {
      format: ['The format cannot change from markdown to blocks. Only a blocks or markdown design can change, to html (its rendered HTML becomes the source).'],
    });
    expect(await details(a, html.id)).toMatchObject({ format: 'html', source: COMPLETE_HTML });
    expect(await details(a, blocks.id)).toMatchObject({ format: 'blocks' });
  });

  it('answers VAL for a bad source or a missing id, NF1 for another account’s or an unknown id', async () => {
    const blocks = await save(a, { template_name: 'Blocks', format: 'blocks', source: NEWSLETTER });
    expectVal(await api(app, a).form('/designs/update', { id: blocks.id, source: '{"version":2,"blocks":[]}' }), {
      version: ['The selected version is invalid.'],
    });
    expectVal(await api(app, a).form('/designs/update', { template_name: 'X' }), { id: ['The id field is required.'] });
    const theirs = await saveHtml(b, 'Theirs');
    expectNF1(await api(app, a).form('/designs/update', { id: theirs.id, template_name: 'Mine now' }));
    expectNF1(await api(app, a).form('/designs/update', { id: 987654, template_name: 'X' }));
    expect(await details(b, theirs.id)).toMatchObject({ template_name: 'Theirs' });
  });
});

describe('POST /designs/preview', () => {
  it('renders an unsaved design with sample values, as the send renders it', async () => {
    const res = await api(app, a).form('/designs/preview', { format: 'markdown', source: MARKDOWN });
    expectSuccess(res);
    const p = expectShape(designPreviewResponse, res.body.message);
    expect(p.notices).toEqual([UNSUBSCRIBE_ADDED]);
    expect(p.html).toContain('Hello Jane</h1>');
    expect(p.html).toContain('Your Company');
    expect(p.html).not.toContain('((');
    expect(p.html).toContain(VIEWPORT);
    expect(p.text).toContain('Hello Jane');
    expect(p.text).toContain('Unsubscribe or manage your preferences');
  });

  it('takes template_html or template_json instead, and shows a custom field by its name', async () => {
    await db('custom_fields').insert({ user_id: a.id, field_name: 'plan', field_type: 'text' });
    const html = await api(app, a).form('/designs/preview', { template_html: '<p>Plan: ((plan)) for ((first_name))</p>' });
    expectSuccess(html);
    expect(html.body.message.html).toContain('Plan: [plan] for Jane');
    expect(html.body.message.notices).toEqual([UNSUBSCRIBE_ADDED, VIEWPORT_ADDED]);
    const json = await api(app, a).json('/designs/preview', { template_json: NEWSLETTER });
    expectSuccess(json);
    expect(json.body.message.html).toContain('Hi Jane, here is a short round-up');
    expect(json.body.message.notices).toEqual([]);
  });

  it('answers VAL when the design is missing, given twice, or invalid', async () => {
    expectVal(await api(app, a).form('/designs/preview', {}), {
      source: ['The source field is required when none of template html / template json are present.'],
    });
    expectVal(await api(app, a).form('/designs/preview', { source: MARKDOWN }), { format: ['The format field is required when source is present.'] });
    expectVal(await api(app, a).form('/designs/preview', { template_html: '<p>x</p>', template_json: NEWSLETTER }), {
      template_html: ['The template html field is prohibited when template json is present.'],
    });
    expectVal(await api(app, a).form('/designs/preview', { template_json: '{"version":1,"blocks":[{"type":"nope"}]}' }), {
      'blocks.0.type': ['The selected blocks.0.type is invalid.'],
    });
    expectVal(await api(app, a).form('/designs/preview', { template_json: 'not json' }), {
      template_json: ['The template json must be a valid JSON string.'],
    });
    expectAuthMissing(await api(app).form('/designs/preview', { template_html: '<p>x</p>' }));
  });
});

describe('saved designs as templates', () => {
  it('are listed by GET /get-design/template after the built-ins, the account’s own and live only', async () => {
    const account = await makeAccount(db);
    const mine = await save(account, { template_name: 'Mine', format: 'blocks', source: NEWSLETTER });
    const gone = await saveHtml(account, 'Gone');
    const theirs = await saveHtml(b, 'Theirs');
    await api(app, account).delete(`/designs/delete?id=${gone.id}`);
    const list = await templatesOf(account);
    for (const t of list) expectShape(templateRecord, t);
    const ids = list.map((t) => t.id);
    expect(ids.filter((id) => id >= 1001)).toEqual([mine.id]);
    expect(ids).not.toContain(theirs.id);
    expect(ids.indexOf(mine.id)).toBe(ids.length - 1);
    const d = await details(account, mine.id);
    expect(list.at(-1)).toEqual({
      id: mine.id,
      template_name: 'Mine',
      preview_image: 'template-saved.png',
      json_code: d.json_code,
      html_code: d.html_code,
      is_blank: 0,
      created_at: d.created_at,
      updated_at: d.updated_at,
    });
    // The one thumbnail of saved designs is served like the built-ins' (PUBLIC_URL/images/<preview_image>).
    const image = await request(app).get('/images/template-saved.png');
    expect({ status: image.status, type: image.headers['content-type'] }).toEqual({ status: 200, type: 'image/png' });
  });

  it('are chosen by template_id for a send, whose message is the design’s HTML; another account’s is invalid', async () => {
    const design = await save(a, { template_name: 'For a send', format: 'blocks', source: NEWSLETTER });
    const { html_code } = await details(a, design.id);
    const send = await createSend(app, db, a, A, { template_id: design.id, template_html: undefined });
    const parts = await designParts(db, a.id, { kind: 'single_send', singleSendId: send.id });
    expect(parts?.html).toBe(html_code);

    const theirs = await saveHtml(b, 'Theirs');
    const res = await createSendOfA({ template_id: theirs.id });
    expectVal(res, { template_id: ['The selected template id is invalid.'] });
  });

  it('are chosen by template_id for an automation email (their own account only)', async () => {
    const design = await saveHtml(a, 'For an automation');
    const utr = await automationOfA();
    expectSuccess(await addEmailOfA(utr, design.id), 'Schedule Added');
    const theirs = await saveHtml(b, 'Theirs');
    expectVal(await addEmailOfA(utr, theirs.id), { template_id: ['The selected template id is invalid.'] });

    const automation = await db('automations').where({ utr, user_id: a.id }).first('id');
    const schedule = await db('automation_schedules').where({ automation_id: automation.id, user_id: a.id }).first('id');
    const parts = await designParts(db, a.id, { kind: 'automation_email', automationId: automation.id, scheduleId: schedule.id });
    expect(parts?.html).toBe(COMPLETE_HTML);
  });

  it('are chosen by template_id for an A/B design variation (their own account only)', async () => {
    const design = await saveHtml(a, 'Variation B', COMPLETE_HTML.replace('Hi', 'Hey'));
    const send = await createSend(app, db, a, A, { ab_test_type: 'design', 'ab_variations[0][template_id]': design.id });
    const variation = await db('single_send_variations').where({ single_send_id: send.id, user_id: a.id, idx: 1 }).first('id');
    const parts = await designParts(db, a.id, { kind: 'ab_variation', singleSendId: send.id, variationId: variation.id });
    expect(parts?.html).toContain('Hey ((first_name))');

    const theirs = await saveHtml(b, 'Theirs');
    const res = await createSendOfA({ template_id: 1, template_html: COMPLETE_HTML, ab_test_type: 'design', 'ab_variations[0][template_id]': theirs.id });
    expectVal(res, { 'ab_variations.0.template_id': ['The selected ab variations.0.template id is invalid.'] });
  });
});

describe('DELETE /designs/delete', () => {
  it('soft-deletes: gone from details, refused for new use, still resolving for what names it', async () => {
    const design = await save(a, { template_name: 'Old', format: 'markdown', source: MARKDOWN });
    const { html_code } = await details(a, design.id);
    const send = await createSend(app, db, a, A, { template_id: design.id, template_html: undefined });
    // The send completed (a send that is ready or running keeps its design: see below).
    await db('single_sends').where({ id: send.id, user_id: a.id }).update({ status: SendStatus.Completed });
    expectSuccess(await api(app, a).delete(`/designs/delete?id=${design.id}`), 'Deleted Successfully');
    expectNF1(await api(app, a).get(`/designs/details?id=${design.id}`));
    expectNF1(await api(app, a).delete(`/designs/delete?id=${design.id}`));
    expect((await designParts(db, a.id, { kind: 'single_send', singleSendId: send.id }))?.html).toBe(html_code);
    const again = await createSendOfA({ template_id: design.id });
    expectVal(again, { template_id: ['The selected template id is invalid.'] });
  });

  it('cannot be changed while a send is sending with it (a scheduled send takes the change)', async () => {
    const design = await saveHtml(a, 'Sending');
    const send = await createSend(app, db, a, A, { template_id: design.id, template_html: undefined });
    await db('single_sends').where({ id: send.id, user_id: a.id }).update({ status: SendStatus.Ready });
    expectSuccess(await api(app, a).form('/designs/update', { id: design.id, template_name: 'Changed while scheduled' }));
    await db('single_sends').where({ id: send.id, user_id: a.id }).update({ status: SendStatus.Running });
    const before = await details(a, design.id);
    const res = await api(app, a).form('/designs/update', { id: design.id, template_name: 'Changed while sending' });
    expect({ status: res.status, body: res.body }).toEqual({ status: 422, body: { status: 'failed', errors: SENDING_WITH_IT } });
    expect(await details(a, design.id)).toEqual(before);
    await db('single_sends').where({ id: send.id, user_id: a.id }).update({ status: SendStatus.Completed });
    expectSuccess(await api(app, a).form('/designs/update', { id: design.id, template_name: 'Changed after' }));
  });

  it('is refused while a scheduled or running send uses the design, itself or by an A/B variation', async () => {
    for (const status of [SendStatus.Ready, SendStatus.Running]) {
      const design = await saveHtml(a, `In use ${status}`);
      const send = await createSend(app, db, a, A, { template_id: design.id, template_html: undefined });
      await db('single_sends').where({ id: send.id, user_id: a.id }).update({ status });
      const refused = await api(app, a).delete(`/designs/delete?id=${design.id}`);
      expect({ status: refused.status, body: refused.body }).toEqual({ status: 422, body: { status: 'failed', errors: IN_USE_BY_SEND } });
      await db('single_sends').where({ id: send.id, user_id: a.id }).update({ status: SendStatus.Draft });
      // A draft does not hold its design.
      expectSuccess(await api(app, a).delete(`/designs/delete?id=${design.id}`));
    }
    const variation = await saveHtml(a, 'Variation');
    await createSend(app, db, a, A, { ab_test_type: 'design', 'ab_variations[0][template_id]': variation.id });
    const res = await api(app, a).delete(`/designs/delete?id=${variation.id}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 422, body: { status: 'failed', errors: IN_USE_BY_SEND } });
    await details(a, variation.id);
  });

  it('is refused while an email of a live automation uses the design, not a paused one', async () => {
    const design = await saveHtml(a, 'Automation');
    const utr = await automationOfA();
    expectSuccess(await addEmailOfA(utr, design.id));
    await db('automations').where({ utr, user_id: a.id }).update({ status: 1 });
    const res = await api(app, a).delete(`/designs/delete?id=${design.id}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 422, body: { status: 'failed', errors: IN_USE_BY_AUTOMATION } });
    await db('automations').where({ utr, user_id: a.id }).update({ status: 2 });
    expectSuccess(await api(app, a).delete(`/designs/delete?id=${design.id}`));
    // The email's web view (design_url) still shows the deleted design's HTML.
    const automation = await db('automations').where({ utr, user_id: a.id }).first('id');
    const email = await db('automation_schedules').where({ automation_id: automation.id, user_id: a.id }).first('utr');
    const view = await request(app).get(`/design/${email.utr}`);
    expect({ status: view.status, html: view.text }).toEqual({ status: 200, html: COMPLETE_HTML });
  });

  it('answers NF1 for another account’s id, and leaves it', async () => {
    const theirs = await saveHtml(b, 'Theirs');
    expectNF1(await api(app, a).delete(`/designs/delete?id=${theirs.id}`));
    expectNF1(await api(app, a).delete('/designs/delete'));
    await details(b, theirs.id);
    expectAuthMissing(await api(app).delete(`/designs/delete?id=${theirs.id}`));
  });
});
