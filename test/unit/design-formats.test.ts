import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import type { Browser } from 'playwright-core';
import { AppError } from '../../src/http/errors';
import { escapeHtml } from '../../src/mail/escape-html';
import { BLOCK_TYPES, isSafeUrl } from '../../src/render/design-blocks';
import { finishDesignHtml, hasUnsubscribeLink, NOTICES, renderDesign } from '../../src/render/design-formats';
import { compileDesign } from '../../src/render/render';
import { SAMPLE_SENDER, sampleRecipient } from '../../src/render/sample';
import { describeBrowser, launchChromium } from '../helpers/browser';
import { measureWidth } from '../dashboard/lib/width';

/**
 * The renderer of saved designs (src/render/design-formats.ts, design-blocks.ts): block
 * documents, Markdown and HTML to the HTML that is kept and sent.
 */
const DIR = path.join(__dirname, '../../assets/templates');
const BUILT_INS = fs
  .readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
const VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">';

const doc = (blocks: unknown[], settings?: unknown) => JSON.stringify({ version: 1, ...(settings ? { settings } : {}), blocks });
const blocks = (...b: unknown[]) => renderDesign('blocks', doc(b));

/** The VAL errors a render throws (fails the test when it does not throw VAL). */
function errorsOf(fn: () => unknown): Record<string, string[]> {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError && err.status === 422) return err.errors as Record<string, string[]>;
    throw err;
  }
  throw new Error('rendered without VAL');
}

const count = (html: string, what: string | RegExp) => html.split(what).length - 1;

describe('built-in block documents', () => {
  it('are all there (the five seeded designs)', () => {
    expect(BUILT_INS).toEqual(['announcement.json', 'custom.json', 'newsletter.json', 'promotion.json', 'welcome.json']);
  });

  it.each(BUILT_INS)('%s renders with one viewport and an unsubscribe link, every text in it', (file) => {
    const source = fs.readFileSync(path.join(DIR, file), 'utf8');
    const r = renderDesign('blocks', source);
    expect(count(r.html, VIEWPORT)).toBe(1);
    expect(hasUnsubscribeLink(r.html)).toBe(true);
    expect(r.html).toMatch(/^<!DOCTYPE html>/);
    expect(r.html).toContain('max-width:600px');
    // Only the blank design (no footer) gets the link added.
    expect(r.notices).toEqual(file === 'custom.json' ? [NOTICES.unsubscribe] : []);
    const texts: string[] = [];
    const walk = (node: unknown, key = ''): void => {
      if (typeof node === 'string' && ['text', 'title', 'headline', 'eyebrow', 'label', 'code', 'tagline'].includes(key)) texts.push(node);
      else if (Array.isArray(node)) node.forEach((n) => walk(n, key === 'lines' ? 'text' : key));
      else if (node && typeof node === 'object') Object.entries(node).forEach(([k, v]) => walk(v, k));
    };
    walk(JSON.parse(source));
    for (const t of texts) expect(r.html).toContain(escapeHtml(t));
  });
});

