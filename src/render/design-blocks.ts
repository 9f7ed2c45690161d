import { z } from 'zod';
import { invalid, type FieldErrors } from '../http/errors';
import { laravelMessage, attributeName } from '../http/validate';
import { escapeHtml } from '../mail/escape-html';

/**
 * The block document of the visual editor (`json_code`: `{"version":1,"settings":{…},"blocks":[…]}`,
 * the form of assets/templates/*.json) and its rendering to email-safe HTML: nested tables, inline
 * styles, one `<style>` for the phone-width rules, at most `settings.width` pixels wide.
 *
 * Every text is plain text: HTML-escaped, a line break becomes `<br>`, and `((placeholders))` pass
 * through (escaping leaves parentheses alone), to be filled per recipient by src/render/render.ts.
 * Every URL is `http:`, `https:`, `mailto:` or a placeholder alone; colours are `#rgb`/`#rrggbb`, so
 * nothing a document holds can become markup, script or CSS of its own.
 */

const PLACEHOLDER_ONLY = /^\(\(\s*[A-Za-z0-9_]+\s*\)\)$/;
const SAFE_URL = /^(https?:\/\/[^\s<>"]+|mailto:[^\s<>"]+)$/i;

/** A link target a design may hold: http(s), mailto, or a `((placeholder))` alone (the unsubscribe link). */
export function isSafeUrl(url: string): boolean {
  const u = url.trim();
  return SAFE_URL.test(u) || PLACEHOLDER_ONLY.test(u);
}

const url = () =>
  z
    .string()
    .max(2000)
    .refine(isSafeUrl, 'The :attribute must be an http, https or mailto URL, or a ((placeholder)).');
