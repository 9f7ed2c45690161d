import path from 'node:path';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Deps } from '../context';
import { toAppError } from '../http/error-handler';
import { ASSETS_DIR } from '../paths';
import { knownTimeZone } from '../resources/reports/reports.service';
import { MessagePage, SignInPage } from './layout';
import { mountAccountPages } from './pages/account';
import { mountAudiencePages } from './pages/audience';
import { mountAutomationPages } from './pages/automations';
import { mountDesignPages } from './pages/designs';
import { mountFormPages } from './pages/forms';
import { mountSenderPages } from './pages/senders';
import { mountSendPages } from './pages/sends';
import { mountTeamPages } from './pages/team';
import { mountActivityPages } from './pages/activity';
import { mountOverviewAndSettingsPages } from './pages/settings-pages';
import { errorLines, PAGE_HEADERS, pageContext, sendPage, type DashboardKit, type PageContext } from './respond';
import { signInWithPassword, SIGN_IN_REFUSED } from '../team/sign-in';
import {
  findSession,
  readCookies,
  sameToken,
  sessionActor,
  SESSION_COOKIE,
  setCookie,
  SIGN_IN_COOKIE,
  signIn,
  signInToken,
  signOut,
  TZ_COOKIE,
} from './session';

/**
 * The dashboard under /app (docs/decisions.md, "Dashboard"): pages rendered on the server from
 * the same services the API's routes call, a sprinkle of script for the charts and the CSV
 * upload, assets from the package.
 */
const CHART_JS = path.join(path.dirname(require.resolve('chart.js')), 'chart.umd.min.js');

function signInPage(res: Response, deps: Deps, req: Request, status: number, opts: { error?: string; notice?: string; email?: string; keysError?: boolean } = {}): void {
  const { token, fresh } = signInToken(req);
  if (fresh) setCookie(res, deps.config, SIGN_IN_COOKIE, token);
  sendPage(res, status, <SignInPage token={token} error={opts.error} notice={opts.notice} email={opts.email} keysError={opts.keysError} />);
}

/** What a signed-in user whose account requires a second factor may still reach before setting one up. */
const ENROLMENT_PATHS = new Set(['/account/two-factor', '/account/two-factor/qr.svg', '/account/two-factor/start', '/account/two-factor/confirm', '/sign-out']);
export const ENROLMENT_PAGE = '/app/account/two-factor';

/**
 * A signed-in request's context. Without a current session: the sign-in page at /app, a
 * redirect there from any other page, 401 to a script.
 */
function requireSession(deps: Deps): RequestHandler {
  return async (req, res, next) => {
    const session = await findSession(deps.db, deps.config, req);
    if (!session) {
      if (req.accepts(['html', 'json']) === 'json') {
        res.status(401).json({ status: 'failed', errors: ['Signed out: sign in again.'] });
      } else if (req.method === 'GET' && req.path === '/') {
        // A cookie that names no current session: it ended (idle, keys rotated), say so once.
        const ended = Boolean(readCookies(req)[SESSION_COOKIE]);
        if (ended) setCookie(res, deps.config, SESSION_COOKIE, '', 0);
        signInPage(res, deps, req, 200, ended ? { notice: 'Your session has ended. Sign in again.' } : {});
      } else {
        res.redirect(303, '/app');
      }
      return;
    }
    if (session.mustEnrol && !ENROLMENT_PATHS.has(req.path)) {
      // The account requires a second factor and this user has none yet: set it up first.
      if (req.accepts(['html', 'json']) === 'json') res.status(403).json({ status: 'failed', errors: ['Your account requires a second factor: set one up first.'] });
      else res.redirect(303, ENROLMENT_PAGE);
      return;
    }
    const wanted = readCookies(req)[TZ_COOKIE];
    const tz = wanted && (await knownTimeZone(deps.db, wanted)) ? wanted : 'UTC';
    const actor = sessionActor(session, req.ip ?? req.socket.remoteAddress ?? null);
    const p: PageContext = { session, ctx: { userId: session.userId, db: deps.db, actor }, tz, deps };
    res.locals.page = p;
    next();
  };
}

/** Every state-changing request carries the session's CSRF token (a form field or X-CSRF-Token). */
const requireCsrf: RequestHandler = (req, res, next) => {
  const presented = req.get('X-CSRF-Token') ?? (req.body as Record<string, unknown> | undefined)?._csrf;
  if (sameToken(presented, pageContext(res).session.csrf)) {
    next();
    return;
  }
  sendPage(
    res,
    403,
    <MessagePage title="Refused" csrf={pageContext(res).session.csrf}>
      <p>This request did not carry the page’s security token. Reload the page and try again.</p>
    </MessagePage>,
  );
};

