import type { Request } from 'express';
import type { FieldErrors } from '../../http/errors';
import type { RouteDef } from '../../http/routes';
import type { Choice } from '../form-kit';

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
      <h2>{lines.length === 1 ? 'That was refused' : 'That was refused:'}</h2>
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