const color = () => z.string().regex(/^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$/, 'The :attribute must be a colour written #rgb or #rrggbb.');
const font = () => z.string().max(200).regex(/^[A-Za-z0-9 ,'-]+$/, 'The :attribute format is invalid.');
const line = () => z.string().max(10_000);
const align = () => z.enum(['left', 'center', 'right']);
const link = () => z.strictObject({ text: z.string().max(500), href: url() });

const settingsSchema = z.strictObject({
  width: z.number().int().min(320).max(800).optional(),
  background: color().optional(),
  contentBackground: color().optional(),
  fontFamily: font().optional(),
  headingFontFamily: font().optional(),
  textColor: color().optional(),
  headingColor: color().optional(),
  accentColor: color().optional(),
});

const SOCIAL_NETWORKS = {
  facebook: 'Facebook',
  instagram: 'Instagram',
  x: 'X',
  twitter: 'Twitter',
  linkedin: 'LinkedIn',
  youtube: 'YouTube',
  tiktok: 'TikTok',
  pinterest: 'Pinterest',
  github: 'GitHub',
  mastodon: 'Mastodon',
  bluesky: 'Bluesky',
  website: 'Website',
  email: 'Email',
} as const;
type Network = keyof typeof SOCIAL_NETWORKS;

/** Blocks that also go inside a column. */
const leafBlocks = {
  heading: z.strictObject({
    type: z.literal('heading'),
    level: z.union([z.literal(1), z.literal(2), z.literal(3)]).optional(),
    text: line(),
    align: align().optional(),
    color: color().optional(),
  }),
  text: z.strictObject({
    type: z.literal('text'),
    text: line(),
    align: align().optional(),
    size: z.enum(['small', 'normal', 'large']).optional(),
    color: color().optional(),
  }),
  image: z.strictObject({
    type: z.literal('image'),
    src: url(),
    alt: z.string().max(500),
    href: url().optional(),
    width: z.number().int().min(16).max(800).optional(),
    align: align().optional(),
  }),
  button: z.strictObject({
    type: z.literal('button'),
    text: z.string().min(1).max(500),
    href: url(),
    align: align().optional(),
    style: z.enum(['solid', 'outline']).optional(),
    background: color().optional(),
    color: color().optional(),
  }),
  divider: z.strictObject({ type: z.literal('divider'), color: color().optional(), thickness: z.number().int().min(1).max(10).optional() }),
  spacer: z.strictObject({ type: z.literal('spacer'), height: z.number().int().min(4).max(200) }),
  social: z.strictObject({
    type: z.literal('social'),
    links: z.array(z.strictObject({ network: z.enum(Object.keys(SOCIAL_NETWORKS) as [Network, ...Network[]]), href: url(), text: z.string().max(100).optional() })).min(1).max(12),
    align: align().optional(),
    color: color().optional(),
  }),
};

const column = z.strictObject({
  title: line().optional(),
  text: line().optional(),
  accentColor: color().optional(),
  background: color().optional(),
  blocks: z.array(z.discriminatedUnion('type', [leafBlocks.heading, leafBlocks.text, leafBlocks.image, leafBlocks.button, leafBlocks.divider, leafBlocks.spacer, leafBlocks.social])).max(20).optional(),
});

const topBlocks = {
  ...leafBlocks,
  header: z.strictObject({
    type: z.literal('header'),
    text: line(),
    tagline: line().optional(),
    link: link().optional(),
    align: align().optional(),
    background: color().optional(),
    color: color().optional(),
  }),
  hero: z.strictObject({
    type: z.literal('hero'),
    eyebrow: line().optional(),
    headline: line().optional(),
    title: line().optional(),
    text: line().optional(),
    button: z.strictObject({ text: z.string().min(1).max(500), href: url(), background: color().optional(), color: color().optional() }).optional(),
    background: color().optional(),
    color: color().optional(),
    align: align().optional(),
  }),
  columns: z.strictObject({ type: z.literal('columns'), columns: z.array(column).min(1).max(4), background: color().optional() }),
  article: z.strictObject({
    type: z.literal('article'),
    label: line().optional(),
    title: line(),
    text: line().optional(),
    link: link().optional(),
    accentColor: color().optional(),
  }),
  steps: z.strictObject({ type: z.literal('steps'), items: z.array(z.strictObject({ title: line(), text: line().optional() })).min(1).max(10) }),
  box: z.strictObject({ type: z.literal('box'), title: line().optional(), text: line(), background: color().optional() }),
  signature: z.strictObject({ type: z.literal('signature'), lines: z.array(line()).min(1).max(10) }),
  coupon: z.strictObject({ type: z.literal('coupon'), label: line().optional(), code: z.string().min(1).max(100), color: color().optional() }),
  products: z.strictObject({
    type: z.literal('products'),
    items: z
      .array(
        z.strictObject({
          category: line().optional(),
          title: line(),
          price: z.string().max(50).optional(),
          salePrice: z.string().max(50).optional(),
          swatch: color().optional(),
          image: url().optional(),
          link: link().optional(),
        }),
      )
      .min(1)
      .max(6),
  }),
  footer: z.strictObject({
    type: z.literal('footer'),
    lines: z.array(line()).max(10).optional(),
    unsubscribe: link().optional(),
    background: color().optional(),
    color: color().optional(),
  }),
};

/** The block types, as the editor offers them (a column holds the first seven). */
export const BLOCK_TYPES = Object.keys(topBlocks) as Array<keyof typeof topBlocks>;
const LEAF_TYPES: readonly string[] = Object.keys(leafBlocks);

const documentSchema = z.strictObject({
  version: z.literal(1),
  settings: settingsSchema.optional(),
  blocks: z
    .array(
      z.discriminatedUnion('type', [
        topBlocks.heading, topBlocks.text, topBlocks.image, topBlocks.button, topBlocks.divider, topBlocks.spacer, topBlocks.social,
        topBlocks.header, topBlocks.hero, topBlocks.columns, topBlocks.article, topBlocks.steps, topBlocks.box, topBlocks.signature,
        topBlocks.coupon, topBlocks.products, topBlocks.footer,
      ]),
    )
    .max(200),
});

export type BlockDocument = z.infer<typeof documentSchema>;
type Block = BlockDocument['blocks'][number];
type LeafBlock = NonNullable<z.infer<typeof column>['blocks']>[number];
type FooterBlock = z.infer<typeof topBlocks.footer>;

/** An unknown `type` is reported on the type itself (`blocks.3.type`), before the schema's own checks. */
function checkTypes(doc: unknown, errors: FieldErrors): void {
  const blocks = (doc as { blocks?: unknown })?.blocks;
  if (!Array.isArray(blocks)) return;
  const check = (b: unknown, path: string, allowed: readonly string[]) => {
    const type = (b as { type?: unknown })?.type;
    if (b === null || typeof b !== 'object' || Array.isArray(b)) errors[path] = [`The ${path} must be an object.`];
    else if (type === undefined) errors[`${path}.type`] = [`The ${path}.type field is required.`];
    else if (typeof type !== 'string' || !allowed.includes(type)) errors[`${path}.type`] = [`The selected ${path}.type is invalid.`];
  };
  blocks.forEach((b, i) => {
    check(b, `blocks.${i}`, BLOCK_TYPES);
    const columns = (b as { columns?: unknown })?.columns;
    if ((b as { type?: unknown })?.type !== 'columns' || !Array.isArray(columns)) return;
    columns.forEach((c, j) => {
      const inner = (c as { blocks?: unknown })?.blocks;
      if (Array.isArray(inner)) inner.forEach((x, k) => check(x, `blocks.${i}.columns.${j}.blocks.${k}`, LEAF_TYPES));
    });
  });
}

/**
 * A block document from its JSON, or VAL: `field` (the request's field) when it is no JSON
 * object, else each fault by its place in the document (`blocks.3.type`, `blocks.0.href`, …).
 */
export function parseBlockDocument(json: string, field: string): BlockDocument {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    throw invalid({ [field]: [`The ${attributeName([field])} must be a valid JSON string.`] });
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw invalid({ [field]: [`The ${attributeName([field])} must be a JSON object with version, settings and blocks.`] });
  }
  const errors: FieldErrors = {};
  checkTypes(doc, errors);
  if (Object.keys(errors).length) throw invalid(errors);
  const result = documentSchema.safeParse(doc, { error: (iss) => laravelMessage(iss) });
  if (result.success) return result.data;
  for (const iss of result.error.issues) {
    // An unknown key is named by itself, as Laravel names a prohibited field.
    const keys = iss.code === 'unrecognized_keys' ? iss.keys.map((k) => [...iss.path, k]) : [iss.path];
    for (const path of keys) {
      const key = path.map(String).join('.') || field;
      const message = iss.code === 'unrecognized_keys' ? `The ${key} field is prohibited.` : iss.message.replace(/:attribute/g, attributeName(path));
      const list = (errors[key] ??= []);
      if (!list.includes(message)) list.push(message);
    }
  }
  throw invalid(errors);
}

/** The unsubscribe link the renderer adds to a document without one (and that the built-ins carry). */
const UNSUBSCRIBE_LINK = { text: 'Unsubscribe or manage your preferences', href: '((unsubscribe_preferences))' };
const UNSUBSCRIBE_HREF = /^\(\(\s*unsubscribe_preferences\s*\)\)$/i;

function linksToUnsubscribe(b: Block | LeafBlock): boolean {
  switch (b.type) {
    case 'footer':
      return !!b.unsubscribe && UNSUBSCRIBE_HREF.test(b.unsubscribe.href.trim());
    case 'button':
    case 'image':
      return !!b.href && UNSUBSCRIBE_HREF.test(b.href.trim());
    case 'columns':
      return b.columns.some((c) => (c.blocks ?? []).some(linksToUnsubscribe));
    default:
      return false;
  }
}

/**
 * The document with an unsubscribe link: unchanged when one of its blocks links to
 * `((unsubscribe_preferences))`; else the link goes into its last footer that has none, or a new
 * footer (the sender's name and postal address, and the link) ends the document. `added` says so.
 */
export function withUnsubscribeFooter(doc: BlockDocument): { doc: BlockDocument; added: boolean } {
  if (doc.blocks.some(linksToUnsubscribe)) return { doc, added: false };
  const blocks = [...doc.blocks];
  for (let i = blocks.length - 1; i >= 0; i--) {
    const b = blocks[i];
    if (b.type === 'footer' && !b.unsubscribe) {
      blocks[i] = { ...b, unsubscribe: { ...UNSUBSCRIBE_LINK } };
      return { doc: { ...doc, blocks }, added: true };
    }
  }
  const footer: FooterBlock = { type: 'footer', lines: ['((sender_name)) · ((sender_address))'], unsubscribe: { ...UNSUBSCRIBE_LINK } };
  return { doc: { ...doc, blocks: [...blocks, footer] }, added: true };
}

// ---------------------------------------------------------------------------------------------
// Rendering

interface Look {
  width: number;
  background: string;
  contentBackground: string;
  font: string;
  headingFont: string;
  text: string;
  heading: string;
  accent: string;
}

function lookOf(s: BlockDocument['settings']): Look {
  const font = s?.fontFamily ?? 'Arial, Helvetica, sans-serif';
  return {
    width: s?.width ?? 600,
    background: s?.background ?? '#f4f4f5',
    contentBackground: s?.contentBackground ?? '#ffffff',
    font,
    headingFont: s?.headingFontFamily ?? font,
    text: s?.textColor ?? '#374151',
    heading: s?.headingColor ?? '#111827',
    accent: s?.accentColor ?? '#2563eb',
  };
}

/** Plain text as HTML: escaped, line breaks kept; placeholders pass through. */
function t(text: string): string {
  return escapeHtml(text).replace(/\r\n|\r|\n/g, '<br>');
}

/** An attribute value, escaped (styles and URLs alike). */
const a = escapeHtml;

const TABLE = 'role="presentation" cellpadding="0" cellspacing="0" border="0"';

function cell(html: string, style: string, opts: { bg?: string; align?: string; cls?: string } = {}): string {
  const attrs = [
    opts.cls ? `class="${opts.cls}"` : '',
    opts.align ? `align="${opts.align}"` : '',
    opts.bg ? `bgcolor="${a(opts.bg)}"` : '',
    `style="${a((opts.bg ? `background-color:${opts.bg};` : '') + style)}"`,
  ].filter(Boolean);
  return `<td ${attrs.join(' ')}>${html}</td>`;
}

function anchor(href: string, html: string, style: string): string {
  return `<a href="${a(href.trim())}" target="_blank" style="${a(style)}">${html}</a>`;
}

function paragraph(text: string, look: Look, o: { size?: number; color?: string; align?: string; margin?: string; bold?: boolean } = {}): string {
  const size = o.size ?? 16;
  const style = `margin:${o.margin ?? '0'};font-family:${look.font};font-size:${size}px;line-height:${Math.round(size * 1.6)}px;color:${o.color ?? look.text};${o.align ? `text-align:${o.align};` : ''}${o.bold ? 'font-weight:bold;' : ''}`;
  return `<p style="${a(style)}">${t(text)}</p>`;
}

function headingHtml(level: 1 | 2 | 3, text: string, look: Look, o: { color?: string; align?: string; margin?: string } = {}): string {
  const size = { 1: 28, 2: 22, 3: 18 }[level];
  const style = `margin:${o.margin ?? '0'};font-family:${look.headingFont};font-size:${size}px;line-height:${Math.round(size * 1.3)}px;font-weight:bold;color:${o.color ?? look.heading};${o.align ? `text-align:${o.align};` : ''}`;
  return `<h${level} style="${a(style)}">${t(text)}</h${level}>`;
}

function buttonHtml(b: { text: string; href: string; style?: 'solid' | 'outline'; background?: string; color?: string; align?: string }, look: Look): string {
  const outline = b.style === 'outline';
  const bg = outline ? undefined : (b.background ?? look.accent);
  const fg = b.color ?? (outline ? look.accent : '#ffffff');
  const border = outline ? `border:2px solid ${fg};` : '';
  const link = anchor(b.href, t(b.text), `display:inline-block;padding:12px 28px;font-family:${look.font};font-size:16px;line-height:20px;font-weight:bold;color:${fg};text-decoration:none;border-radius:6px;${border}`);
  const align = b.align ?? 'left';
  const margin = align === 'center' ? '0 auto' : align === 'right' ? '0 0 0 auto' : '0';
  return `<table ${TABLE} style="${a(`margin:${margin};`)}"><tr>${cell(link, 'border-radius:6px;', { bg, align: 'center' })}</tr></table>`;
}

function imageHtml(b: z.infer<typeof leafBlocks.image>, look: Look, maxWidth: number): string {
  const width = Math.min(b.width ?? maxWidth, maxWidth);
  const img = `<img src="${a(b.src.trim())}" alt="${a(b.alt)}" width="${width}" style="${a(`display:block;width:100%;max-width:${width}px;height:auto;border:0;margin:${b.align === 'center' ? '0 auto' : b.align === 'right' ? '0 0 0 auto' : '0'};`)}">`;
  return b.href ? anchor(b.href, img, `display:block;color:${look.accent};`) : img;
}

function socialHtml(b: z.infer<typeof leafBlocks.social>, look: Look): string {
  const color = b.color ?? look.accent;
  const links = b.links
    .map((l) => anchor(l.href, t(l.text ?? SOCIAL_NETWORKS[l.network]), `font-family:${look.font};font-size:14px;line-height:20px;font-weight:bold;color:${color};text-decoration:none;`))
    .join(' &nbsp;&middot;&nbsp; ');
  return `<p style="${a(`margin:0;text-align:${b.align ?? 'center'};font-family:${look.font};font-size:14px;line-height:20px;color:${look.text};`)}">${links}</p>`;
}

function dividerHtml(b: z.infer<typeof leafBlocks.divider>): string {
  const style = `border-top:${b.thickness ?? 1}px solid ${b.color ?? '#e5e7eb'};font-size:0;line-height:0;height:0;`;
  return `<table ${TABLE} width="100%"><tr>${cell('&nbsp;', style)}</tr></table>`;
}

/** What a leaf block shows (the same at the top level and inside a column). */
function leafHtml(b: LeafBlock, look: Look, maxWidth: number): string {
  switch (b.type) {
    case 'heading':
      return headingHtml(b.level ?? 2, b.text, look, { color: b.color, align: b.align });
    case 'text':
      return paragraph(b.text, look, { size: { small: 13, normal: 16, large: 18 }[b.size ?? 'normal'], color: b.color, align: b.align });
    case 'image':
      return imageHtml(b, look, maxWidth);
    case 'button':
      return buttonHtml(b, look);
    case 'divider':
      return dividerHtml(b);
    case 'spacer':
      return `<div style="${a(`height:${b.height}px;line-height:${b.height}px;font-size:0;`)}">&nbsp;</div>`;
    case 'social':
      return socialHtml(b, look);
  }
}

const PX = 'padding:12px 44px;';

function row(html: string, style = PX, opts: { bg?: string; align?: string } = {}): string {
  return `<tr>${cell(html, style, { ...opts, cls: 'px' })}</tr>`;
}

/** Equal columns side by side, stacked at phone width (class `col`). */
function columnsRow(cells: Array<{ html: string; bg?: string; style?: string }>, look: Look, bg?: string): string {
  const width = Math.floor(100 / cells.length);
  const tds = cells.map((c) => cell(c.html, `padding:8px;vertical-align:top;${c.style ?? ''}`, { bg: c.bg, cls: 'col' }).replace('<td ', `<td width="${width}%" valign="top" `));
  return row(`<table ${TABLE} width="100%"><tr>${tds.join('')}</tr></table>`, `padding:12px 36px;font-family:${look.font};`, { bg });
}

function blockHtml(b: Block, look: Look): string {
  const inner = look.width - 88;
  switch (b.type) {
    case 'header': {
      const color = b.color ?? look.heading;
      const name = `<span style="${a(`font-family:${look.headingFont};font-size:18px;line-height:24px;font-weight:bold;color:${color};`)}">${t(b.text)}</span>`;
      const tagline = b.tagline ? `<br><span style="${a(`font-family:${look.font};font-size:13px;line-height:20px;color:${color};`)}">${t(b.tagline)}</span>` : '';
      const left = cell(name + tagline, 'vertical-align:middle;', { align: b.align ?? 'left' });
      const right = b.link
        ? cell(anchor(b.link.href, t(b.link.text), `font-family:${look.font};font-size:14px;font-weight:bold;color:${b.color ?? look.accent};text-decoration:none;`), 'vertical-align:middle;', { align: 'right' })
        : '';
      return row(`<table ${TABLE} width="100%"><tr>${left}${right}</tr></table>`, 'padding:24px 44px;', { bg: b.background });
    }
    case 'hero': {
      const color = b.color ?? look.heading;
      const align = b.align ?? 'left';
      const parts = [
        b.eyebrow ? paragraph(b.eyebrow, look, { size: 12, color, align, margin: '0 0 12px 0', bold: true }).replace('font-weight:bold;', 'font-weight:bold;letter-spacing:2px;text-transform:uppercase;') : '',
        b.headline ? `<p style="${a(`margin:0 0 8px 0;font-family:${look.headingFont};font-size:56px;line-height:60px;font-weight:bold;color:${color};text-align:${align};`)}">${t(b.headline)}</p>` : '',
        b.title ? headingHtml(1, b.title, look, { color, align, margin: '0 0 16px 0' }) : '',
        b.text ? paragraph(b.text, look, { color, align, margin: '0 0 24px 0', size: 17 }) : '',
        b.button ? buttonHtml({ ...b.button, align }, look) : '',
      ];
      return row(parts.join(''), 'padding:48px 44px;', { bg: b.background, align });
    }
    case 'columns':
      return columnsRow(
        b.columns.map((c) => {
          const top = c.accentColor ? `border-top:3px solid ${c.accentColor};padding-top:12px;` : '';
          const html = [
            c.title ? headingHtml(3, c.title, look, { margin: '0 0 6px 0' }) : '',
            c.text ? paragraph(c.text, look, { size: 14, margin: '0 0 8px 0' }) : '',
            ...(c.blocks ?? []).map((x) => `<div style="margin:0 0 12px 0;">${leafHtml(x, look, Math.floor(inner / b.columns.length))}</div>`),
          ].join('');
          return { html, bg: c.background, style: top };
        }),
        look,
        b.background,
      );
    case 'article': {
      const accent = b.accentColor ?? look.accent;
      const html = [
        b.label ? paragraph(b.label, look, { size: 12, color: accent, margin: '0 0 6px 0', bold: true }) : '',
        headingHtml(3, b.title, look, { margin: '0 0 8px 0' }),
        b.text ? paragraph(b.text, look, { size: 15, margin: '0 0 10px 0' }) : '',
        b.link ? anchor(b.link.href, `${t(b.link.text)} &rarr;`, `font-family:${look.font};font-size:15px;font-weight:bold;color:${accent};text-decoration:none;`) : '',
      ].join('');
      return row(`<table ${TABLE} width="100%"><tr>${cell(html, `padding:4px 0 4px 16px;border-left:4px solid ${accent};`)}</tr></table>`);
    }
    case 'steps': {
      const items = b.items.map((s, i) => {
        const number = cell(String(i + 1), `width:32px;height:32px;border-radius:16px;font-family:${look.font};font-size:15px;font-weight:bold;color:#ffffff;text-align:center;vertical-align:middle;`, { bg: look.accent });
        const body = cell(headingHtml(3, s.title, look, { margin: '0 0 4px 0' }) + (s.text ? paragraph(s.text, look, { size: 15 }) : ''), 'padding:0 0 16px 16px;vertical-align:top;');
        return `<tr><td valign="top" style="width:32px;padding:0 0 16px 0;"><table ${TABLE}><tr>${number}</tr></table></td>${body}</tr>`;
      });
      return row(`<table ${TABLE} width="100%">${items.join('')}</table>`);
    }
    case 'box': {
      const html = (b.title ? headingHtml(3, b.title, look, { margin: '0 0 6px 0' }) : '') + paragraph(b.text, look, { size: 15 });
      return row(`<table ${TABLE} width="100%"><tr>${cell(html, 'padding:20px 24px;border-radius:8px;', { bg: b.background ?? '#f3f4f6' })}</tr></table>`);
    }
    case 'signature':
      return row(paragraph(b.lines.join('\n'), look));
    case 'coupon': {
      const color = b.color ?? look.accent;
      const html =
        (b.label ? paragraph(b.label, look, { size: 13, align: 'center', margin: '0 0 6px 0' }) : '') +
        `<p style="${a(`margin:0;font-family:'Courier New',Courier,monospace;font-size:28px;line-height:34px;font-weight:bold;letter-spacing:4px;color:${color};text-align:center;`)}">${t(b.code)}</p>`;
      return row(`<table ${TABLE} width="100%"><tr>${cell(html, `padding:20px;border:2px dashed ${color};border-radius:8px;`, { align: 'center' })}</tr></table>`);
    }
    case 'products':
      return columnsRow(
        b.items.map((p) => {
          const picture = p.image
            ? `<img src="${a(p.image.trim())}" alt="${a(p.title)}" width="${Math.floor(inner / b.items.length)}" style="display:block;width:100%;height:auto;border:0;border-radius:8px;margin:0 0 12px 0;">`
            : p.swatch
              ? `<div style="${a(`height:120px;border-radius:8px;background-color:${p.swatch};margin:0 0 12px 0;`)}">&nbsp;</div>`
              : '';
          const price = p.salePrice
            ? `${p.price ? `<s style="color:#9ca3af;">${t(p.price)}</s> ` : ''}<strong>${t(p.salePrice)}</strong>`
            : p.price
              ? `<strong>${t(p.price)}</strong>`
              : '';
          const html = [
            picture,
            p.category ? paragraph(p.category, look, { size: 12, margin: '0 0 4px 0', color: '#6b7280' }) : '',
            headingHtml(3, p.title, look, { margin: '0 0 6px 0' }),
            price ? `<p style="${a(`margin:0 0 10px 0;font-family:${look.font};font-size:15px;line-height:22px;color:${look.text};`)}">${price}</p>` : '',
            p.link ? anchor(p.link.href, t(p.link.text), `font-family:${look.font};font-size:14px;font-weight:bold;color:${look.accent};text-decoration:none;`) : '',
          ].join('');
          return { html };
        }),
        look,
      );
    case 'footer': {
      const color = b.color ?? (b.background ? '#d1d5db' : '#6b7280');
      const lines = (b.lines ?? []).map((l) => paragraph(l, look, { size: 12, color, align: 'center', margin: '0 0 6px 0' }));
      const unsubscribe = b.unsubscribe
        ? `<p style="${a(`margin:8px 0 0 0;font-family:${look.font};font-size:12px;line-height:18px;text-align:center;`)}">${anchor(b.unsubscribe.href, t(b.unsubscribe.text), `color:${color};text-decoration:underline;`)}</p>`
        : '';
      return row(lines.join('') + unsubscribe, 'padding:28px 44px;', { bg: b.background, align: 'center' });
    }
    default:
      return row(leafHtml(b, look, inner));
  }
}

/** The first heading's text, for the document's `<title>` (a web view's tab). */
function titleOf(doc: BlockDocument): string {
  for (const b of doc.blocks) {
    if (b.type === 'hero' && b.title) return b.title;
    if (b.type === 'heading') return b.text;
  }
  return '';
}

/**
 * The email document around a design's rows: the head (charset, viewport, the phone-width rules),
 * the page background and a centred container at most `width` pixels wide.
 */
export function emailDocument(rows: string, o: { title: string; settings?: BlockDocument['settings'] }): string {
  const look = lookOf(o.settings);
  return `<!DOCTYPE html>
<html lang="en" xmlns="http://www.w3.org/1999/xhtml">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="X-UA-Compatible" content="IE=edge">
<meta name="x-apple-disable-message-reformatting">
<meta name="format-detection" content="telephone=no, date=no, address=no, email=no">
<title>${t(o.title)}</title>
<style>
  body { margin: 0; padding: 0; width: 100% !important; -webkit-text-size-adjust: 100%; -ms-text-size-adjust: 100%; }
  table, td { border-collapse: collapse; mso-table-lspace: 0pt; mso-table-rspace: 0pt; }
  img { border: 0; outline: none; text-decoration: none; -ms-interpolation-mode: bicubic; max-width: 100%; height: auto; }
  a { color: ${look.accent}; }
  @media only screen and (max-width: ${look.width + 20}px) {
    .container { width: 100% !important; }
    .px { padding-left: 20px !important; padding-right: 20px !important; }
    .col { display: block !important; width: 100% !important; box-sizing: border-box; }
  }
</style>
</head>
<body style="${a(`margin:0;padding:0;background-color:${look.background};`)}">
<table ${TABLE} width="100%" style="${a(`background-color:${look.background};`)}">
<tr>
<td align="center" style="padding:24px 10px;">
<!--[if mso]><table ${TABLE} width="${look.width}"><tr><td><![endif]-->
<table ${TABLE} class="container" width="${look.width}" style="${a(`width:100%;max-width:${look.width}px;background-color:${look.contentBackground};font-family:${look.font};color:${look.text};`)}">
${rows}
</table>
<!--[if mso]></td></tr></table><![endif]-->
</td>
</tr>
</table>
</body>
</html>
`;
}

/** A block document as email HTML. */
export function renderBlocks(doc: BlockDocument): string {
  const look = lookOf(doc.settings);
  const rows = doc.blocks.map((b) => blockHtml(b, look)).join('\n');
  return emailDocument(rows, { title: titleOf(doc), settings: doc.settings });
}

/** The look of a Markdown design (the same defaults as a block document's). */
export function markdownLook(): { font: string; text: string; heading: string; accent: string } {
  const look = lookOf(undefined);
  return { font: look.font, text: look.text, heading: look.heading, accent: look.accent };
}

/** One row of the container holding `html` as it is (a Markdown design's body). */
export function bodyRow(html: string): string {
  return row(html, 'padding:32px 44px;');
}
