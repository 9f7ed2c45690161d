import { createContext, type ComponentChildren } from 'preact';
import { useContext } from 'preact/hooks';
import { VERSION } from '../paths';
import { can, type Permission, type Role } from '../team/permissions';

/**
 * The frame of every dashboard page. Pages are rendered on the server with preact's
 * renderer, which writes every value as text (escaped); nothing here takes raw HTML. The
 * scripts are files of the package (no inline script: the CSP allows only 'self').
 */
export const NAV = [
  { key: 'overview', href: '/app', label: 'Overview' },
  { key: 'sends', href: '/app/sends', label: 'Sends' },
  { key: 'designs', href: '/app/designs', label: 'Designs' },
  { key: 'contacts', href: '/app/contacts', label: 'Contacts' },
  { key: 'forms', href: '/app/forms', label: 'Forms' },
  { key: 'automations', href: '/app/automations', label: 'Automations' },
  { key: 'senders', href: '/app/senders', label: 'Senders' },
  { key: 'deliverability', href: '/app/deliverability', label: 'Deliverability' },
  { key: 'webhooks', href: '/app/webhooks', label: 'Webhooks' },
  // Shown only to roles that may open them (the pages refuse the others anyway).
  { key: 'team', href: '/app/team', label: 'Team', permission: 'users:manage' },
  { key: 'activity', href: '/app/activity', label: 'Activity', permission: 'audit:read' },
] as const satisfies ReadonlyArray<{ key: string; href: string; label: string; permission?: Permission }>;
export type NavKey = (typeof NAV)[number]['key'];

/** Who the page's session signs in as (an email, or "API keys") and their role: sendPage provides it from the request. */
export const SignedInAs = createContext<{ label: string; role: Role } | undefined>(undefined);

const asset = (name: string) => `/app/assets/${name}?v=${VERSION}`;

interface LayoutProps {
  title: string;
  /** Signed in: the navigation, the sign-out button and the CSRF token for scripts. */
  csrf?: string;
  active?: NavKey;
  /** Pages with charts load Chart.js. */
  charts?: boolean;
  /** A page's own scripts and style sheets: file names under /app/assets (modules, no inline script). */
  scripts?: string[];
  styles?: string[];
  children: ComponentChildren;
}

export function Layout({ title, csrf, active, charts, scripts = [], styles = [], children }: LayoutProps) {
  const signedIn = useContext(SignedInAs);
  const who = signedIn?.label;
  const nav = NAV.filter((n) => !('permission' in n) || (signedIn !== undefined && can(signedIn.role, n.permission)));
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <meta name="color-scheme" content="light dark" />
        {csrf ? <meta name="csrf-token" content={csrf} /> : null}
        <title>{`${title} · Herald`}</title>
        <link rel="icon" href={asset('icon.svg')} type="image/svg+xml" />
        <link rel="stylesheet" href={asset('app.css')} />
        {styles.map((s) => (
          <link rel="stylesheet" href={asset(s)} />
        ))}
        {charts ? <script src={asset('vendor/chart.umd.min.js')} defer /> : null}
        <script type="module" src={asset('app.js')} />
        {scripts.map((s) => (
          <script type="module" src={asset(s)} />
        ))}
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <a class="brand" href="/app">
            Herald
          </a>
          {csrf ? (
            <>
              <nav aria-label="Dashboard">
                <ul>
                  {nav.map((n) => (
                    <li key={n.key}>
                      <a href={n.href} aria-current={n.key === active ? 'page' : undefined}>
                        {n.label}
                      </a>
                    </li>
                  ))}
                </ul>
              </nav>
              <p class="who">
                <a href="/app/account" aria-label={`Your account${who ? `: signed in as ${who}` : ''}`}>
                  {who ?? 'Your account'}
                </a>
              </p>
              <form method="post" action="/app/sign-out" class="sign-out">
                <input type="hidden" name="_csrf" value={csrf} />
                <button type="submit">Sign out</button>
              </form>
            </>
          ) : null}
        </header>
        <main id="main" tabIndex={-1}>
          {children}
        </main>
      </body>
    </html>
  );
}

/** A CSRF field for a form of a signed-in page. */
export const Csrf = ({ token }: { token: string }) => <input type="hidden" name="_csrf" value={token} />;

/**
 * An action: a one-button form that POSTs (with the CSRF token) to `action`. `label` is what the
 * button says, `name` what it acts on (its accessible name: the label, then the name).
 */
export function PostButton({ action, csrf, label, name, fields = {} }: { action: string; csrf: string; label: string; name: string; fields?: Record<string, string> }) {
  return (
    <form method="post" action={action} class="inline">
      <Csrf token={csrf} />
      {Object.entries(fields).map(([k, v]) => (
        <input type="hidden" name={k} value={v} />
      ))}
      <button type="submit" aria-label={`${label}: ${name}`}>
        {label}
      </button>
    </form>
  );
}

export function SignInPage({ token, error, notice, email, keysError }: { token: string; error?: string; notice?: string; email?: string; keysError?: boolean }) {
  return (
    <Layout title="Sign in">
      <section class="card narrow">
        <h1>Sign in</h1>
        {notice ? <p class="notice" role="status">{notice}</p> : null}
        {error && !keysError ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        <form method="post" action="/app/sign-in" class="stack">
          <input type="hidden" name="_csrf" value={token} />
          <label for="email">Email</label>
          <input id="email" name="email" type="email" autoComplete="username" spellcheck={false} value={email ?? ''} required />
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autoComplete="current-password" required />
          <label for="code">Code</label>
          <input id="code" name="code" type="text" inputMode="numeric" autoComplete="one-time-code" spellcheck={false} aria-describedby="code-hint" />
          <p id="code-hint" class="muted">
            If you set up a second factor: the code your authenticator app shows, or one of your recovery codes.
          </p>
          <button type="submit">Sign in</button>
        </form>
        <p>
          <a href="/app/reset">Forgot your password?</a>
        </p>
      </section>
      <section class="card narrow" aria-labelledby="keys-title">
        <h2 id="keys-title">Sign in with the account’s keys</h2>
        <p class="muted">For scripts and set-ups from before users: the PublicKey and SecretKey the API takes. You act as the account’s owner.</p>
        {error && keysError ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        <form method="post" action="/app/sign-in" class="stack">
          <input type="hidden" name="_csrf" value={token} />
          <label for="public_key">PublicKey</label>
          <input id="public_key" name="public_key" type="text" autoComplete="off" spellcheck={false} required />
          <label for="secret_key">SecretKey</label>
          <input id="secret_key" name="secret_key" type="password" autoComplete="off" required />
          <button type="submit">Sign in with the keys</button>
        </form>
      </section>
    </Layout>
  );
}

/** A page that only says something: not found, refused, an action's answer. */
export function MessagePage({ title, csrf, active, children }: { title: string; csrf?: string; active?: NavKey; children: ComponentChildren }) {
  return (
    <Layout title={title} csrf={csrf} active={active}>
      <h1>{title}</h1>
      {children}
    </Layout>
  );
}
