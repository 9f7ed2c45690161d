import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { escapeHtml } from '../mail/escape-html';

/**
 * The frame of every recipient-facing page: plain HTML, no JavaScript, readable on a phone,
 * a strict Content-Security-Policy. `body` must already be escaped (build it with escapeHtml).
 */
export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>
  body { margin: 0; background: #f4f5f7; color: #1f2933; font: 16px/1.5 -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
  main { max-width: 560px; margin: 0 auto; padding: 32px 20px; }
  .card { background: #fff; border-radius: 10px; padding: 24px; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
  h1 { font-size: 1.4rem; margin: 0 0 12px; }
  p { margin: 0 0 12px; }
  fieldset { border: 0; padding: 0; margin: 0 0 16px; }
  legend { font-weight: 600; margin-bottom: 8px; }
  label { display: flex; gap: 10px; align-items: flex-start; padding: 10px 0; border-top: 1px solid #eef0f3; cursor: pointer; }
  label:first-of-type { border-top: 0; }
  input[type=checkbox], input[type=radio] { width: 20px; height: 20px; margin-top: 2px; flex: none; }
  .hint { color: #616e7c; font-size: .9rem; display: block; }
  button { font: inherit; background: #2563eb; color: #fff; border: 0; border-radius: 6px; padding: 12px 20px; cursor: pointer; width: 100%; }
  button:focus, input:focus { outline: 3px solid #93c5fd; outline-offset: 2px; }
  .ok { color: #166534; }
  .muted { color: #616e7c; font-size: .9rem; }
</style>
</head>
<body><main><div class="card">
${body}
</div></main></body>
</html>`;
}

/** Sends a page with headers that keep it from being framed or running scripts. */
export function sendPage(res: Response, status: number, title: string, body: string): void {
  res
    .status(status)
    .set({
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'",
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
    })
    .send(page(title, body));
}

/**
 * Recipient-facing pages answer with a page, not the API's JSON, even when something fails
 * (the database is down, say): the person gets a readable "try again".
 */
export function pageErrors(fn: (req: Request, res: Response) => Promise<void>): RequestHandler {
  return (req: Request, res: Response, _next: NextFunction) => {
    fn(req, res).catch((err) => {
      req.log?.error({ err }, 'page failed');
      if (!res.headersSent) {
        sendPage(res, 503, 'Please try again', '<h1>Something went wrong</h1><p>Please try again in a few minutes.</p>');
      }
    });
  };
}

export { escapeHtml };
