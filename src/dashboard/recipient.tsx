import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { ComponentChildren, VNode } from 'preact';
import { pageHeaders } from '../http/page-headers';
import { VERSION } from '../paths';
import { sendPage } from './respond';

/**
 * The pages a recipient sees, without keys or session (preferences and unsubscribe, sender
 * verification, signup forms and their confirmation, the answers to a link that no longer
 * works): the dashboard's page layer without its navigation. Rendered by preact, which writes
 * every value as text; styled by one stylesheet of this origin (assets/dashboard/recipient.css);
 * sent under the dashboard's strict CSP, with no inline style or script anywhere.
 */

const asset = (name: string) => `/app/assets/${name}?v=${VERSION}`;

export interface RecipientPage {
  /** The document's title (the page's own heading is part of `body`). */
  title: string;
  body: VNode;
  /**
   * Origins a form of this page may be answered from (added to `form-action`): a form whose POST
   * answers with a redirect to a configured success or confirm URL on another origin needs that
   * origin here, since Chromium applies `form-action` to the redirect too.
   */
  formAction?: string[];
  /** Script files under /app/assets (modules); without them the policy has no `script-src` at all. */
  scripts?: string[];
}

export function RecipientLayout({ title, scripts = [], children }: { title: string; scripts?: string[]; children: ComponentChildren }) {
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="robots" content="noindex" />
        <title>{title}</title>
        <link rel="stylesheet" href={asset('recipient.css')} />
        {scripts.map((s) => (
          <script type="module" src={asset(s)} />
        ))}
      </head>
      <body>
        <main>
          <Card>{children}</Card>
        </main>
      </body>
    </html>
  );
}

/**
 * The headers of a recipient page: the strict policy, without `script-src`/`connect-src` when the
 * page runs no script; no referrer (a page's URL carries its token).
 */
export function recipientHeaders({ formAction = [], scripts = [] }: Pick<RecipientPage, 'formAction' | 'scripts'> = {}): Record<string, string> {
  const widen = formAction.length ? { 'form-action': formAction.join(' ') } : {};
  return { ...pageHeaders(widen, scripts.length ? [] : ['script-src', 'connect-src']), 'Referrer-Policy': 'no-referrer' };
}

/** THE way a recipient page leaves. */
export function sendRecipientPage(res: Response, status: number, { title, body, formAction, scripts }: RecipientPage): void {
  sendPage(
    res,
    status,
    <RecipientLayout title={title} scripts={scripts}>
      {body}
    </RecipientLayout>,
    recipientHeaders({ formAction, scripts }),
  );
}

/** A page that only says something: its title as the heading, then a paragraph per line. */
export function sendRecipientMessage(res: Response, status: number, title: string, ...lines: ComponentChildren[]): void {
  sendRecipientPage(res, status, {
    title,
    body: (
      <>
        <Heading>{title}</Heading>
        {lines.map((line) => (
          <Text>{line}</Text>
        ))}
      </>
    ),
  });
}

/**
 * Recipient pages answer with a page, not the API's JSON, even when something fails (the
 * database is down, say): the person gets a readable "try again" (503).
 */
export function pageErrors(fn: (req: Request, res: Response) => Promise<void>): RequestHandler {
  return (req: Request, res: Response, _next: NextFunction) => {
    fn(req, res).catch((err) => {
      req.log?.error({ err }, 'page failed');
      if (!res.headersSent) {
        sendRecipientPage(res, 503, {
          title: 'Please try again',
          body: (
            <>
              <Heading>Something went wrong</Heading>
              <Text>Please try again in a few minutes.</Text>
            </>
          ),
        });
      }
    });
  };
}

// The pieces recipient pages are made of.

export const Card = ({ children }: { children: ComponentChildren }) => <div class="card">{children}</div>;

/** The page's heading; `ok` colours it as a success. */
export const Heading = ({ children, ok }: { children: ComponentChildren; ok?: boolean }) => <h1 class={ok ? 'ok' : undefined}>{children}</h1>;

export const Text = ({ children }: { children: ComponentChildren }) => <p>{children}</p>;

/** A small grey remark. */
export const Note = ({ children }: { children: ComponentChildren }) => <p class="muted">{children}</p>;

/** What an action just did ("Your preferences have been saved."), announced to screen readers. */
export const Notice = ({ children }: { children: ComponentChildren }) => (
  <p class="ok" role="status">
    {children}
  </p>
);

/** A form that POSTs to `action` (a path of this origin). */
export const PostForm = ({ action, children }: { action: string; children: ComponentChildren }) => (
  <form method="post" action={action}>
    {children}
  </form>
);

export const Hidden = ({ name, value }: { name: string; value: string }) => <input type="hidden" name={name} value={value} />;

export interface Choice {
  value: string;
  label: ComponentChildren;
  hint?: ComponentChildren;
  checked?: boolean;
}

/** A fieldset of checkboxes or radios, each a whole clickable row; `empty` when there are none. */
export function ChoiceList({ legend, name, type = 'checkbox', choices, empty, required }: { legend: string; name: string; type?: 'checkbox' | 'radio'; choices: Choice[]; empty?: string; required?: boolean }) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {choices.length === 0 && empty ? <p class="muted">{empty}</p> : null}
      {choices.map((c) => (
        <label class="choice">
          <input type={type} name={name} value={c.value} checked={c.checked} required={required && type === 'radio' ? true : undefined} />
          <span>
            {c.label}
            {c.hint !== undefined ? <span class="hint">{c.hint}</span> : null}
          </span>
        </label>
      ))}
    </fieldset>
  );
}

/** One checkbox on its own (a consent), as a clickable row. */
export function Checkbox({ name, value = '1', label, hint, checked, required }: { name: string; value?: string; label: ComponentChildren; hint?: ComponentChildren; checked?: boolean; required?: boolean }) {
  return (
    <label class="choice">
      <input type="checkbox" name={name} value={value} checked={checked} required={required} />
      <span>
        {label}
        {hint !== undefined ? <span class="hint">{hint}</span> : null}
      </span>
    </label>
  );
}

/** A labelled text input; `error` marks it invalid and is read with it. */
export function TextField({
  name,
  label,
  type = 'text',
  value,
  error,
  required,
  autoComplete,
}: {
  name: string;
  label: ComponentChildren;
  type?: 'text' | 'email' | 'tel' | 'url' | 'number' | 'date';
  value?: string;
  error?: string;
  required?: boolean;
  autoComplete?: string;
}) {
  const id = `field-${name}`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} name={name} type={type} value={value} required={required} autoComplete={autoComplete} aria-invalid={error ? 'true' : undefined} aria-describedby={error ? `${id}-error` : undefined} />
      {error ? (
        <p class="error" id={`${id}-error`}>
          {error}
        </p>
      ) : null}
    </div>
  );
}

export const PrimaryButton = ({ children }: { children: ComponentChildren }) => <button type="submit">{children}</button>;
