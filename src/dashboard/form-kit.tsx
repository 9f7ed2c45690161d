import type { Request, Response } from 'express';
import type { ComponentChildren } from 'preact';
import { AppError, type FieldErrors } from '../http/errors';
import { runRoute, type RouteDef } from '../http/routes';
import type { PageContext } from './respond';

/**
 * The dashboard's forms (docs/decisions.md, "Workspace"): every form submits to the API route
 * that does the same thing, through `submitRoute`, so the API's validation is the only one and
 * its messages are the words shown beside the fields. A refused form is rendered again with
 * what was typed and each message beside its field; the summary at the top repeats them, each
 * linking to its field.
 */

/** What a form shows: the values as typed (or as stored), and the messages by field. */
export interface FormState {
  values: Record<string, unknown>;
  errors: FieldErrors;
}

export const emptyForm = (values: Record<string, unknown> = {}): FormState => ({ values, errors: {} });

/** The key of messages that belong to no field (a refusal said as one sentence). */
export const FORM_ERROR = '_form';

export type Submitted = { ok: true; message: unknown } | { ok: false; status: number; errors: FieldErrors };

/**
 * Runs an API route for a dashboard form, as the signed-in account. A refusal a person can fix
 * (422, 409, 429, …) comes back as messages by field; not found and server errors are thrown
 * (the page handler answers them as pages).
 */
export async function submitRoute(
  def: RouteDef,
  p: PageContext,
  req: Request,
  res: Response,
  raw: { body?: Record<string, unknown>; query?: Record<string, unknown>; file?: Express.Multer.File },
): Promise<Submitted> {
  try {
    const envelope = await runRoute(def, { body: raw.body ?? {}, query: raw.query ?? {}, file: raw.file }, { ctx: p.ctx, deps: p.deps, req, res });
    return { ok: true, message: 'message' in envelope ? envelope.message : envelope.errors };
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500 || err.status === 404) throw err;
    if (err.headers['Retry-After']) res.set('Retry-After', err.headers['Retry-After']);
    return { ok: false, status: err.status, errors: asFieldErrors(err.errors) };
  }
}

function asFieldErrors(errors: unknown): FieldErrors {
  if (typeof errors === 'string') return { [FORM_ERROR]: [errors] };
  if (errors && typeof errors === 'object' && !Array.isArray(errors)) {
    return Object.fromEntries(Object.entries(errors as Record<string, unknown>).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : [String(v)]]));
  }
  return { [FORM_ERROR]: ['The request was refused.'] };
}

/** A form's messages for one field: its own, and its items' (`emails.2` belongs to `emails`). */
export function errorsFor(state: FormState, name: string): string[] {
  return Object.entries(state.errors)
    .filter(([k]) => k === name || k.startsWith(`${name}.`))
    .flatMap(([, v]) => v);
}

/** The id of a field's control, which the summary's links and the label point at. */
export const fieldId = (name: string) => `field-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;

function text(state: FormState, name: string): string {
  const v = state.values[name];
  if (v === undefined || v === null) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

export interface Choice {
  value: string;
  label: string;
}

interface FieldProps {
  state: FormState;
  name: string;
  label: string;
  type?: 'text' | 'email' | 'number' | 'url' | 'password' | 'datetime-local' | 'textarea' | 'select' | 'checkbox' | 'multiselect';
  hint?: ComponentChildren;
  required?: boolean;
  choices?: Choice[];
  rows?: number;
  /** Extra attributes for the control (min, max, step, placeholder, data-*…). */
  attrs?: Record<string, string | number | boolean | undefined>;
  /** The control's id when two forms of one page have a field of the same name (default: fieldId(name)). */
  id?: string;
}

/**
 * One labelled control with its hint and its messages below it. The control says it is
 * invalid (aria-invalid) and points at its messages (aria-describedby), so a screen reader
 * reads them with it.
 */
export function Field({ state, name, label, type = 'text', hint, required, choices = [], rows = 6, attrs = {}, id = fieldId(name) }: FieldProps) {
  const messages = errorsFor(state, name);
  const described = [hint ? `${id}-hint` : '', messages.length ? `${id}-errors` : ''].filter(Boolean).join(' ') || undefined;
  const common = { id, name, 'aria-invalid': messages.length ? ('true' as const) : undefined, 'aria-describedby': described, required, ...attrs };
  const value = text(state, name);
  let control: ComponentChildren;
  if (type === 'textarea') {
    control = <textarea {...common} rows={rows}>{value}</textarea>;
  } else if (type === 'select') {
    control = (
      <select {...common}>
        {choices.map((c) => (
          <option value={c.value} selected={c.value === value}>
            {c.label}
          </option>
        ))}
      </select>
    );
  } else if (type === 'multiselect') {
    const raw = state.values[name];
    const chosen = new Set((Array.isArray(raw) ? raw : raw === undefined || raw === null || raw === '' ? [] : [raw]).map(String));
    control = (
      <select {...common} name={`${name}[]`} multiple size={Math.min(Math.max(choices.length, 2), 8)}>
        {choices.map((c) => (
          <option value={c.value} selected={chosen.has(c.value)}>
            {c.label}
          </option>
        ))}
      </select>
    );
  } else if (type === 'checkbox') {
    const on = value === '1' || value === 'true' || value === 'on';
    control = <input {...common} type="checkbox" value="1" checked={on} />;
  } else {
    control = <input {...common} type={type} value={value} />;
  }
  return (
    <div class={`field${messages.length ? ' invalid' : ''}${type === 'checkbox' ? ' check' : ''}`}>
      <label for={id}>
        {label}
        {required ? <span class="required" aria-hidden="true"> *</span> : null}
      </label>
      {hint ? (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      {control}
      {messages.length ? (
        <ul class="field-errors" id={`${id}-errors`}>
          {messages.map((m) => (
            <li>{m}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/**
 * The messages of a refused form at its top, each a link to its field (`fields` names the
 * fields the form shows; a message of any other key is listed without a link).
 */
export function ErrorSummary({ state, fields = [] }: { state: FormState; fields?: string[] }) {
  const entries = Object.entries(state.errors);
  if (entries.length === 0) return null;
  const fieldOf = (key: string) => fields.find((f) => key === f || key.startsWith(`${f}.`));
  return (
    <div class="error-summary" role="alert" tabIndex={-1}>
      <h2>{entries.length === 1 ? 'There is a problem' : 'There are problems'}</h2>
      <ul>
        {entries.flatMap(([key, messages]) =>
          messages.map((m) => {
            const f = fieldOf(key);
            return <li>{f ? <a href={`#${fieldId(f)}`}>{m}</a> : m}</li>;
          }),
        )}
      </ul>
    </div>
  );
}
