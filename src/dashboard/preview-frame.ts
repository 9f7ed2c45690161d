import { createHash } from 'node:crypto';
import type { Response } from 'express';
import { Parser } from 'htmlparser2';
import { pageHeaders } from '../http/page-headers';

/**
 * An email's HTML shown inside a dashboard page (the design editors' and the send editor's
 * previews): served on its own URL into an `<iframe>`, under a policy that sandboxes it (no
 * script, an opaque origin that cannot read the dashboard or its cookie), lets it load only the
 * images and fonts an email carries, and lets only the dashboard's own pages frame it.
 *
 * An email styles itself inline (`<style>` elements, `style="…"` attributes). The policy allows
 * exactly those styles and no other: the SHA-256 of each `<style>` element's text and of each
 * distinct `style` attribute value (`'unsafe-hashes'` lets a hash match an attribute), read with
 * htmlparser2 (the parser html-to-text uses) — never `'unsafe-inline'`.
 */
const EMAIL_CSP = ['sandbox', "default-src 'none'", 'img-src http: https: data:', 'font-src http: https: data:', "form-action 'none'", "base-uri 'none'"];

const hash = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The `style-src` sources of `html`'s own styles: attribute values as the browser sees them
 * (entities decoded), `<style>` texts as written (raw text), both after the browser's
 * normalisation of line breaks (CR LF and CR are LF). Not matched, so shown unstyled in the
 * preview only: a `<style>` inside SVG whose text has entities or CDATA (foreign content, which
 * the browser decodes).
 */
export function inlineStyleSources(html: string): string[] {
  const sources = new Set<string>();
  let text: string | undefined;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (attribs.style !== undefined) sources.add(hash(attribs.style));
        if (name === 'style') text = '';
      },
      ontext(chunk) {
        if (text !== undefined) text += chunk;
      },
      onclosetag(name) {
        if (name !== 'style' || text === undefined) return;
        sources.add(hash(text));
        text = undefined;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.end(html.replace(/\r\n?/g, '\n'));
  return [...sources].sort();
}

/**
 * An email document's policy: its styles by hash (`'none'` when it has none). `framedBy`: the
 * `frame-ancestors` sources (a dashboard preview: `'self'`); without it, any page may frame it.
 */
export function emailCsp(html: string, framedBy?: string): string {
  const styles = inlineStyleSources(html);
  const styleSrc = styles.length ? `style-src 'unsafe-hashes' ${styles.join(' ')}` : "style-src 'none'";
  return [...EMAIL_CSP.slice(0, 2), styleSrc, ...EMAIL_CSP.slice(2), ...(framedBy ? [`frame-ancestors ${framedBy}`] : [])].join('; ');
}

/** The preview's policy: the email's, framed by the dashboard's pages only. */
export const emailPreviewCsp = (html: string): string => emailCsp(html, "'self'");

/** Sends an email's HTML as a document of its own, sandboxed (`framedBy`: see emailCsp). */
export function sendEmailDocument(res: Response, html: string, framedBy?: string): void {
  res
    .status(200)
    .set({ 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': emailCsp(html, framedBy), 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' })
    .send(html);
}

export const sendEmailPreview = (res: Response, html: string): void => sendEmailDocument(res, html, "'self'");

/** The headers of a page that frames previews (its own origin's only). */
export const FRAMING_PAGE_HEADERS = pageHeaders({ 'frame-src': "'self'" });
