import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import type { VNode } from 'preact';
import { renderToString } from 'preact-render-to-string';
import type { Ctx, Deps } from '../context';
import { AppError } from '../http/errors';
import { pageHeaders } from '../http/page-headers';
import { MessagePage, SignedInAs, type NavKey } from './layout';
import type { Session } from './session';
import type { Role } from '../team/permissions';

/**
 * How every dashboard page leaves: rendered by preact (values as text), with headers that keep
 * scripts to the package's own files (http/page-headers.ts: no directive names another origin;
 * no inline script, no eval, no inline style).
 */
export const PAGE_HEADERS = pageHeaders();

/** `headers`: a page that frames previews passes FRAMING_PAGE_HEADERS (preview-frame.ts). */
/** The header's "who" (label and role) of a signed-in request, from its session. */
function signedInAs(res: Response): { label: string; role: Role } | undefined {
  const session = (res.locals.page as PageContext | undefined)?.session;
  return session ? { label: session.label, role: session.role } : undefined;
}

export function sendPage(res: Response, status: number, page: VNode, headers: Record<string, string> = PAGE_HEADERS): void {
  res
    .status(status)
    .set({ ...headers, 'Content-Type': 'text/html; charset=utf-8' })
    .send(`<!doctype html>${renderToString(<SignedInAs.Provider value={signedInAs(res)}>{page}</SignedInAs.Provider>)}`);
}

/** What a signed-in request carries (set by the session middleware in index.ts). */
export interface PageContext {
  session: Session;
  ctx: Ctx;
  /** The browser's time zone (its cookie), checked against PostgreSQL's list; UTC otherwise. */
  tz: string;
  deps: Deps;
}

export function pageContext(res: Response): PageContext {
  return res.locals.page as PageContext;
}

const TITLES: Record<number, string> = { 404: 'Not found', 413: 'Too large', 422: 'Refused', 429: 'Too many requests', 503: 'Try again shortly' };

/** An AppError's `errors` (a sentence, or fields → messages) as lines a person reads. */
export function errorLines(errors: unknown): string[] {
  if (typeof errors === 'string') return [errors];
  if (errors && typeof errors === 'object') return Object.values(errors as Record<string, unknown>).flatMap((v) => (Array.isArray(v) ? v.map(String) : [String(v)]));
  return ['Something went wrong.'];
}

/** A page handler whose failures become pages (a service's NF is this page's 404). */
export function page(handler: (req: Request, res: Response, p: PageContext) => Promise<void>, active?: NavKey): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const p = pageContext(res);
    try {
      await handler(req, res, p);
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) {
        next(err);
        return;
      }
      if (res.headersSent) return;
      res.set(err.headers);
      sendPage(
        res,
        err.status,
        <MessagePage title={TITLES[err.status] ?? 'Refused'} csrf={p.session.csrf} active={active}>
          {err.status === 404 ? <p>There is nothing here, or it belongs to another account.</p> : null}
          {err.status !== 404 ? (
            <ul class="errors">
              {errorLines(err.errors).map((line) => (
                <li>{line}</li>
              ))}
            </ul>
          ) : null}
          <p>
            <a href={active ? (active === 'overview' ? '/app' : `/app/${active}`) : '/app'}>Back</a>
          </p>
        </MessagePage>,
      );
    }
  };
}

/**
 * What an area of the dashboard registers its pages with (src/dashboard/index.tsx): its router,
 * the session and CSRF guards, and the body parsers of its forms.
 */
export interface DashboardKit {
  router: Router;
  deps: Deps;
  /** A signed-in session, or the sign-in page. */
  signedIn: RequestHandler;
  /** The session's CSRF token on a state-changing request (a form field or X-CSRF-Token). */
  requireCsrf: RequestHandler;
  /** A small urlencoded form. */
  form: RequestHandler;
  /** A form that carries a design (up to DESIGN_BODY_LIMIT, many fields). */
  largeForm: RequestHandler;
}
