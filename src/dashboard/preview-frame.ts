import type { Response } from 'express';
import { pageHeaders } from '../http/page-headers';

/**
 * An email's HTML shown inside a dashboard page (the design editors' and the send editor's
 * previews): served on its own URL into an `<iframe>`, under a policy that sandboxes it (no
 * script, an opaque origin that cannot read the dashboard or its cookie), lets it load only the
 * images and styles an email carries, and lets only the dashboard's own pages frame it.
 */
const EMAIL_PREVIEW_CSP = [
  'sandbox',
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  'img-src http: https: data:',
  'font-src http: https: data:',
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'self'",
].join('; ');

export function sendEmailPreview(res: Response, html: string): void {
  res
    .status(200)
    .set({ 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': EMAIL_PREVIEW_CSP, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' })
    .send(html);
}

/** The headers of a page that frames previews (its own origin's only). */
export const FRAMING_PAGE_HEADERS = pageHeaders({ 'frame-src': "'self'" });
