import type { Request, Response } from 'express';
import type { ComponentChildren } from 'preact';
import QRCode from 'qrcode';
import type { Deps } from '../../context';
import { findMember, peekToken } from '../../team/members';
import { MIN_PASSWORD } from '../../team/passwords';
import {
  changeName,
  changePassword,
  completeReset,
  completeWelcome,
  confirmTwoFactor,
  disableTwoFactor,
  LINK_GONE,
  regenerateRecoveryCodes,
  requestReset,
  RESET_ANSWER,
  SecurityError,
  startTwoFactor,
  twoFactorState,
  TWO_FACTOR_REQUIRED,
  type TwoFactorState,
} from '../../team/security';
import { emptyForm, ErrorSummary, Field, type FormState } from '../form-kit';
import { Csrf, Layout, MessagePage, PostButton } from '../layout';
import { page, PAGE_HEADERS, sendPage, type DashboardKit, type PageContext } from '../respond';
import { readCookies, sameToken, SESSION_COOKIE, setCookie, SIGN_IN_COOKIE, signInToken, signOutEverywhere } from '../session';

/**
 * A user's own pages (issue 37, docs/decisions.md "Teams"): "Your account" (name, password, the
 * second factor, sign out everywhere) behind the session, and the one-time links' pages — the
 * setup or invitation link (/app/welcome/<token>) and password reset (/app/reset, /app/reset/<token>)
 * — before any session, their forms guarded like the sign-in form (a token matching a cookie).
 * A password typed is never written back into a page; a TOTP secret only to its own user while
 * they set it up; recovery codes once.
 */

const PASSWORD_HINT = `At least ${MIN_PASSWORD} characters.`;
const CONFIRM_MISMATCH = 'The password confirmation does not match.';

/** A refusal as the form's messages (SecurityError), anything else thrown on. */
function refusal(err: unknown): FormState['errors'] {
  if (err instanceof SecurityError) return { [err.field]: [err.message] };
  throw err;
}

const text = (body: unknown, name: string): string => {
  const v = (body as Record<string, unknown> | undefined)?.[name];
  return typeof v === 'string' ? v : '';
};

function confirmed(body: unknown): void {
  if (text(body, 'password') !== text(body, 'password_confirmation')) throw new SecurityError('password_confirmation', CONFIRM_MISMATCH);
}

const address = (req: Request) => req.ip ?? req.socket.remoteAddress ?? null;

// ---- the links' pages (no session) ----

/** The form token of a page before sign-in (the sign-in form's cookie). */
function formToken(req: Request, res: Response, deps: Deps): string {
  const { token, fresh } = signInToken(req);
  if (fresh) setCookie(res, deps.config, SIGN_IN_COOKIE, token);
  return token;
}

function OpenPage({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <Layout title={title}>
      <section class="card narrow">
        <h1>{title}</h1>
        {children}
      </section>
    </Layout>
  );
}

function linkGone(res: Response): void {
  sendPage(
    res,
    404,
    <OpenPage title="Link not recognised">
      <p>{LINK_GONE}</p>
      <p>
        <a href="/app/reset">Ask for a password reset link</a> · <a href="/app">Sign in</a>
      </p>
    </OpenPage>,
  );
}

function formExpired(res: Response): void {
  sendPage(
    res,
    403,
    <OpenPage title="Refused">
      <p class="error" role="alert">
        The form had expired. Reload the page and try again.
      </p>
    </OpenPage>,
  );
}

