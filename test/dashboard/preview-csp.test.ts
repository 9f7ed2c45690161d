import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express from 'express';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ASSETS_DIR } from '../../src/paths';
import { emailPreviewCsp, inlineStyleSources, sendEmailPreview } from '../../src/dashboard/preview-frame';
import { renderDesign } from '../../src/render/design-formats';
import { describeBrowser, launchChromium, loopbackOnly } from '../helpers/browser';

/**
 * The email preview's policy (src/dashboard/preview-frame.ts) allows an email's own inline
 * styles by their hashes, never `'unsafe-inline'`: checked in Chromium, which must apply every
 * `<style>` and `style="…"` of the email (computed styles) and report no violation, while the
 * frame stays sandboxed (no script).
 */

/** An email with the shapes inline style takes: head and body `<style>`, entities, CR LF, repeats. */
const HAND_MADE = [
  '<!DOCTYPE html><html><head><meta charset="utf-8">',
  '<style>\r\n  .lead { color: rgb(1, 2, 3); }\r\n  @media (max-width: 600px) { .lead { font-size: 20px; } }\r\n  a > b { color: red }\r\n</style>',
  '</head><body>',
  '<p id="lead" class="lead">Lead</p>',
  '<p id="quoted" style="font-family: &quot;Courier New&quot;, monospace;&#10;color: rgb(4, 5, 6)">Quoted</p>',
  '<p id="one" style="color: rgb(7, 8, 9)">One</p><p id="two" style="color: rgb(7, 8, 9)">Two</p>',
  '<div><style>#late { color: rgb(10, 11, 12) }</style><p id="late">Late</p></div>',
  "<p id='crlf' style='margin-top:\r\n 13px'>CR LF</p>",
  '<script>document.title = "script ran"</script>',
  '</body></html>',
].join('\n');

const STATIC_HTML = {
  announcement: fs.readFileSync(path.join(ASSETS_DIR, 'templates', 'announcement.html'), 'utf8'),
  newsletter: fs.readFileSync(path.join(ASSETS_DIR, 'templates', 'newsletter.html'), 'utf8'),
  blocks: renderDesign('blocks', fs.readFileSync(path.join(ASSETS_DIR, 'templates', 'promotion.json'), 'utf8')).html,
  markdown: renderDesign('markdown', '# Hello\n\nSome **bold** text, a [link](https://example.com), `code`.\n\n> quote\n\n```\nblock\n```\n').html,
};