describe('block documents', () => {
  it('escape every text and keep ((placeholders))', () => {
    const r = blocks({ type: 'text', text: 'Hi ((first_name)) & <b>"friends"</b>\nnext' }, { type: 'heading', text: '<script>x</script>' });
    expect(r.html).toContain('Hi ((first_name)) &#38; &#60;b&#62;&#34;friends&#34;&#60;/b&#62;<br>next');
    expect(r.html).toContain('&#60;script&#62;x&#60;/script&#62;');
    expect(r.html).not.toContain('<script');
    expect(r.html).not.toContain('<b>');
  });

  it('never let a text add markup (any string)', () => {
    const base = count(blocks({ type: 'text', text: 'x' }).html, '<');
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const breaks = count(text, /\r\n|\r|\n/);
        expect(count(blocks({ type: 'text', text }).html, '<')).toBe(base + breaks);
      }),
      { numRuns: 300 },
    );
  });

  it('refuse a URL that is not http, https, mailto or a placeholder alone', () => {
    for (const href of ['javascript:alert(1)', ' JavaScript:x', 'data:text/html,x', 'vbscript:x', '//evil.test', '/relative', 'https://a.test/"onclick="x', 'https://a b', 'ftp://x.test', '((a)) ((b))']) {
      expect({ href, errors: errorsOf(() => blocks({ type: 'button', text: 'Go', href })) }).toEqual({
        href,
        errors: { 'blocks.0.href': ['The blocks.0.href must be an http, https or mailto URL, or a ((placeholder)).'] },
      });
    }
    for (const href of ['https://example.com/a?b=1&c=2', 'http://x.test', 'mailto:a@example.com', '((unsubscribe_preferences))', 'https://x.test/?e=((email))']) {
      expect(blocks({ type: 'button', text: 'Go', href }).html).toContain(`href="${escapeHtml(href)}"`);
    }
  });

  it('accept as a URL only what cannot leave its attribute or run (any string)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.webUrl(), fc.constantFrom('javascript:', 'mailto:', 'https://', '((x))')).map(String), (url) => {
        if (!isSafeUrl(url)) return;
        const u = url.trim();
        expect(/^(https?:\/\/|mailto:)/i.test(u) || /^\(\(\s*\w+\s*\)\)$/.test(u)).toBe(true);
        expect(u).not.toMatch(/[\s"<>]/);
      }),
      { numRuns: 500 },
    );
  });

  it('name the faulty block: unknown type, nested type, unknown field, bad colour, missing alt, wrong version', () => {
    expect(errorsOf(() => blocks({ type: 'text', text: 'a' }, { type: 'marquee' }))).toEqual({ 'blocks.1.type': ['The selected blocks.1.type is invalid.'] });
    expect(errorsOf(() => blocks({ text: 'a' }))).toEqual({ 'blocks.0.type': ['The blocks.0.type field is required.'] });
    expect(errorsOf(() => blocks('text'))).toEqual({ 'blocks.0': ['The blocks.0 must be an object.'] });
    expect(errorsOf(() => blocks({ type: 'columns', columns: [{ blocks: [{ type: 'footer' }] }] }))).toEqual({
      'blocks.0.columns.0.blocks.0.type': ['The selected blocks.0.columns.0.blocks.0.type is invalid.'],
    });
    expect(errorsOf(() => blocks({ type: 'text', text: 'a', onclick: 'x' }))).toEqual({ 'blocks.0.onclick': ['The blocks.0.onclick field is prohibited.'] });
    expect(errorsOf(() => blocks({ type: 'divider', color: 'red;background:url(x)' }))).toEqual({
      'blocks.0.color': ['The blocks.0.color must be a colour written #rgb or #rrggbb.'],
    });
    expect(errorsOf(() => blocks({ type: 'image', src: 'https://x.test/a.png' }))).toEqual({ 'blocks.0.alt': ['The blocks.0.alt field is required.'] });
    expect(errorsOf(() => renderDesign('blocks', '{"version":2,"blocks":[]}'))).toEqual({ version: ['The selected version is invalid.'] });
    expect(errorsOf(() => renderDesign('blocks', doc([], { fontFamily: 'Arial"; x' })))).toEqual({
      'settings.fontFamily': ['The settings.font family format is invalid.'],
    });
  });

  it('render every block type of the editor', () => {
    const r = blocks(
      { type: 'header', text: 'Acme', tagline: 'News', link: { text: 'Shop', href: 'https://x.test/shop' } },
      { type: 'hero', eyebrow: 'New', headline: '30%', title: 'Sale', text: 'Now', button: { text: 'Buy', href: 'https://x.test/buy' } },
      { type: 'heading', level: 1, text: 'Heading' },
      { type: 'text', text: 'Text', size: 'small', align: 'center' },
      { type: 'image', src: 'https://x.test/a.png', alt: 'A picture', href: 'https://x.test/a', width: 300, align: 'center' },
      { type: 'button', text: 'Outline', href: 'https://x.test/o', style: 'outline' },
      { type: 'divider', color: '#ccc', thickness: 2 },
      { type: 'spacer', height: 24 },
      { type: 'social', links: [{ network: 'mastodon', href: 'https://m.test/@a' }, { network: 'x', href: 'https://x.test/a', text: 'Follow' }] },
      { type: 'columns', columns: [{ title: 'Left', text: 'L' }, { blocks: [{ type: 'image', src: 'https://x.test/b.png', alt: 'B' }, { type: 'button', text: 'Go', href: 'https://x.test/g' }] }] },
      { type: 'article', label: 'Story', title: 'Article', text: 'Body', link: { text: 'More', href: 'https://x.test/m' } },
      { type: 'steps', items: [{ title: 'One' }, { title: 'Two', text: 'Then' }] },
      { type: 'box', title: 'Box', text: 'Inside' },
      { type: 'signature', lines: ['Cheers,', 'Team'] },
      { type: 'coupon', label: 'Code', code: 'SAVE10' },
      { type: 'products', items: [{ title: 'Bag', price: '$10', salePrice: '$8', image: 'https://x.test/bag.png' }, { title: 'Hat', swatch: '#fee' }] },
      { type: 'footer', lines: ['((sender_address))'], unsubscribe: { text: 'Leave', href: '((unsubscribe_preferences))' } },
    );
    expect(r.notices).toEqual([]);
    expect(new Set(BLOCK_TYPES)).toEqual(
      new Set(['header', 'hero', 'heading', 'text', 'image', 'button', 'divider', 'spacer', 'social', 'columns', 'article', 'steps', 'box', 'signature', 'coupon', 'products', 'footer']),
    );
    for (const piece of ['Acme', '30%', '<h1 ', 'alt="A picture"', 'width="300"', 'Mastodon', '>Follow<', 'class="col"', 'alt="B"', 'More &rarr;', 'SAVE10', '<s style="color:#9ca3af;">$10</s>', 'Cheers,<br>Team', '>Leave</a>']) {
      expect(r.html).toContain(piece);
    }
    expect(r.html).toContain('<a href="https://x.test/a" target="_blank"');
  });

  it('add the unsubscribe link to a footer without one, or a footer to a document without any, and keep the document in step', () => {
    const into = blocks({ type: 'footer', lines: ['Bye'] });
    expect(into.notices).toEqual([NOTICES.unsubscribe]);
    expect(JSON.parse(into.jsonCode).blocks).toEqual([
      { type: 'footer', lines: ['Bye'], unsubscribe: { text: 'Unsubscribe or manage your preferences', href: '((unsubscribe_preferences))' } },
    ]);
    const added = blocks({ type: 'text', text: 'Hi' });
    expect(JSON.parse(added.jsonCode).blocks.at(-1)).toMatchObject({ type: 'footer', unsubscribe: { href: '((unsubscribe_preferences))' } });
    expect(hasUnsubscribeLink(added.html)).toBe(true);
    expect(added.source).toBe(added.jsonCode);
    // A link to the page anywhere (a button) is enough.
    expect(blocks({ type: 'button', text: 'Preferences', href: '((unsubscribe_preferences))' }).notices).toEqual([]);
  });
});

