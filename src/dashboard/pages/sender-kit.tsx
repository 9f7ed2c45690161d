import type { Request } from 'express';
import type { ComponentChildren } from 'preact';
import type { FieldErrors } from '../../http/errors';
import type { RouteDef } from '../../http/routes';
import { ErrorSummary, type Choice, type FormState } from '../form-kit';
import { Csrf, Layout, type NavKey } from '../layout';

/**
 * Small pieces the settings pages share (senders, unsubscribe groups, automations): the API
 * route a form runs, what a form posted, a finished action's flash and a refused action's
 * messages at the top of the page it came from.
 */

/** An API route's definition by its path, from a resource's route list (form-kit.tsx `submitRoute` runs it). */
export function routeOf(defs: RouteDef[], path: string): RouteDef {
  const def = defs.find((d) => d.path === path);
  if (!def) throw new Error(`The API has no route ${path}`);
  return def;
}

/** What a form posted, without its CSRF token: the route's input, and the values shown again when it is refused. */
export function posted(req: Request): Record<string, unknown> {
  const { _csrf: _token, ...rest } = (req.body ?? {}) as Record<string, unknown>;
  return rest;
}

/** A finished action's sentence: `?done=<key>` names one of the page's own `texts`, anything else shows nothing. */
export function Flash({ req, texts }: { req: Request; texts: Record<string, string> }) {
  const key = typeof req.query.done === 'string' ? req.query.done : '';
  const text = Object.hasOwn(texts, key) ? texts[key] : undefined;
  return text ? (
    <p class="flash" role="status">
      {text}
    </p>
  ) : null;
}

/** An action without a form of its own was refused (delete in use, a mail that could not go): the API's words, at the top. */
export function Refusal({ errors }: { errors?: FieldErrors }) {
  const lines = errors ? Object.values(errors).flat() : [];
  if (lines.length === 0) return null;
  return (
    <div class="error-summary" role="alert" tabIndex={-1}>
      <h2>That was refused</h2>
      <ul>
        {lines.map((line) => (
          <li>{line}</li>
        ))}
      </ul>
    </div>
  );
}

/** A select's choices after an empty first one (`label` says what choosing nothing means). */
export const withNone = (label: string, choices: Choice[]): Choice[] => [{ value: '', label }, ...choices];

interface FormPageProps {
  /** The page's heading; `title` its document title when it says more. */
  heading: string;
  title?: string;
  active: NavKey;
  csrf: string;
  /** Where the page belongs (a link above the heading, and where Cancel goes). */
  back: { href: string; label: string };
  state: FormState;
  /** The fields the form shows, in order (the summary's messages link to them). */
  fields: string[];
  action: string;
  submit: string;
  scripts?: string[];
  /** Extra attributes of the form (data-* for its script). */
  attrs?: Record<string, string>;
  children: ComponentChildren;
}

/**
 * A settings form's page: the way back, the heading, the refused form's summary, then the form
 * (POST with the CSRF token; the browser's own checks off, so the API's messages are the ones
 * shown), its fields, and Save / Cancel.
 */
export function FormPage(props: FormPageProps) {
  return (
    <Layout title={props.title ?? props.heading} csrf={props.csrf} active={props.active} scripts={props.scripts} styles={['settings.css']}>
      <p>
        <a href={props.back.href}>{props.back.label}</a>
      </p>
      <h1>{props.heading}</h1>
      <ErrorSummary state={props.state} fields={props.fields} />
      <form method="post" action={props.action} class="form" noValidate {...props.attrs}>
        <Csrf token={props.csrf} />
        {props.children}
        <div class="actions">
          <button type="submit">{props.submit}</button>
          <a href={props.back.href}>Cancel</a>
        </div>
      </form>
    </Layout>
  );
}