function WelcomeForm({ token, action, state, purpose, email }: { token: string; action: string; state: FormState; purpose: 'setup' | 'invite'; email: string }) {
  const fields = purpose === 'setup' ? ['name', 'email', 'password', 'password_confirmation'] : ['name', 'password', 'password_confirmation'];
  return (
    <OpenPage title={purpose === 'setup' ? 'Set up your user' : 'Accept the invitation'}>
      <p>{purpose === 'setup' ? 'Choose the address you sign in with, your name and a password.' : `You sign in as ${email}. Choose your name and a password.`}</p>
      <ErrorSummary state={state} fields={fields} />
      <form method="post" action={action} class="stack" novalidate>
        <input type="hidden" name="_csrf" value={token} />
        <Field state={state} name="name" label="Your name" required attrs={{ autocomplete: 'name', maxlength: 200 }} />
        {purpose === 'setup' ? <Field state={state} name="email" label="Email" type="email" required attrs={{ autocomplete: 'username', spellcheck: false }} /> : null}
        <Field state={state} name="password" label="Password" type="password" hint={PASSWORD_HINT} required attrs={{ autocomplete: 'new-password' }} />
        <Field state={state} name="password_confirmation" label="Password again" type="password" required attrs={{ autocomplete: 'new-password' }} />
        <button type="submit">{purpose === 'setup' ? 'Set up and sign in' : 'Accept and sign in'}</button>
      </form>
    </OpenPage>
  );
}

function ResetForm({ token, action, state }: { token: string; action: string; state: FormState }) {
  return (
    <OpenPage title="Choose a new password">
      <p>Every session of your user ends when it is changed.</p>
      <ErrorSummary state={state} fields={['password', 'password_confirmation']} />
      <form method="post" action={action} class="stack" novalidate>
        <input type="hidden" name="_csrf" value={token} />
        <Field state={state} name="password" label="New password" type="password" hint={PASSWORD_HINT} required attrs={{ autocomplete: 'new-password' }} />
        <Field state={state} name="password_confirmation" label="New password again" type="password" required attrs={{ autocomplete: 'new-password' }} />
        <button type="submit">Change the password</button>
      </form>
    </OpenPage>
  );
}

function ResetRequestForm({ token, notice }: { token: string; notice?: string }) {
  return (
    <OpenPage title="Reset your password">
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : (
        <p>Type the address you sign in with: a link to choose a new password is mailed to it.</p>
      )}
      <form method="post" action="/app/reset" class="stack">
        <input type="hidden" name="_csrf" value={token} />
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autoComplete="username" spellcheck={false} required />
        <button type="submit">Mail me a link</button>
      </form>
      <p>
        <a href="/app">Back to sign in</a>
      </p>
    </OpenPage>
  );
}