describe('the preview policy (no browser)', () => {
  it('names each distinct inline style by hash, with unsafe-hashes, and never unsafe-inline', () => {
    const csp = emailPreviewCsp(HAND_MADE);
    expect(csp).toMatch(/^sandbox; default-src 'none'; style-src 'unsafe-hashes' 'sha256-/);
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toMatch(/script-src/);
    // Two <style> texts and three distinct attribute values (the repeated one once).
    expect(inlineStyleSources(HAND_MADE)).toHaveLength(5);
  });

  it('an email without inline style gets style-src none', () => {
    expect(emailPreviewCsp('<p>plain</p>')).toContain("style-src 'none'");
  });
});

describeBrowser('email previews in Chromium', () => {
  let browser: Browser;
  let context: BrowserContext;
  /** The same pages with the CSP bypassed: what the email looks like with every style applied. */
  let bypass: BrowserContext;
  let server: Server;
  let base: string;
  /** What each path serves, and the HTML whose hashes its policy carries (a control serves a mismatch). */
  const served = new Map<string, { html: string; policyOf: string }>();

  beforeAll(async () => {
    const app = express();
    app.get('/preview/:name', (req, res) => {
      const entry = served.get(req.params.name);
      if (!entry) {
        res.status(404).end();
        return;
      }
      sendEmailPreview(res, entry.html);
    });
    app.get('/control/:name', (req, res) => {
      const entry = served.get(req.params.name)!;
      res.set({ 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': emailPreviewCsp(entry.policyOf) }).send(entry.html);
    });
    app.get('/frame/:name', (req, res) => {
      res.set({ 'Content-Type': 'text/html; charset=utf-8' }).send(`<!doctype html><iframe id="f" src="/preview/${encodeURIComponent(req.params.name)}" width="700" height="900"></iframe>`);
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    context = await browser.newContext();
    await loopbackOnly(context);
    bypass = await browser.newContext({ bypassCSP: true });
    await loopbackOnly(bypass);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  /** Opens `url`; returns the page and the CSP messages Chromium logged while loading it. */
  async function open(url: string, ctx = context): Promise<{ page: Page; violations: string[] }> {
    const page = await ctx.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForTimeout(200);
    return { page, violations };
  }

  it('applies every inline style of a hand-made email, reports no violation, runs no script', async () => {
    served.set('hand', { html: HAND_MADE, policyOf: HAND_MADE });
    const { page, violations } = await open(`${base}/preview/hand`);
    try {
      const styles = await page.evaluate(() => {
        const cs = (id: string) => getComputedStyle(document.getElementById(id)!);
        return {
          lead: cs('lead').color,
          quoted: [cs('quoted').color, cs('quoted').fontFamily],
          one: cs('one').color,
          two: cs('two').color,
          late: cs('late').color,
          crlf: cs('crlf').marginTop,
          title: document.title,
        };
      });
      expect(styles).toEqual({
        lead: 'rgb(1, 2, 3)',
        quoted: ['rgb(4, 5, 6)', '"Courier New", monospace'],
        one: 'rgb(7, 8, 9)',
        two: 'rgb(7, 8, 9)',
        late: 'rgb(10, 11, 12)',
        crlf: '13px',
        title: '',
      });
      expect(violations.filter((v) => !/script/i.test(v))).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('control: a style the policy did not hash is refused (and reported), so the check above can fail', async () => {
    served.set('other', { html: HAND_MADE, policyOf: '<p style="color: rgb(7, 8, 9)">x</p>' });
    const { page, violations } = await open(`${base}/control/other`);
    try {
      expect(await page.evaluate(() => getComputedStyle(document.getElementById('lead')!).color)).not.toBe('rgb(1, 2, 3)');
      expect(await page.evaluate(() => getComputedStyle(document.getElementById('one')!).color)).toBe('rgb(7, 8, 9)');
      expect(violations.some((v) => /style/i.test(v))).toBe(true);
    } finally {
      await page.close();
    }
  });

  /** Each element's computed look (the properties an email's styles set), in document order. */
  async function looks(page: Page): Promise<string[]> {
    const frame = page.frame({ url: /\/preview\// });
    if (!frame) throw new Error('no preview frame');
    return frame.evaluate(() =>
      Array.from(document.querySelectorAll('body *')).map((el) => {
        const cs = getComputedStyle(el);
        return [el.tagName, cs.color, cs.backgroundColor, cs.fontSize, cs.fontFamily, cs.fontWeight, cs.paddingTop, cs.marginTop, cs.textAlign, cs.borderTopWidth, cs.maxWidth].join('|');
      }),
    );
  }

  it.each(Object.keys(STATIC_HTML))('the %s design, framed as the dashboard frames it, looks as it does with no CSP, with no violation', async (name) => {
    const html = STATIC_HTML[name as keyof typeof STATIC_HTML];
    expect(inlineStyleSources(html).length).toBeGreaterThan(0);
    served.set(name, { html, policyOf: html });
    const framed = await open(`${base}/frame/${name}`);
    const control = await open(`${base}/frame/${name}`, bypass);
    try {
      const [styled, unrestricted] = [await looks(framed.page), await looks(control.page)];
      expect(styled.length).toBeGreaterThan(5);
      expect(styled).toEqual(unrestricted);
      expect(framed.violations).toEqual([]);
    } finally {
      await framed.page.close();
      await control.page.close();
    }
  });
});
