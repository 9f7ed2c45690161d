import path from 'node:path';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Deps } from '../context';
import { toAppError } from '../http/error-handler';
import { ASSETS_DIR } from '../paths';
import { knownTimeZone } from '../resources/reports/reports.service';
import { MessagePage, SignInPage } from './layout';
import { mountAudiencePages } from './pages/audience';
import { mountAutomationPages } from './pages/automations';
import { mountDesignPages } from './pages/designs';
import { mountFormPages } from './pages/forms';
import { mountSenderPages } from './pages/senders';
import { mountSendPages } from './pages/sends';
import { checkSenderAction, deliverabilityPage, liftSuppressionAction } from './pages/deliverability';
import { overviewPage } from './pages/overview';
import { testWebhookAction, webhookPage, webhooksPage } from './pages/webhooks';
import { errorLines, page, PAGE_HEADERS, pageContext, sendPage, type DashboardKit, type PageContext } from './respond';
import {
  findSession,
  readCookies,
  sameToken,
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

function signInPage(res: Response, deps: Deps, req: Request, status: number, opts: { error?: string; notice?: string } = {}): void {
  const { token, fresh } = signInToken(req);
  if (fresh) setCookie(res, deps.config, SIGN_IN_COOKIE, token);
  sendPage(res, status, <SignInPage token={token} error={opts.error} notice={opts.notice} />);
}

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
    const wanted = readCookies(req)[TZ_COOKIE];
    const tz = wanted && (await knownTimeZone(deps.db, wanted)) ? wanted : 'UTC';
    const p: PageContext = { session, ctx: { userId: session.userId, db: deps.db }, tz, deps };
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

  r.get('/', signedIn, page(overviewPage, 'overview'));

  r.post('/sign-in', form, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (!sameToken(body._csrf, readCookies(req)[SIGN_IN_COOKIE])) {
      signInPage(res, deps, req, 403, { error: 'The form had expired. Sign in again.' });
      return;
    }
    const publicKey = typeof body.public_key === 'string' ? body.public_key.trim() : '';
    const secretKey = typeof body.secret_key === 'string' ? body.secret_key.trim() : '';
    const outcome = await signIn(deps.db, deps.config, req.ip ?? req.socket.remoteAddress ?? 'unknown', publicKey, secretKey);
    if (outcome.ok) {
      setCookie(res, deps.config, SESSION_COOKIE, outcome.cookie);
      setCookie(res, deps.config, SIGN_IN_COOKIE, '', 0);
      res.redirect(303, '/app');
    } else if (outcome.retryAfterSeconds) {
      res.set('Retry-After', String(outcome.retryAfterSeconds));
      signInPage(res, deps, req, 429, { error: `Too many failed sign-ins from your address. Try again in ${Math.ceil(outcome.retryAfterSeconds / 60)} minutes.` });
    } else {
      signInPage(res, deps, req, 401, { error: 'Invalid PublicKey or SecretKey' });
    }
  });

  r.post('/sign-out', form, signedIn, requireCsrf, async (req, res) => {
    await signOut(deps.db, req);
    setCookie(res, deps.config, SESSION_COOKIE, '', 0);
    res.redirect(303, '/app');
  });

  // Each area registers its own pages (src/dashboard/pages/*): one file per area.
  mountSendPages(kit);
  mountDesignPages(kit);
  mountAudiencePages(kit);
  mountFormPages(kit);
  mountAutomationPages(kit);
  mountSenderPages(kit);
  r.get('/deliverability', signedIn, page(deliverabilityPage, 'deliverability'));
  r.post('/senders/:id/check', form, signedIn, requireCsrf, page(checkSenderAction, 'deliverability'));
  r.post('/suppressions/lift', form, signedIn, requireCsrf, page(liftSuppressionAction, 'deliverability'));
  r.get('/webhooks', signedIn, page(webhooksPage, 'webhooks'));
  r.get('/webhooks/:id', signedIn, page(webhookPage, 'webhooks'));
  r.post('/webhooks/:id/test', form, signedIn, requireCsrf, page(testWebhookAction, 'webhooks'));

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