function mountLinkPages({ router: r, deps, form }: DashboardKit): void {
  r.get('/welcome/:token', async (req, res) => {
    const link = await peekToken(deps.db, String(req.params.token), ['setup', 'invite']);
    const m = link && (await findMember(deps.db, link.userId, link.memberId));
    if (!link || !m) return linkGone(res);
    const purpose = link.purpose === 'setup' ? 'setup' : 'invite';
    const state = emptyForm({ name: m.name, email: m.email });
    sendPage(res, 200, <WelcomeForm token={formToken(req, res, deps)} action={req.originalUrl} state={state} purpose={purpose} email={m.email} />);
  });

  r.post('/welcome/:token', form, async (req, res) => {
    if (!sameToken(text(req.body, '_csrf'), readCookies(req)[SIGN_IN_COOKIE])) return formExpired(res);
    const token = String(req.params.token);
    const link = await peekToken(deps.db, token, ['setup', 'invite']);
    const m = link && (await findMember(deps.db, link.userId, link.memberId));
    if (!link || !m) return linkGone(res);
    const purpose = link.purpose === 'setup' ? 'setup' : 'invite';
    try {
      confirmed(req.body);
      const done = await completeWelcome(
        deps.db,
        deps.config,
        token,
        { name: text(req.body, 'name'), password: text(req.body, 'password'), ...(purpose === 'setup' ? { email: text(req.body, 'email') } : {}) },
        address(req),
      );
      if (!done) return linkGone(res);
      setCookie(res, deps.config, SESSION_COOKIE, done.cookie);
      setCookie(res, deps.config, SIGN_IN_COOKIE, '', 0);
      res.redirect(303, '/app');
    } catch (err) {
      const state: FormState = { values: { name: text(req.body, 'name'), email: text(req.body, 'email') }, errors: refusal(err) };
      sendPage(res, 422, <WelcomeForm token={formToken(req, res, deps)} action={req.originalUrl} state={state} purpose={purpose} email={m.email} />);
    }
  });

  r.get('/reset', (req, res) => {
    sendPage(res, 200, <ResetRequestForm token={formToken(req, res, deps)} />);
  });

  r.post('/reset', form, (req, res) => {
    if (!sameToken(text(req.body, '_csrf'), readCookies(req)[SIGN_IN_COOKIE])) return formExpired(res);
    // The answer does not wait for the look-up or the mail: the same words, in the same time, for every address.
    requestReset(deps, text(req.body, 'email')).catch((err: unknown) => deps.logger.warn({ err: (err as Error).message }, 'password reset mail could not be sent'));
    sendPage(res, 200, <ResetRequestForm token={formToken(req, res, deps)} notice={RESET_ANSWER} />);
  });

  r.get('/reset/:token', async (req, res) => {
    if (!(await peekToken(deps.db, String(req.params.token), ['reset']))) return linkGone(res);
    sendPage(res, 200, <ResetForm token={formToken(req, res, deps)} action={req.originalUrl} state={emptyForm()} />);
  });

  r.post('/reset/:token', form, async (req, res) => {
    if (!sameToken(text(req.body, '_csrf'), readCookies(req)[SIGN_IN_COOKIE])) return formExpired(res);
    const token = String(req.params.token);
    if (!(await peekToken(deps.db, token, ['reset']))) return linkGone(res);
    try {
      confirmed(req.body);
      const done = await completeReset(deps.db, deps.config, token, text(req.body, 'password'), address(req));
      if (!done) return linkGone(res);
      setCookie(res, deps.config, SESSION_COOKIE, '', 0);
      sendPage(
        res,
        200,
        <OpenPage title="Password changed">
          <p class="notice" role="status">
            Your password is changed, and every session of your user has ended.
          </p>
          <p>
            <a href="/app">Sign in with the new password</a>
          </p>
        </OpenPage>,
      );
    } catch (err) {
      sendPage(res, 422, <ResetForm token={formToken(req, res, deps)} action={req.originalUrl} state={{ values: {}, errors: refusal(err) }} />);
    }
  });
}

// ---- your account (signed in) ----

function KeysSession({ csrf }: { csrf: string }) {
  return (
    <MessagePage title="Your account" csrf={csrf}>
      <p>You signed in with the account’s keys, and act as its owner. There is no user, password or second factor to change here.</p>
      <p>Users sign in with their email and password; the owner invites them from the Team page.</p>
      <h2>Sessions</h2>
      <p>End every session opened with the account’s keys, this one too.</p>
      <PostButton action="/app/account/sign-out-everywhere" csrf={csrf} label="Sign out everywhere" name="every session opened with the keys" />
    </MessagePage>
  );
}

interface AccountForms {
  name?: FormState;
  password?: FormState;
}

