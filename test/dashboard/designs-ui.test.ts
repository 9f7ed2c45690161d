import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Frame, Page } from 'playwright-core';
import request from 'supertest';
import { IN_USE_BY_SEND } from '../../src/resources/designs/designs.service';
import { SendStatus } from '../../src/states';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium, loopbackOnly } from '../helpers/browser';
import { makeSendRow } from '../helpers/fixtures';
import { serve, type Served } from './lib/serve';
import { signIn, type Browserish } from './lib/session';
import { measureWidth } from './lib/width';

/**
 * The design pages of the dashboard (issue 34): the library, the three editors and their preview.
 * Each form runs the API's own route (POST /designs/save, /designs/update, DELETE /designs/delete,
 * POST /designs/preview): a refused form shows the API's messages beside its fields and keeps
 * what was typed. Then in a browser: a design made in the block editor and one in Markdown
 * (CodeMirror), their live preview at desktop and phone width, the unsubscribe notice, axe-core,
 * no console error (a CSP violation is one) and a 375 px window.
 */
const { app, db } = setupApp();
const ROOT = path.resolve(__dirname, '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const build = require('../../scripts/build.js') as { bundleClient(root: string): number; compile(root: string): number; staleReason(root: string): string | null };
const BUNDLES = ['block-editor.js', 'code-editor.js'].map((f) => path.join(ROOT, 'assets', 'dashboard', 'dist', f));
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let a: TestAccount;
let b: TestAccount;
let sa: Browserish;
let sb: Browserish;

/** The client bundles as npm run build makes them, bundled again when client/ is newer (a developer's edit). */
function freshBundles(): void {
  const newest = (dir: string): number =>
    Math.max(0, ...fs.readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(path.join(dir, e.name)) : fs.statSync(path.join(dir, e.name)).mtimeMs)));
  const built = Math.min(...BUNDLES.map((f) => (fs.existsSync(f) ? fs.statSync(f).mtimeMs : 0)));
  if (built < newest(path.join(ROOT, 'client'))) expect(build.bundleClient(ROOT)).toBe(0);
}

beforeAll(async () => {
  freshBundles();
  [a, b] = await Promise.all([makeAccount(db, 'Designer'), makeAccount(db, 'Stranger')]);
  [sa, sb] = await Promise.all([signIn(app, a), signIn(app, b)]);
});

const page = (url: string, s: Browserish = sa) => request(app).get(url).set('Cookie', s.cookie);
/** A form as the browser posts it; `csrf: false` leaves the session's token out. */
function submit(url: string, fields: Record<string, string>, opts: { s?: Browserish; csrf?: boolean } = {}) {
  const s = opts.s ?? sa;
  const token = opts.csrf === false ? {} : { _csrf: s.csrf };
  return request(app).post(url).set('Cookie', s.cookie).type('form').send({ ...token, ...fields });
}

const unescape = (html: string) => html.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');

/** The texts of a list `<ul … id="<id>">` of a page (a field's messages, the notices). */
function listItems(html: string, id: string): string[] {
  const list = new RegExp(`<ul class="field-errors" id="${id}">(.*?)</ul>`, 's').exec(html);
  return list ? [...list[1].matchAll(/<li>(.*?)<\/li>/gs)].map((m) => unescape(m[1])) : [];
}
const textareaValue = (html: string) => unescape(/<textarea[^>]*name="source"[^>]*>(.*?)<\/textarea>/s.exec(html)?.[1] ?? '');

async function saveByApi(account: TestAccount, fields: Record<string, string>): Promise<number> {
  const res = await api(app, account).json('/designs/save', fields);
  expect(res.status).toBe(200);
  return res.body.message.id;
}
async function countDesigns(account: TestAccount, name?: string): Promise<number> {
  const [{ count }] = await db('designs')
    .where({ user_id: account.id, ...(name ? { template_name: name } : {}) })
    .count<Array<{ count: string | number }>>({ count: '*' });
  return Number(count);
}
const details = (account: TestAccount, id: number) => api(app, account).get(`/designs/details?id=${id}`);

