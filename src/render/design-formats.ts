import MarkdownIt from 'markdown-it';
import { invalid } from '../http/errors';
import { escapeHtml } from '../mail/escape-html';
import { bodyRow, emailDocument, isSafeUrl, markdownLook, parseBlockDocument, renderBlocks, withUnsubscribeFooter } from './design-blocks';

/**
 * A saved design's three ways of being written (issue 34), and the one function that turns each
 * into the HTML that is kept (`html_code`) and sent:
 *
 * - `blocks`: the visual editor's block document (src/render/design-blocks.ts);
 * - `markdown`: Markdown (markdown-it, raw HTML off, links only http/https/mailto/placeholder) in
 *   a responsive base layout;
 * - `html`: kept as written.
 *
 * Every rendered design then gets what every message needs: a viewport meta tag in its head (a
 * head is added when missing) and a link to `((unsubscribe_preferences))` (a footer is added when
 * missing). Each addition is reported in `notices`, so an editor can say what changed.
 */
export const DESIGN_FORMATS = ['blocks', 'markdown', 'html'] as const;
export type DesignFormat = (typeof DESIGN_FORMATS)[number];

export interface RenderedDesign {
  /** The HTML to keep and send. */
  html: string;
  /** The block document as stored (`blocks`: with the unsubscribe footer when one was added), else ''. */
  jsonCode: string;
  /** The source to keep: as written, except a block document, stored as `jsonCode`. */
  source: string;
  notices: string[];
}

export const NOTICES = {
  unsubscribe: 'An unsubscribe link was added to the footer.',
  viewport: 'A viewport meta tag was added to the head.',
} as const;

const VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">';
const UNSUBSCRIBE_LINK = /\bhref\s*=\s*(["']?)\s*\(\(\s*unsubscribe_preferences\s*\)\)\s*\1/i;

/** True when the HTML links to the recipient's preferences page. */
export function hasUnsubscribeLink(html: string): boolean {
  return UNSUBSCRIBE_LINK.test(html);
}

const FOOTER = `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="margin-top:24px;">
<tr><td align="center" style="padding:16px;font-family:Arial,Helvetica,sans-serif;font-size:12px;line-height:18px;color:#6b7280;">
((sender_name)) &middot; ((sender_address))<br>
<a href="((unsubscribe_preferences))" target="_blank" style="color:#6b7280;text-decoration:underline;">Unsubscribe or manage your preferences</a>
</td></tr>
</table>
`;

function insertBefore(html: string, close: RegExp, piece: string): string {
  const at = html.search(close);
  return at < 0 ? html + piece : html.slice(0, at) + piece + html.slice(at);
}

/** The viewport meta tag in the head: added to the head, a head added to the document, or the fragment made a document. */
function withViewport(html: string): { html: string; added: boolean } {
  if (/<meta\b[^>]*\bname\s*=\s*["']?viewport\b/i.test(html)) return { html, added: false };
  const head = /<head\b[^>]*>/i.exec(html);
  if (head) {
    const at = head.index + head[0].length;
    return { html: `${html.slice(0, at)}\n${VIEWPORT}${html.slice(at)}`, added: true };
  }
  const root = /<html\b[^>]*>/i.exec(html);
  if (root) {
    const at = root.index + root[0].length;
    return { html: `${html.slice(0, at)}\n<head>\n<meta charset="utf-8">\n${VIEWPORT}\n</head>${html.slice(at)}`, added: true };
  }
  const body = /<body\b/i.test(html) ? html : `<body>\n${html}\n</body>`;
  return { html: `<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n${VIEWPORT}\n</head>\n${body}\n</html>\n`, added: true };
}

/** What every design gets, whatever its format: the viewport meta tag and an unsubscribe link. */
export function finishDesignHtml(html: string): { html: string; notices: string[] } {
  const notices: string[] = [];
  let out = html;
  if (!hasUnsubscribeLink(out)) {
    out = insertBefore(out, /<\/body\s*>/i, FOOTER);
    notices.push(NOTICES.unsubscribe);
  }
  const viewport = withViewport(out);
  if (viewport.added) notices.push(NOTICES.viewport);
  return { html: viewport.html, notices };
}

// ---------------------------------------------------------------------------------------------
// Markdown

/** Inline styles per element (email clients drop or ignore much of a `<style>`). */
function markdownStyles(): Record<string, string> {
  const look = markdownLook();
  const heading = (size: number) => `margin:0 0 12px 0;font-family:${look.font};font-size:${size}px;line-height:${Math.round(size * 1.3)}px;font-weight:bold;color:${look.heading};`;
  const text = `font-family:${look.font};font-size:16px;line-height:26px;color:${look.text};`;
  return {
    h1: heading(28),
    h2: heading(22),
    h3: heading(18),
    h4: heading(16),
    h5: heading(15),
    h6: heading(14),
    p: `margin:0 0 16px 0;${text}`,
    ul: `margin:0 0 16px 0;padding:0 0 0 24px;${text}`,
    ol: `margin:0 0 16px 0;padding:0 0 0 24px;${text}`,
    blockquote: `margin:0 0 16px 0;padding:4px 0 4px 16px;border-left:4px solid #e5e7eb;color:#6b7280;`,
    a: `color:${look.accent};text-decoration:underline;`,
    img: 'display:block;max-width:100%;height:auto;border:0;',
    hr: 'border:0;border-top:1px solid #e5e7eb;margin:24px 0;',
    code: 'font-family:Menlo,Consolas,monospace;font-size:14px;background-color:#f3f4f6;padding:2px 4px;border-radius:4px;',
    pre: 'margin:0 0 16px 0;padding:12px;background-color:#f3f4f6;border-radius:6px;overflow:auto;font-family:Menlo,Consolas,monospace;font-size:14px;line-height:20px;',
    table: `border-collapse:collapse;margin:0 0 16px 0;${text}`,
    th: 'border:1px solid #e5e7eb;padding:6px 10px;text-align:left;',
    td: 'border:1px solid #e5e7eb;padding:6px 10px;',
  };
}

function markdownRenderer(): MarkdownIt.MarkdownIt {
  const md = new MarkdownIt('default', { html: false, linkify: false, typographer: false });
  // The same rule as a block document's URLs (markdown-it's own refuses only javascript: and the like).
  md.validateLink = (url) => isSafeUrl(url);
  // A placeholder as a link target stays as written (not percent-encoded).
  const normalize = md.normalizeLink.bind(md);
  md.normalizeLink = (url) => (/^\(\(\s*[A-Za-z0-9_]+\s*\)\)$/.test(url.trim()) ? url.trim() : normalize(url));
  const styles = markdownStyles();
  md.core.ruler.push('herald_inline_styles', (state) => {
    const style = (token: { tag: string; nesting: number; attrSet(name: string, value: string): void; type: string }) => {
      if ((token.nesting === 1 || token.type === 'image' || token.type === 'code_inline' || token.type === 'hr') && styles[token.tag]) token.attrSet('style', styles[token.tag]);
      if (token.tag === 'a' && token.nesting === 1) token.attrSet('target', '_blank');
    };
    for (const token of state.tokens) {
      style(token);
      for (const child of token.children ?? []) style(child);
    }
  });
  // A fenced or indented code block is styled on its <pre>.
  md.renderer.rules.code_block = (tokens, idx) => `<pre style="${escapeHtml(styles.pre)}"><code>${escapeHtml(tokens[idx].content)}</code></pre>\n`;
  md.renderer.rules.fence = md.renderer.rules.code_block;
  return md;
}

let markdown: MarkdownIt.MarkdownIt | undefined;

/** Markdown as email HTML: its body in the base layout (the block documents' shell). */
export function renderMarkdown(source: string): string {
  markdown ??= markdownRenderer();
  const firstHeading = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/m.exec(source);
  return emailDocument(bodyRow(markdown.render(source)), { title: firstHeading?.[1] ?? '' });
}

// ---------------------------------------------------------------------------------------------

/**
 * A design's HTML, kept source and notices, or VAL. `field` names the request field that held
 * the source (`source`, `template_json`, …) in the errors about it.
 */
export function renderDesign(format: DesignFormat, source: string, field = 'source'): RenderedDesign {
  if (source.trim() === '') throw invalid({ [field]: [`The ${field.replace(/_/g, ' ')} field is required.`] });
  switch (format) {
    case 'blocks': {
      const { doc, added } = withUnsubscribeFooter(parseBlockDocument(source, field));
      const jsonCode = JSON.stringify(doc);
      const finished = finishDesignHtml(renderBlocks(doc));
      return { html: finished.html, jsonCode, source: jsonCode, notices: added ? [NOTICES.unsubscribe, ...finished.notices] : finished.notices };
    }
    case 'markdown': {
      const finished = finishDesignHtml(renderMarkdown(source));
      return { html: finished.html, jsonCode: '', source, notices: finished.notices };
    }
    case 'html': {
      const finished = finishDesignHtml(source);
      return { html: finished.html, jsonCode: '', source, notices: finished.notices };
    }
  }
}