async function accountPage(_req: Request, res: Response, p: PageContext, status = 200, forms: AccountForms = {}, notice?: string): Promise<void> {
  const { session } = p;
  if (session.memberId === null) return sendPage(res, status, <KeysSession csrf={session.csrf} />);
  const m = await findMember(p.deps.db, session.userId, session.memberId);
  if (!m) return sendPage(res, 404, <MessagePage title="Not found" csrf={session.csrf}><p>There is no such user.</p></MessagePage>);
  const nameState = forms.name ?? emptyForm({ name: m.name });
  const passwordState = forms.password ?? emptyForm();
  sendPage(
    res,
    status,
    <Layout title="Your account" csrf={session.csrf}>
      <h1>Your account</h1>
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      <p>
        You sign in as <strong>{m.email}</strong>, with the role <strong>{m.role}</strong>.
      </p>
      <section class="card" aria-labelledby="name-title">
        <h2 id="name-title">Name</h2>
        <ErrorSummary state={nameState} fields={['name']} />
        <form method="post" action="/app/account/name" class="stack" novalidate>
          <Csrf token={session.csrf} />
          <Field state={nameState} name="name" label="Your name" required attrs={{ autocomplete: 'name', maxlength: 200 }} />
          <button type="submit">Save the name</button>
        </form>
      </section>
      <section class="card" aria-labelledby="password-title">
        <h2 id="password-title">Password</h2>
        <p class="muted">Changing it ends your other sessions; this one stays.</p>
        <ErrorSummary state={passwordState} fields={['current_password', 'password', 'password_confirmation']} />
        <form method="post" action="/app/account/password" class="stack" novalidate>
          <Csrf token={session.csrf} />
          <input type="text" name="username" value={m.email} autoComplete="username" hidden aria-hidden="true" tabIndex={-1} readOnly />
          <Field state={passwordState} name="current_password" label="Current password" type="password" required attrs={{ autocomplete: 'current-password' }} />
          <Field state={passwordState} name="password" label="New password" type="password" hint={PASSWORD_HINT} required attrs={{ autocomplete: 'new-password' }} />
          <Field state={passwordState} name="password_confirmation" label="New password again" type="password" required attrs={{ autocomplete: 'new-password' }} />
          <button type="submit">Change the password</button>
        </form>
      </section>
      <section class="card" aria-labelledby="two-factor-title">
        <h2 id="two-factor-title">Two-factor sign-in</h2>
        <p>{m.two_factor ? `On: you sign in with a code from your authenticator app. ${m.recovery_codes.length} recovery codes left.` : 'Off: you sign in with your password alone.'}</p>
        <p>
          <a href="/app/account/two-factor">{m.two_factor ? 'Manage two-factor sign-in' : 'Set up two-factor sign-in'}</a>
        </p>
      </section>
      <section class="card" aria-labelledby="sessions-title">
        <h2 id="sessions-title">Sessions</h2>
        <p>End every session of your user, in every browser, this one too.</p>
        <PostButton action="/app/account/sign-out-everywhere" csrf={session.csrf} label="Sign out everywhere" name="every session of your user" />
      </section>
    </Layout>,
  );
}

interface TwoFactorForms {
  confirm?: FormState;
  recovery?: FormState;
  off?: FormState;
}