describe('Markdown', () => {
  it('renders in the responsive layout with raw HTML off and only safe links', () => {
    const r = renderDesign('markdown', '# Hi ((first_name))\n\n<script>alert(1)</script> <b>b</b>\n\n[bad](javascript:alert(1)) [good](https://x.test) ![pic](https://x.test/p.png)\n\n[leave](((unsubscribe_preferences)))\n');
    expect(r.notices).toEqual([]);
    expect(count(r.html, VIEWPORT)).toBe(1);
    expect(r.html).toMatch(/<h1 style="[^"]*">Hi \(\(first_name\)\)<\/h1>/);
    expect(r.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &lt;b&gt;b&lt;/b&gt;');
    expect(r.html).not.toContain('href="javascript');
    expect(r.html).toContain('[bad](javascript:alert(1))');
    expect(r.html).toMatch(/<a href="https:\/\/x.test" style="[^"]*" target="_blank">good<\/a>/);
    expect(r.html).toMatch(/<img src="https:\/\/x.test\/p.png" alt="pic" style="[^"]*">/);
    expect(r.html).toContain('<a href="((unsubscribe_preferences))"');
    expect(r.html).toContain('<title>Hi ((first_name))</title>');
  });

  it('gets the footer when it has no unsubscribe link', () => {
    const r = renderDesign('markdown', 'Just text');
    expect(r.notices).toEqual([NOTICES.unsubscribe]);
    expect(hasUnsubscribeLink(r.html)).toBe(true);
  });
});

describe('HTML and what every design gets', () => {
  it('keeps complete HTML byte for byte', () => {
    const html = `<html><head><meta name='viewport' content='width=device-width'></head><body><a href=((unsubscribe_preferences))>x</a></body></html>`;
    expect(renderDesign('html', html)).toEqual({ html, jsonCode: '', source: html, notices: [] });
  });

  it('adds the viewport to the head, a head to the document, or a document around a fragment', () => {
    const link = '<a href="((unsubscribe_preferences))">u</a>';
    const inHead = finishDesignHtml(`<html><head><title>t</title></head><body>${link}</body></html>`);
    expect(inHead).toEqual({ html: `<html><head>\n${VIEWPORT}<title>t</title></head><body>${link}</body></html>`, notices: [NOTICES.viewport] });
    const noHead = finishDesignHtml(`<html lang="en"><body>${link}</body></html>`);
    expect(noHead.html).toBe(`<html lang="en">\n<head>\n<meta charset="utf-8">\n${VIEWPORT}\n</head><body>${link}</body></html>`);
    const fragment = finishDesignHtml(`<p>x</p>${link}`);
    expect(fragment.html).toBe(`<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n${VIEWPORT}\n</head>\n<body>\n<p>x</p>${link}\n</body>\n</html>\n`);
  });

  it('adds the unsubscribe footer before </body> when no link goes to the preferences page', () => {
    // The placeholder as text is no link.
    const r = finishDesignHtml(`<html><head>${VIEWPORT}</head><body><p>Write ((unsubscribe_preferences))</p></body></html>`);
    expect(r.notices).toEqual([NOTICES.unsubscribe]);
    expect(r.html).toMatch(/<a href="\(\(unsubscribe_preferences\)\)"[^>]*>Unsubscribe or manage your preferences<\/a>\n<\/td><\/tr>\n<\/table>\n<\/body>/);
  });

  it('refuses an empty source', () => {
    expect(errorsOf(() => renderDesign('html', '   '))).toEqual({ source: ['The source field is required.'] });
    expect(errorsOf(() => renderDesign('blocks', '', 'template_json'))).toEqual({ template_json: ['The template json field is required.'] });
  });
});

describe('sample values', () => {
  it('fill every placeholder of a preview through the send’s renderer', () => {
    const r = renderDesign('blocks', fs.readFileSync(path.join(DIR, 'welcome.json'), 'utf8'));
    const compiled = compileDesign({ subject: '', preheader: '', html: r.html, ...SAMPLE_SENDER, publicUrl: 'https://h.test', customFields: new Map() });
    const { html, text } = compiled.content(sampleRecipient());
    expect(html).not.toMatch(/\(\(/);
    expect(html).toContain('Welcome aboard, Jane!');
    expect(html).toContain('Jane Doe · jane.doe@example.com');
    expect(html).toContain('href="https://h.test/unsubscribe/preview"');
    expect(text).toContain('Welcome aboard, Jane!');
    expect(sampleRecipient(new Map([['7', 'plan']])).custom).toEqual({ 7: '[plan]' });
  });
});

describeBrowser('rendered designs at phone width', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it.each([...BUILT_INS.map((f) => ['blocks', f] as const), ['markdown', 'markdown'] as const])('%s %s fits 375 px', async (format, file) => {
    const source =
      format === 'blocks'
        ? fs.readFileSync(path.join(DIR, file), 'utf8')
        : `# A heading long enough to wrap twice at phone width\n\n${'A paragraph of text. '.repeat(30)}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n`;
    const page = await browser.newPage({ viewport: { width: 375, height: 800 } });
    try {
      await page.route('**/*', (route) => (route.request().url().startsWith('data:') ? route.continue() : route.abort()));
      await page.setContent(renderDesign(format, source).html);
      const width = await measureWidth(page);
      expect({ file, scroll: width.scroll, outside: width.outside }).toEqual({ file, scroll: 375, outside: [] });
    } finally {
      await page.close();
    }
  });
});
