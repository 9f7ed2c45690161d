import type { FieldErrors } from '../../http/errors';

/**
 * A single send's or automation email's design is a template plus either its own HTML or the
 * JSON of the visual editor, never both (the spec's prohibited_if rule, in Laravel's words).
 */
export function checkDesignSource(input: { template_html?: string | null; template_json?: string | null }, errors: FieldErrors): void {
  if (input.template_json && input.template_html) {
    errors.template_html = ['The template html field is prohibited when template json is present.'];
  }
}