function TwoFactorPage({ p, state, forms = {}, notice }: { p: PageContext; state: TwoFactorState; forms?: TwoFactorForms; notice?: string }) {
  const csrf = p.session.csrf;
  const confirm = forms.confirm ?? emptyForm();
  const recovery = forms.recovery ?? emptyForm();
  const off = forms.off ?? emptyForm();
  return (
    <Layout title="Two-factor sign-in" csrf={csrf}>
      <h1>Two-factor sign-in</h1>
      {p.session.mustEnrol ? (
        <p class="notice" role="status">
          Your account requires a second factor: set one up to go on.
        </p>
      ) : null}
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      {state.enabled ? (
        <>
          <p>On: you sign in with your password and a code from your authenticator app. {state.recoveryCodesLeft} recovery codes left.</p>
          <section class="card" aria-labelledby="recovery-title">
            <h2 id="recovery-title">New recovery codes</h2>
            <p class="muted">Ten new codes; the old ones stop working. Type a code from your app to confirm.</p>
            <ErrorSummary state={recovery} fields={['code']} />
            <form method="post" action="/app/account/two-factor/recovery-codes" class="stack" novalidate>
              <Csrf token={csrf} />
              <Field state={recovery} name="code" id="field-code-recovery" label="Code" required attrs={{ autocomplete: 'one-time-code', inputmode: 'numeric', spellcheck: false }} />
              <button type="submit">Make new recovery codes</button>
            </form>
          </section>
          <section class="card" aria-labelledby="off-title">
            <h2 id="off-title">Turn off</h2>
            {state.required ? (
              <>
                <ErrorSummary state={off} />
                <p>{TWO_FACTOR_REQUIRED}</p>
              </>
            ) : (
              <>
                <p class="muted">You will sign in with your password alone. Type a code from your app to confirm.</p>
                <ErrorSummary state={off} fields={['code']} />
                <form method="post" action="/app/account/two-factor/disable" class="stack" novalidate>
                  <Csrf token={csrf} />
                  <Field state={off} name="code" id="field-code-off" label="Code" required attrs={{ autocomplete: 'one-time-code', inputmode: 'numeric', spellcheck: false }} />
                  <button type="submit">Turn off two-factor sign-in</button>
                </form>
              </>
            )}
          </section>
        </>
      ) : state.pending ? (
        <section class="card" aria-labelledby="setup-title">
          <h2 id="setup-title">Set up</h2>
          <ol>
            <li>
              <p>Scan this QR code with your authenticator app:</p>
              <img class="qr" src="/app/account/two-factor/qr.svg" alt="QR code of your two-factor secret, for an authenticator app" width="224" height="224" />
              <p>
                Or type this secret into it: <code class="secret">{state.pending.secret}</code>
              </p>
            </li>
            <li>
              <p>Type the code the app shows to turn two-factor sign-in on.</p>
              <ErrorSummary state={confirm} fields={['code']} />
              <form method="post" action="/app/account/two-factor/confirm" class="stack" novalidate>
                <Csrf token={csrf} />
                <Field state={confirm} name="code" label="Code" required attrs={{ autocomplete: 'one-time-code', inputmode: 'numeric', spellcheck: false }} />
                <button type="submit">Turn on</button>
              </form>
            </li>
          </ol>
          <PostButton action="/app/account/two-factor/start" csrf={csrf} label="Start again with a new secret" name="two-factor sign-in" />
        </section>
      ) : (
        <section class="card" aria-labelledby="setup-title">
          <h2 id="setup-title">Set up</h2>
          <p>Besides your password, sign in with a code from an authenticator app on your phone (any app for TOTP codes).</p>
          <PostButton action="/app/account/two-factor/start" csrf={csrf} label="Set up two-factor sign-in" name="with an authenticator app" />
        </section>
      )}
      {p.session.mustEnrol ? null : (
        <p>
          <a href="/app/account">Back to your account</a>
        </p>
      )}
    </Layout>
  );
}

function RecoveryCodesPage({ csrf, codes, title }: { csrf: string; codes: string[]; title: string }) {
  return (
    <MessagePage title={title} csrf={csrf}>
      <p class="notice" role="status">
        Keep these ten recovery codes somewhere safe: each signs you in once, in place of a code from your app. They are shown only now.
      </p>
      <ul class="recovery-codes" aria-label="Recovery codes">
        {codes.map((c) => (
          <li>
            <code>{c}</code>
          </li>
        ))}
      </ul>
      <p>
        <a href="/app/account">I have kept them: back to your account</a>
      </p>
    </MessagePage>
  );
}

async function twoFactorPage(res: Response, p: PageContext, status = 200, forms: TwoFactorForms = {}, notice?: string): Promise<void> {
  if (p.session.memberId === null) return sendPage(res, 200, <KeysSession csrf={p.session.csrf} />);
  const state = await twoFactorState(p.deps.db, p.deps.config, p.session.userId, p.ctx.actor!);
  sendPage(res, status, <TwoFactorPage p={p} state={state} forms={forms} notice={notice} />);
}

