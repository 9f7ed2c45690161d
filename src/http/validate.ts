import { z } from 'zod';
import { invalid, type FieldErrors } from './errors';

/**
 * zod issues → the Laravel validation catalogue the spec's messages come from
 * (`The <field> field is required.`, `The email must be a valid email address.`, …).
 * The attribute is the field name snake-cased with underscores as spaces, as Laravel shows it.
 */
export function attributeName(path: PropertyKey[]): string {
  return path
    .map((p) =>
      String(p)
        .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
        .toLowerCase()
        .replace(/_/g, ' '),
    )
    .join('.');
}

export interface MessageOptions {
  /** Display names replacing the derived attribute, e.g. `{ email_owner: 'name' }`. */
  attributes?: Record<string, string>;
  /** Whole-message overrides keyed by `<field>.<rule>`, e.g. `email_owner.required`. */
  messages?: Record<string, string>;
}

type Issue = z.core.$ZodRawIssue;

function ruleOf(iss: Issue): string {
  // A field that is absent fails whatever rule comes first; Laravel calls that "required".
  if (iss.input === undefined && ['invalid_type', 'invalid_value', 'invalid_union'].includes(iss.code ?? '')) {
    return 'required';
  }
  switch (iss.code) {
    case 'invalid_type':
      return iss.input === undefined || iss.input === null ? 'required' : `type:${String(iss.expected)}`;
    case 'too_small':
      return iss.origin === 'array' && Number(iss.minimum) === 1 ? 'required' : `min:${String(iss.origin)}`;
    case 'too_big':
      return `max:${String(iss.origin)}`;
    case 'invalid_format':
      return `format:${String(iss.format)}`;
    case 'invalid_value':
      return 'in';
    default:
      return String(iss.code);
  }
}

export function laravelMessage(iss: Issue, opts: MessageOptions = {}): string {
  const field = iss.path?.map(String).join('.') ?? '';
  const rule = ruleOf(iss);
  const override = opts.messages?.[`${field}.${rule.split(':')[0]}`];
  if (override) return override;
  const a = opts.attributes?.[field] ?? attributeName(iss.path ?? []);
  switch (rule) {
    case 'required':
      return `The ${a} field is required.`;
    case 'type:int':
      return `The ${a} must be an integer.`;
    case 'type:number':
      return `The ${a} must be a number.`;
    case 'type:string':
      return `The ${a} must be a string.`;
    case 'type:array':
      return `The ${a} must be an array.`;
    case 'type:boolean':
      return `The ${a} field must be true or false.`;
    case 'min:string':
      return `The ${a} must be at least ${String((iss as { minimum: number }).minimum)} characters.`;
    case 'max:string':
      return `The ${a} must not be greater than ${String((iss as { maximum: number }).maximum)} characters.`;
    case 'min:array':
      return `The ${a} must have at least ${String((iss as { minimum: number }).minimum)} items.`;
    case 'max:array':
      return `The ${a} must not have more than ${String((iss as { maximum: number }).maximum)} items.`;
    case 'min:number':
      return `The ${a} must be at least ${String((iss as { minimum: number }).minimum)}.`;
    case 'max:number':
      return `The ${a} must not be greater than ${String((iss as { maximum: number }).maximum)}.`;
    case 'format:email':
      return `The ${a} must be a valid email address.`;
    case 'in':
      return `The selected ${a} is invalid.`;
    case 'custom':
      // refine()/superRefine() messages may use `:attribute`, like Laravel's.
      return (iss.message ?? `The ${a} is invalid.`).replace(':attribute', a);
    default:
      if (rule.startsWith('format:')) return `The ${a} format is invalid.`;
      if (rule.startsWith('type:')) return `The ${a} is invalid.`;
      return `The ${a} is invalid.`;
  }
}

/** Groups zod issues into the VAL shape: `{ field: [messages…] }`, first field first. */
export function toFieldErrors(error: z.ZodError, opts: MessageOptions = {}): FieldErrors {
  const out: FieldErrors = {};
  for (const iss of error.issues) {
    const key = iss.path.length ? iss.path.map(String).join('.') : 'body';
    const list = (out[key] ??= []);
    const a = opts.attributes?.[key] ?? attributeName(iss.path);
    const message = iss.message.replace(/:attribute/g, a);
    if (!list.includes(message)) list.push(message);
  }
  return out;
}

/** Parses `input` with `schema`; a failure throws VAL (422) with Laravel-worded messages. */
export function validate<S extends z.ZodType>(schema: S, input: unknown, opts: MessageOptions = {}): z.output<S> {
  const result = schema.safeParse(input, {
    error: (iss) => laravelMessage(iss, opts),
  });
  if (!result.success) throw invalid(toFieldErrors(result.error, opts));
  return result.data;
}