export function mountDashboard(app: Express, deps: Deps): void {
  const r = express.Router();
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });
  const largeForm = express.urlencoded({ extended: false, limit: deps.config.designBodyLimitBytes, parameterLimit: 2000 });
  const signedIn = requireSession(deps);
  const kit: DashboardKit = { router: r, deps, signedIn, requireCsrf, form: express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 200 }), largeForm };

  // Every answer under /app carries the page headers (redirects and scripts' JSON too).
  r.use((_req, res, next) => {
    res.set(PAGE_HEADERS);
    next();
  });
  r.use('/assets', (_req, res, next) => {
    res.set('Cache-Control', 'public, max-age=86400');
    next();
  });
  r.get('/assets/vendor/chart.umd.min.js', (_req, res) => res.sendFile(CHART_JS, { maxAge: '1d', headers: { 'Cache-Control': 'public, max-age=86400' } }));
  r.use('/assets', express.static(path.join(ASSETS_DIR, 'dashboard'), { index: false, dotfiles: 'deny', maxAge: '1d' }));

  const signedInTo = (res: Response, value: string) => {
    setCookie(res, deps.config, SESSION_COOKIE, value);
    setCookie(res, deps.config, SIGN_IN_COOKIE, '', 0);
    res.redirect(303, '/app');
  };
  const tooMany = (req: Request, res: Response, seconds: number) => {
    res.set('Retry-After', String(seconds));
    signInPage(res, deps, req, 429, { error: `Too many failed sign-ins from your address. Try again in ${Math.ceil(seconds / 60)} minutes.` });
  };

  r.post('/sign-in', form, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (!sameToken(body._csrf, readCookies(req)[SIGN_IN_COOKIE])) {
      signInPage(res, deps, req, 403, { error: 'The form had expired. Sign in again.' });
      return;
    }
    const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
    const text = (name: string) => (typeof body[name] === 'string' ? (body[name] as string) : '');
    if (body.public_key !== undefined) {
      // The account's keys (scripts and set-ups from before users): acts as the owner.
      const outcome = await signIn(deps.db, deps.config, address, text('public_key').trim(), text('secret_key').trim());
      if (outcome.ok) signedInTo(res, outcome.cookie);
      else if (outcome.retryAfterSeconds) tooMany(req, res, outcome.retryAfterSeconds);
      else signInPage(res, deps, req, 401, { error: 'Invalid PublicKey or SecretKey', keysError: true });
      return;
    }
    const outcome = await signInWithPassword(deps.db, deps.config, address, { email: text('email'), password: text('password'), code: text('code') });
    if (outcome.ok) signedInTo(res, outcome.cookie);
    else if (outcome.retryAfterSeconds) tooMany(req, res, outcome.retryAfterSeconds);
    else signInPage(res, deps, req, 401, { error: SIGN_IN_REFUSED, email: text('email').trim().slice(0, 320) });
  });

  r.post('/sign-out', form, signedIn, requireCsrf, async (req, res) => {
    await signOut(deps.db, req);
    setCookie(res, deps.config, SESSION_COOKIE, '', 0);
    res.redirect(303, '/app');
  });

  // Each area registers its own pages (src/dashboard/pages/*): one file per area.
  mountAccountPages(kit);
  mountSendPages(kit);
  mountDesignPages(kit);
  mountAudiencePages(kit);
  mountFormPages(kit);
  mountAutomationPages(kit);
  mountSenderPages(kit);
  mountTeamPages(kit);
  mountActivityPages(kit);
  mountOverviewAndSettingsPages(kit);

  // Anything else under /app: a page, not the API's JSON.
  r.use((_req, res) => {
    sendPage(
      res,
      404,
      <MessagePage title="Not found">
        <p>
          There is no such page. <a href="/app">Go to the overview</a>.
        </p>
      </MessagePage>,
    );
  });
  // express recognises error middleware by its four parameters.
  r.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = toAppError(err);
    if (e.status >= 500) (req.log ?? deps.logger).error({ err }, 'dashboard request failed');
    if (res.headersSent) return;
    res.set(e.headers);
    if (req.accepts(['html', 'json']) === 'json') {
      res.status(e.status).json({ status: 'failed', errors: errorLines(e.errors) });
      return;
    }
    sendPage(
      res,
      e.status,
      <MessagePage title={e.status >= 500 ? 'Something went wrong' : 'Refused'}>
        <ul class="errors">
          {(e.status >= 500 ? ['Please try again in a few minutes.'] : errorLines(e.errors)).map((line) => (
            <li>{line}</li>
          ))}
        </ul>
        <p>
          <a href="/app">Go to the overview</a>
        </p>
      </MessagePage>,
    );
  });
  app.use('/app', r);
}