function mountAccountOwnPages({ router: r, deps, signedIn, requireCsrf, form }: DashboardKit): void {
  const actorOf = (p: PageContext) => p.ctx.actor!;

  r.get('/account', signedIn, page((req, res, p) => accountPage(req, res, p)));

  r.post(
    '/account/name',
    form,
    signedIn,
    requireCsrf,
    page(async (req, res, p) => {
      try {
        await changeName(deps.db, p.session.userId, actorOf(p), text(req.body, 'name'));
        await accountPage(req, res, p, 200, {}, 'Your name is saved.');
      } catch (err) {
        await accountPage(req, res, p, 422, { name: { values: { name: text(req.body, 'name') }, errors: refusal(err) } });
      }
    }),
  );

  r.post(
    '/account/password',
    form,
    signedIn,
    requireCsrf,
    page(async (req, res, p) => {
      try {
        confirmed(req.body);
        const ended = await changePassword(deps.db, deps.config, p.session.userId, actorOf(p), { current: text(req.body, 'current_password'), password: text(req.body, 'password') }, p.session.tokenHash);
        await accountPage(req, res, p, 200, {}, `Your password is changed. ${ended === 1 ? 'One other session' : `${ended} other sessions`} ended.`);
      } catch (err) {
        await accountPage(req, res, p, 422, { password: { values: {}, errors: refusal(err) } });
      }
    }),
  );

  r.post(
    '/account/sign-out-everywhere',
    form,
    signedIn,
    requireCsrf,
    page(async (_req, res, p) => {
      await signOutEverywhere(deps.db, p.session, actorOf(p));
      setCookie(res, deps.config, SESSION_COOKIE, '', 0);
      res.redirect(303, '/app');
    }),
  );

  r.get('/account/two-factor', signedIn, page((_req, res, p) => twoFactorPage(res, p)));

  r.get(
    '/account/two-factor/qr.svg',
    signedIn,
    page(async (_req, res, p) => {
      const state = p.session.memberId === null ? undefined : await twoFactorState(deps.db, deps.config, p.session.userId, actorOf(p));
      if (!state?.pending) {
        res.status(404).set(PAGE_HEADERS).type('text/plain').send('Not found');
        return;
      }
      const svg = await QRCode.toString(state.pending.uri, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
      res.status(200).set(PAGE_HEADERS).type('image/svg+xml').send(svg);
    }),
  );

  r.post(
    '/account/two-factor/start',
    form,
    signedIn,
    requireCsrf,
    page(async (_req, res, p) => {
      try {
        await startTwoFactor(deps.db, deps.config, p.session.userId, actorOf(p));
        res.redirect(303, '/app/account/two-factor');
      } catch (err) {
        await twoFactorPage(res, p, 422, { confirm: { values: {}, errors: refusal(err) } });
      }
    }),
  );

  r.post(
    '/account/two-factor/confirm',
    form,
    signedIn,
    requireCsrf,
    page(async (req, res, p) => {
      try {
        const codes = await confirmTwoFactor(deps.db, deps.config, p.session.userId, actorOf(p), text(req.body, 'code'));
        sendPage(res, 200, <RecoveryCodesPage csrf={p.session.csrf} codes={codes} title="Two-factor sign-in is on" />);
      } catch (err) {
        await twoFactorPage(res, p, 422, { confirm: { values: {}, errors: refusal(err) } });
      }
    }),
  );

  r.post(
    '/account/two-factor/recovery-codes',
    form,
    signedIn,
    requireCsrf,
    page(async (req, res, p) => {
      try {
        const codes = await regenerateRecoveryCodes(deps.db, deps.config, p.session.userId, actorOf(p), text(req.body, 'code'));
        sendPage(res, 200, <RecoveryCodesPage csrf={p.session.csrf} codes={codes} title="New recovery codes" />);
      } catch (err) {
        await twoFactorPage(res, p, 422, { recovery: { values: {}, errors: refusal(err) } });
      }
    }),
  );

  r.post(
    '/account/two-factor/disable',
    form,
    signedIn,
    requireCsrf,
    page(async (req, res, p) => {
      try {
        await disableTwoFactor(deps.db, deps.config, p.session.userId, actorOf(p), text(req.body, 'code'));
        await twoFactorPage(res, p, 200, {}, 'Two-factor sign-in is off.');
      } catch (err) {
        await twoFactorPage(res, p, 422, { off: { values: {}, errors: refusal(err) } });
      }
    }),
  );
}

/** The links' pages and "Your account" (src/dashboard/index.tsx mounts them). */
export function mountAccountPages(kit: DashboardKit): void {
  mountLinkPages(kit);
  mountAccountOwnPages(kit);
}