const DOC = (blocks: unknown[]) => JSON.stringify({ version: 1, settings: {}, blocks });
const FOOTER = { type: 'footer', lines: ['Acme'], unsubscribe: { text: 'Unsubscribe', href: '((unsubscribe_preferences))' } };

describe('the design pages and their actions', () => {
  it('the library lists the account’s saved designs (not another account’s) beside the built-ins, each with its actions', async () => {
    const mine = await saveByApi(a, { template_name: 'Mine <b>bold</b>', format: 'markdown', source: '# Mine' });
    const theirs = await saveByApi(b, { template_name: 'Theirs', format: 'markdown', source: '# Theirs' });
    const res = await page('/app/designs');
    expect(res.status).toBe(200);
    expect(res.text).toContain('<h1>Designs</h1>');
    expect(res.text).toContain('Mine &lt;b>bold&lt;/b>');
    expect(res.text).not.toContain('Theirs');
    for (const href of [`/app/designs/${mine}/edit`, `/app/designs/new?from=${mine}`, `/app/designs/${mine}/delete`]) expect(res.text).toContain(`href="${href}"`);
    expect(res.text).not.toContain(`/app/designs/${theirs}/`);
    for (const name of ['Newsletter', 'Welcome', 'Announcement', 'Promotion']) expect(res.text).toContain(`Start from it: ${name}`);
    for (const format of ['blocks', 'markdown', 'html']) expect(res.text).toContain(`href="/app/designs/new?format=${format}"`);
  });

  it('a new design’s page has the editor of its format, its script and a preview frame the page may show', async () => {
    for (const [format, script] of [
      ['blocks', 'dist/block-editor.js'],
      ['markdown', 'dist/code-editor.js'],
      ['html', 'dist/code-editor.js'],
    ]) {
      const res = await page(`/app/designs/new?format=${format}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-security-policy']).toMatch(/frame-src 'self'/);
      expect(res.headers['content-security-policy']).toMatch(/style-src 'self';/);
      expect(res.text).toContain(`<script type="module" src="/app/assets/${script}?v=`);
      expect(res.text).toContain(`<input type="hidden" name="format" value="${format}"/>`);
      expect(res.text).toContain(`<iframe name="design-preview" class="preview-frame" src="/app/designs/preview?format=${format}"`);
      if (format === 'blocks') expect(JSON.parse(textareaValue(res.text))).toEqual({ version: 1, settings: {}, blocks: [] });
      else expect(res.text).toContain(`data-language="${format}"`);
    }
    // Each bundle is there, and needs no eval (the CSP has no unsafe-eval).
    for (const bundle of BUNDLES) expect(fs.readFileSync(bundle, 'utf8')).not.toMatch(/\beval\(|new Function\(/);
    const asset = await request(app).get('/app/assets/dist/block-editor.js');
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toMatch(/javascript/);
  });

  it('saves a design through POST /designs/save and opens its page with what Herald added (the unsubscribe link)', async () => {
    const res = await submit('/app/designs/new', { template_name: 'Spring news', format: 'markdown', source: '# Spring\n\nHello ((first_name)).' });
    expect(res.status).toBe(303);
    const [, id] = /^\/app\/designs\/(\d+)\/edit\?done=saved&notice=unsubscribe$/.exec(res.headers.location) ?? [];
    expect(Number(id)).toBeGreaterThan(1000);
    const d = (await details(a, Number(id))).body.message.design;
    expect(d).toMatchObject({ template_name: 'Spring news', format: 'markdown', source: '# Spring\n\nHello ((first_name)).' });
    const edit = await page(res.headers.location);
    expect(edit.status).toBe(200);
    expect(edit.text).toContain('Design saved.');
    expect(edit.text).toContain('An unsubscribe link was added to the footer.');
    expect(textareaValue(edit.text)).toBe(d.source);
    // A notice is named by its key: text in the link shows nothing.
    const forged = await page(`/app/designs/${id}/edit?notice=Your+account+is+closed&done=Call+us`);
    expect(forged.text).not.toMatch(/account is closed|Call us|Design saved/);
  });

  it('a refused save shows the API’s messages beside the fields and keeps what was typed', async () => {
    const source = DOC([{ type: 'button', text: 'Go <now>', href: 'javascript:alert(1)' }, { type: 'marquee' }]);
    const before = await countDesigns(a);
    const res = await submit('/app/designs/new', { template_name: '', format: 'blocks', source });
    expect(res.status).toBe(422);
    const expected = (await api(app, a).json('/designs/save', { template_name: '', format: 'blocks', source })).body.errors;
    expect(expected).toEqual({ template_name: ['The template name field is required.'] });
    expect(listItems(res.text, 'field-template_name-errors')).toEqual(expected.template_name);
    expect(textareaValue(res.text)).toBe(source);
    expect(res.text).toContain('aria-invalid="true"');
    // The document's own faults: for the block editor (data-errors), and beside the JSON without script.
    const second = await submit('/app/designs/new', { template_name: 'Typed name', format: 'blocks', source });
    expect(second.status).toBe(422);
    const docErrors = (await api(app, a).json('/designs/save', { template_name: 'x', format: 'blocks', source })).body.errors as Record<string, string[]>;
    expect(Object.keys(docErrors)).toEqual(['blocks.1.type']);
    expect(listItems(second.text, 'field-source-errors')).toEqual(docErrors['blocks.1.type']);
    expect(second.text).toContain('value="Typed name"');
    expect(textareaValue(second.text)).toBe(source);
    expect(await countDesigns(a)).toBe(before);

    const hrefOnly = DOC([{ type: 'button', text: 'Go', href: 'javascript:alert(1)' }]);
    const refused = await submit('/app/designs/new', { template_name: 'Links', format: 'blocks', source: hrefOnly });
    expect(refused.status).toBe(422);
    const apiErrors = (await api(app, a).json('/designs/save', { template_name: 'Links', format: 'blocks', source: hrefOnly })).body.errors as Record<string, string[]>;
    expect(Object.keys(apiErrors)).toEqual(['blocks.0.href']);
    const data = JSON.parse(unescape(/id="block-editor" class="block-editor" data-errors="([^"]*)"/.exec(refused.text)?.[1] ?? '{}'));
    expect(data).toEqual(apiErrors);
    expect(listItems(refused.text, 'field-source-errors')).toEqual(apiErrors['blocks.0.href']);
    expect(refused.text).toContain(`<a href="#field-blocks-0-href">${apiErrors['blocks.0.href'][0]}</a>`);
  });

  it('updates a design (POST /designs/update) and converts blocks to HTML, keeping what it sends', async () => {
    const id = await saveByApi(a, { template_name: 'Blocks', format: 'blocks', source: DOC([{ type: 'heading', text: 'One' }, FOOTER]) });
    const edited = DOC([{ type: 'heading', text: 'Two' }, FOOTER]);
    const res = await submit(`/app/designs/${id}/edit`, { template_name: 'Blocks 2', format: 'blocks', source: edited });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`/app/designs/${id}/edit?done=saved`);
    const saved = (await details(a, id)).body.message.design;
    expect(saved).toMatchObject({ template_name: 'Blocks 2', format: 'blocks' });
    expect(JSON.parse(saved.source).blocks[0].text).toBe('Two');

    const page1 = await page(`/app/designs/${id}/edit`);
    expect(page1.text).toContain(`formaction="/app/designs/${id}/convert"`);
    const converted = await submit(`/app/designs/${id}/convert`, { template_name: 'Blocks 3', format: 'blocks', source: DOC([{ type: 'heading', text: 'Three' }, FOOTER]) });
    expect(converted.status).toBe(303);
    expect(converted.headers.location).toBe(`/app/designs/${id}/edit?done=converted`);
    const html = (await details(a, id)).body.message.design;
    expect(html).toMatchObject({ template_name: 'Blocks 3', format: 'html' });
    expect(html.source).toBe(html.html_code);
    expect(html.source).toContain('Three');
    const after = await page(converted.headers.location);
    expect(after.text).toContain('Design converted to HTML');
    expect(after.text).toContain('data-language="html"');
    expect(after.text).not.toContain('/convert');

    // A refused update: the typed source stays, the API's words beside the field.
    const bad = await submit(`/app/designs/${id}/edit`, { template_name: 'x'.repeat(256), format: 'html', source: '<p>typed</p>' });
    expect(bad.status).toBe(422);
    const words = (await api(app, a).json(`/designs/update?id=${id}`, { template_name: 'x'.repeat(256) })).body.errors.template_name;
    expect(listItems(bad.text, 'field-template_name-errors')).toEqual(words);
    expect(textareaValue(bad.text)).toBe('<p>typed</p>');
  });

  it('duplicates a design as a new one, and starts one from a built-in', async () => {
    const id = await saveByApi(a, { template_name: 'Original', format: 'markdown', source: '# Original' });
    const copy = await page(`/app/designs/new?from=${id}`);
    expect(copy.status).toBe(200);
    expect(copy.text).toContain('value="Copy of Original"');
    expect(textareaValue(copy.text)).toBe('# Original');
    expect(copy.text).toContain(`action="/app/designs/new"`);
    const builtIn = await page('/app/designs/new?template=2');
    expect(builtIn.status).toBe(200);
    expect(JSON.parse(textareaValue(builtIn.text)).blocks.length).toBeGreaterThan(3);
    expect((await page('/app/designs/new?template=999')).status).toBe(404);
  });

  it('previews in a sandboxed frame what the API’s preview renders: a saved design, a starting point, what is typed', async () => {
    const source = '# Hello ((first_name))\n\n[Shop](https://example.com/shop)';
    const id = await saveByApi(a, { template_name: 'Preview me', format: 'markdown', source });
    const viaApi = (await api(app, a).json('/designs/preview', { format: 'markdown', source })).body.message.html;
    const saved = await page(`/app/designs/${id}/preview`);
    expect(saved.status).toBe(200);
    expect(saved.headers['content-security-policy']).toMatch(/^sandbox; /);
    expect(saved.headers['content-security-policy']).toMatch(/frame-ancestors 'self'/);
    expect(saved.text).toBe(viaApi);
    expect(saved.text).toContain('Hello Jane');

    const typed = await submit('/app/designs/preview', { format: 'markdown', source: '# Typed ((first_name))', template_name: '' });
    expect(typed.status).toBe(200);
    expect(typed.headers['content-security-policy']).toMatch(/^sandbox; /);
    expect(typed.text).toBe((await api(app, a).json('/designs/preview', { format: 'markdown', source: '# Typed ((first_name))' })).body.message.html);

    const wrong = await submit('/app/designs/preview', { format: 'blocks', source: '{"version":2}' });
    expect(wrong.status).toBe(200);
    const words = (await api(app, a).json('/designs/preview', { format: 'blocks', source: '{"version":2}' })).body.errors;
    for (const line of Object.values(words as Record<string, string[]>).flat()) expect(unescape(wrong.text)).toContain(line);

    const start = await page('/app/designs/preview?template=3');
    expect(start.status).toBe(200);
    expect(start.headers['content-security-policy']).toMatch(/^sandbox; /);
    expect(start.text).toContain('<meta name="viewport"');
  });

  it('deletes a design after its confirmation page; a design a scheduled send uses is refused with the API’s words', async () => {
    const id = await saveByApi(a, { template_name: 'Short-lived', format: 'markdown', source: '# Bye' });
    const confirm = await page(`/app/designs/${id}/delete`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Short-lived');
    expect(confirm.text).toContain(`action="/app/designs/${id}/delete"`);
    const res = await submit(`/app/designs/${id}/delete`, {});
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/app/designs?done=deleted');
    expect((await details(a, id)).status).toBe(404);
    expect((await page('/app/designs?done=deleted')).text).toContain('Design deleted.');

    const used = await saveByApi(a, { template_name: 'In use', format: 'markdown', source: '# Used' });
    const send = await makeSendRow(db, a, { name: 'Scheduled', status: SendStatus.Ready });
    await db('single_sends').where({ user_id: a.id, id: send.id }).update({ template_id: used });
    const refused = await submit(`/app/designs/${used}/delete`, {});
    expect(refused.status).toBe(422);
    expect(refused.text).toContain(IN_USE_BY_SEND);
    expect((await api(app, a).delete(`/designs/delete?id=${used}`)).body.errors).toEqual(IN_USE_BY_SEND);
    expect((await details(a, used)).status).toBe(200);
  });

  it('every action needs the page’s CSRF token', async () => {
    const id = await saveByApi(a, { template_name: 'Guarded', format: 'markdown', source: '# Guarded' });
    const fields = { template_name: 'Changed', format: 'markdown', source: '# Changed' };
    for (const url of ['/app/designs/new', '/app/designs/preview', `/app/designs/${id}/edit`, `/app/designs/${id}/convert`, `/app/designs/${id}/delete`]) {
      const res = await submit(url, fields, { csrf: false });
      expect({ url, status: res.status }).toEqual({ url, status: 403 });
      expect(res.text).toContain('security token');
    }
    const d = (await details(a, id)).body.message.design;
    expect(d).toMatchObject({ template_name: 'Guarded', format: 'markdown', source: '# Guarded' });
    expect(await countDesigns(a, 'Changed')).toBe(0);
  });

  it('another account’s design is a 404 page on every page and action, and stays as it was', async () => {
    const theirs = await saveByApi(b, { template_name: 'Not yours', format: 'markdown', source: '# Not yours' });
    for (const url of [`/app/designs/${theirs}/edit`, `/app/designs/${theirs}/preview`, `/app/designs/${theirs}/delete`, `/app/designs/new?from=${theirs}`, '/app/designs/abc/edit']) {
      const res = await page(url);
      expect({ url, status: res.status }).toEqual({ url, status: 404 });
      expect(res.text).not.toContain('Not yours');
    }
    for (const url of [`/app/designs/${theirs}/edit`, `/app/designs/${theirs}/convert`, `/app/designs/${theirs}/delete`]) {
      const res = await submit(url, { template_name: 'Taken', format: 'markdown', source: '# Taken' });
      expect({ url, status: res.status }).toEqual({ url, status: 404 });
    }
    expect((await details(b, theirs)).body.message.design).toMatchObject({ template_name: 'Not yours', source: '# Not yours' });
    // And b sees it.
    expect((await page(`/app/designs/${theirs}/edit`, sb)).status).toBe(200);
  });
});

describe('the client bundles (scripts/build.js)', () => {
  let root: string;
  const put = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };
  const bundle = () => path.join(root, 'assets', 'dashboard', 'dist', 'hello.js');

  beforeEach(() => {
    // A package of its own: one source file for tsc, one entry in client/ for esbuild.
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-client-'));
    const compilerOptions = { target: 'ES2022', module: 'commonjs', strict: true, types: [], rootDir: '.', outDir: 'dist', skipLibCheck: true };
    put('tsconfig.json', JSON.stringify({ compilerOptions, include: ['src'] }));
    put('tsconfig.build.json', JSON.stringify({ extends: './tsconfig.json' }));
    put('package-lock.json', '{}\n');
    put('src/cli.ts', 'export const cli = 1;\n');
    put('client/hello.tsx', "import { render } from 'preact';\nrender(<p class=\"hello\">Hello</p>, document.body);\n");
    put('client/lib/unused-alone.ts', 'export const x = 1;\n');
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'), 'dir');
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('bundles each entry of client/ with what it imports into one ES module; client/ is part of the build stamp', () => {
    expect(build.compile(root)).toBe(0);
    const js = fs.readFileSync(bundle(), 'utf8');
    expect(js).toContain('Hello');
    expect(js).not.toMatch(/^import |require\(|\beval\(/m);
    // Only entries (files at the top of client/) become bundles.
    expect(fs.readdirSync(path.dirname(bundle()))).toEqual(['hello.js']);
    expect(build.staleReason(root)).toBeNull();

    put('client/hello.tsx', "import { render } from 'preact';\nrender(<p>Bonjour</p>, document.body);\n");
    expect(build.staleReason(root)).toMatch(/sources changed/);
    expect(build.compile(root)).toBe(0);
    expect(fs.readFileSync(bundle(), 'utf8')).toContain('Bonjour');
    fs.rmSync(bundle());
    expect(build.staleReason(root)).toMatch(/hello\.js is missing/);
  });

  it('a client file that does not bundle fails the build: no stamp, no half-written bundles', () => {
    expect(build.compile(root)).toBe(0);
    put('client/hello.tsx', "import { nothing } from './lib/no-such-file';\nnothing();\n");
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(build.compile(root)).toBe(1);
    } finally {
      stderr.mockRestore();
    }
    expect(fs.existsSync(path.dirname(bundle()))).toBe(false);
    expect(build.staleReason(root)).toMatch(/hello\.js is missing|no build stamp/);
  });
});

describeBrowser('the design editors in a browser', () => {
  let browser: Browser;
  let context: BrowserContext;
  let tab: Page;
  let served: Served;
  const problems: string[] = [];
  /** The test expects a form to be refused (its page answered 422). */
  let refusalExpected = false;

  async function open(width: number): Promise<void> {
    await context?.close();
    context = await browser.newContext({ viewport: { width, height: 900 } });
    const stopped = await loopbackOnly(context);
    tab = await context.newPage();
    tab.on('console', (m) => {
      // A preview's remote image or tracking pixel, stopped on its way out of loopback, is no fault of the page.
      if (/ERR_BLOCKED_BY_CLIENT/.test(m.text()) && stopped.includes(m.location().url)) return;
      // The document a refused form answers with.
      if (refusalExpected && /status of 422/.test(m.text())) return;
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    tab.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    tab.on('response', (r) => {
      if (r.status() >= 400 && !(refusalExpected && r.status() === 422 && r.request().resourceType() === 'document')) problems.push(`${r.status()} ${r.url()}`);
    });
    await tab.goto(`${served.base}/app`);
    await tab.fill('input[name="public_key"]', a.public_key);
    await tab.fill('input[name="secret_key"]', a.secret_key);
    await Promise.all([tab.waitForURL(`${served.base}/app`), tab.click('button:has-text("Sign in with the keys")')]);
  }

  async function axe(): Promise<string[]> {
    await tab.evaluate(AXE);
    // The preview frame is the email's own document (its author's), sandboxed: the page is checked.
    const result = (await tab.evaluate(`axe.run(document, { iframes: false, resultTypes: ['violations'] })`)) as {
      violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
    };
    return result.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  /** The preview frame shown (the script swaps in a new one per update). */
  async function previewFrame(): Promise<Frame> {
    const handle = await tab.locator('[data-preview-box] iframe:not([hidden])').last().elementHandle();
    const frame = await handle?.contentFrame();
    if (!frame) throw new Error('no preview frame');
    return frame;
  }

  /** Waits until focus is on the element `id`: the editor moves focus in an effect, after the click or key that asked. */
  async function focusedOn(id: string): Promise<void> {
    await tab.waitForFunction((want) => document.activeElement?.id === want, id, { timeout: 5_000 }).catch(() => undefined);
    expect(await tab.evaluate(() => document.activeElement?.id)).toBe(id);
  }

  /** Waits until the preview shown holds `text` (the script updates it a moment after a change). */
  async function previewShows(text: string): Promise<void> {
    let seen = '';
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; await tab.waitForTimeout(100)) {
      seen = await previewFrame()
        .then((f) => f.locator('body').innerText())
        .catch((e: Error) => `(${e.message})`);
      if (seen.includes(text)) return;
    }
    expect(seen).toContain(text);
  }

  beforeAll(async () => {
    served = await serve(app);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await served?.close();
  });

  afterEach(() => {
    refusalExpected = false;
    expect(problems.splice(0)).toEqual([]);
  });

  it('makes a design in the block editor by keyboard and buttons: heading, text, button, image; saves, reopens and sees them', async () => {
    await open(1400);
    await tab.goto(`${served.base}/app/designs/new?format=blocks`);
    await tab.locator('#block-editor .block-editor-ui').waitFor();
    // The JSON textarea is the form's field, hidden behind the editor.
    expect(await tab.locator('textarea[name="source"]').isHidden()).toBe(true);
    await tab.fill('#field-template_name', 'Block news');

    const add = async (type: string) => {
      await tab.selectOption('#field-blocks-type', type);
      await tab.click('#field-blocks-add');
    };
    await add('heading');
    // Focus is in the new block's first field.
    await focusedOn('field-blocks-0-text');
    await tab.keyboard.press('Control+A');
    await tab.keyboard.type('Hello ((first_name))');
    await add('text');
    await tab.keyboard.type('Our spring collection is here.');
    await add('button');
    await tab.fill('#field-blocks-2-text', 'Shop now');
    await tab.fill('#field-blocks-2-href', 'https://example.com/shop');
    await add('image');
    await tab.fill('#field-blocks-3-src', 'https://example.com/spring.png');
    await tab.fill('#field-blocks-3-alt', 'Spring flowers');
    await previewShows('Hello Jane');
    await previewShows('Our spring collection is here.');

    // Reorder by keyboard: the image moves up above the button; focus stays with it.
    await tab.focus('#field-blocks-3-up');
    await tab.keyboard.press('Enter');
    await focusedOn('field-blocks-2-up');
    expect(await tab.locator('[role="status"]').last().innerText()).toContain('moved to position 3');
    const doc = JSON.parse(await tab.locator('textarea[name="source"]').inputValue());
    expect(doc.blocks.map((x: { type: string }) => x.type)).toEqual(['heading', 'text', 'image', 'button']);

    expect(await axe()).toEqual([]);
    await Promise.all([tab.waitForURL(/\/app\/designs\/\d+\/edit\?done=saved/), tab.click('button:has-text("Save design")')]);
    expect(await tab.locator('[data-notices]').innerText()).toContain('An unsubscribe link was added to the footer.');
    const id = Number(/designs\/(\d+)\/edit/.exec(tab.url())?.[1]);
    const saved = JSON.parse((await details(a, id)).body.message.design.source);
    expect(saved.blocks.map((x: { type: string }) => x.type)).toEqual(['heading', 'text', 'image', 'button', 'footer']);
    expect(saved.blocks[2]).toEqual({ type: 'image', src: 'https://example.com/spring.png', alt: 'Spring flowers' });

    // Reopened: the blocks are listed, and a block opens to its fields.
    await tab.goto(`${served.base}/app/designs/${id}/edit`);
    await tab.locator('#block-editor li.block').first().waitFor();
    expect(await tab.locator('#block-editor li.block').evaluateAll((els) => els.map((e) => e.getAttribute('data-block-type')))).toEqual(['heading', 'text', 'image', 'button', 'footer']);
    await tab.click('#field-blocks-3-edit');
    expect(await tab.inputValue('#field-blocks-3-href')).toBe('https://example.com/shop');
    await previewShows('Shop now');
    expect(await axe()).toEqual([]);

    // Desktop and phone width.
    expect(await tab.locator('[data-preview-box] iframe:not([hidden])').last().evaluate((f) => f.getBoundingClientRect().width)).toBeGreaterThan(600);
    await tab.check('#preview-phone');
    expect(await tab.locator('[data-preview-box] iframe:not([hidden])').last().evaluate((f) => f.getBoundingClientRect().width)).toBe(375);
  });

  it('shows a refused block beside its field in the block editor', async () => {
    await open(1400);
    await tab.goto(`${served.base}/app/designs/new?format=blocks`);
    await tab.locator('#block-editor .block-editor-ui').waitFor();
    await tab.fill('#field-template_name', 'Broken link');
    await tab.selectOption('#field-blocks-type', 'button');
    await tab.click('#field-blocks-add');
    await tab.fill('#field-blocks-0-href', 'ftp://example.com');
    refusalExpected = true;
    await tab.click('button:has-text("Save design")');
    await tab.locator('.error-summary').waitFor();
    const words = (await api(app, a).json('/designs/save', { template_name: 'x', format: 'blocks', source: DOC([{ type: 'button', text: 'Read more', href: 'ftp://example.com' }]) })).body.errors['blocks.0.href'];
    expect(await tab.locator('#field-blocks-0-href-errors').innerText()).toBe(words.join('\n'));
    expect(await tab.inputValue('#field-blocks-0-href')).toBe('ftp://example.com');
    expect(await tab.getAttribute('#field-blocks-0-href', 'aria-invalid')).toBe('true');
    // The summary's link leads to the field.
    await tab.click(`.error-summary a[href="#field-blocks-0-href"]`);
    await focusedOn('field-blocks-0-href');
    expect(await axe()).toEqual([]);
  });

  it('makes a design in Markdown with CodeMirror (styled under the CSP), previewed live, at 375 px too', async () => {
    await open(375);
    await tab.goto(`${served.base}/app/designs/new?format=markdown`);
    const editor = tab.locator('.cm-content');
    await editor.waitFor();
    // CodeMirror's styles come from an adopted style sheet of its shadow root: no <style> the CSP would refuse.
    expect(await tab.evaluate(() => document.querySelector('.code-editor')?.shadowRoot?.adoptedStyleSheets.length)).toBeGreaterThan(0);
    expect(await tab.evaluate(() => document.querySelectorAll('style').length)).toBe(0);
    await tab.fill('#field-template_name', 'Markdown news');
    await editor.click();
    await tab.keyboard.press('Control+A');
    await tab.keyboard.type('# Spring at ((sender_name))\n\nDear ((first_name)), our **new range** is here.\n');
    await previewShows('Dear Jane, our new range is here.');
    expect(await tab.locator('textarea[name="source"]').inputValue()).toContain('Dear ((first_name))');
    const width = await measureWidth(tab);
    expect({ scroll: width.scroll, outside: width.outside }).toEqual({ scroll: width.view, outside: [] });
    expect(await axe()).toEqual([]);
    await Promise.all([tab.waitForURL(/\/app\/designs\/\d+\/edit\?done=saved/), tab.click('button:has-text("Save design")')]);
    expect(await tab.locator('[data-notices]').innerText()).toContain('An unsubscribe link was added to the footer.');
    const id = Number(/designs\/(\d+)\/edit/.exec(tab.url())?.[1]);
    expect((await details(a, id)).body.message.design).toMatchObject({ format: 'markdown', template_name: 'Markdown news' });
    await tab.locator('.cm-content').waitFor();
    expect(await tab.locator('.cm-content').innerText()).toContain('Dear ((first_name)), our **new range** is here.');
    await previewShows('Dear Jane');
    const again = await measureWidth(tab);
    expect({ scroll: again.scroll, outside: again.outside }).toEqual({ scroll: again.view, outside: [] });
  });

  // The editors' pages are checked here rather than in lib/pages.ts's list (browser.test.ts visits each page of that list
  // four times, within one test's time limit): axe in light and dark, and the 375 px width.
  it('the library, the confirmation and each editor pass axe-core (light and dark) and fit 375 px', async () => {
    const id = await saveByApi(a, { template_name: 'Narrow', format: 'blocks', source: DOC([{ type: 'heading', text: 'Narrow' }, { type: 'columns', columns: [{ title: 'A', blocks: [{ type: 'text', text: 'x' }] }, { title: 'B' }] }, FOOTER]) });
    await open(375);
    for (const scheme of ['light', 'dark'] as const) {
      await tab.emulateMedia({ colorScheme: scheme });
      for (const url of ['/app/designs', `/app/designs/${id}/delete`, `/app/designs/${id}/edit`, '/app/designs/new?format=blocks', '/app/designs/new?format=markdown', '/app/designs/new?format=html']) {
        await tab.goto(`${served.base}${url}`);
        await tab.waitForLoadState('load');
        if (url.endsWith('/edit')) {
          await tab.locator('#block-editor li.block').first().waitFor();
          await tab.click('#field-blocks-1-edit');
          await tab.click('summary:has-text("Document settings")');
        }
        if (/markdown|html/.test(url)) await tab.locator('.cm-content').waitFor();
        const width = await measureWidth(tab);
        expect({ url, scroll: width.scroll, outside: width.outside }).toEqual({ url, scroll: width.view, outside: [] });
        expect({ url, scheme, axe: await axe() }).toEqual({ url, scheme, axe: [] });
      }
    }
  });
});
