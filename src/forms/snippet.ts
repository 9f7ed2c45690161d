import { escapeHtml } from '../mail/escape-html';
import type { PublicForm, PublicFormField } from './forms';

/**
 * The ways a site uses a form (issue 35), as `GET /forms/details` and the dashboard show them:
 * the hosted page, the JSON endpoint (the same URL, `Accept: application/json`) and an HTML
 * snippet — a plain `<form>` posting to the hosted URL, so it works without script. Every value
 * in the snippet is HTML-escaped. The input names are those the public endpoint reads
 * (src/public/subscribe.tsx): each field's `inputName`, `contact_type_ids[]`, `consent`, the
 * honeypot `website`, and with proof of work the widget's `altcha`.
 */
export interface FormUsage {
  hostedUrl: string;
  jsonUrl: string;
  snippet: string;
}

/** The honeypot: hidden from people (and screen readers), filled by bots. */
export const HONEYPOT_FIELD = 'website';
export const CONSENT_FIELD = 'consent';
export const LISTS_FIELD = 'contact_type_ids[]';

const INPUT_TYPES: Record<PublicFormField['type'], string> = { text: 'text', number: 'number', 'datetime-local': 'datetime-local' };

function fieldInput(field: PublicFormField, prefix: string): string[] {
  const id = `${prefix}-${field.fieldId}`;
  const type = field.name === 'email' && field.kind === 'reserved' ? 'email' : INPUT_TYPES[field.type];
  const autocomplete = field.kind === 'reserved' && AUTOCOMPLETE[field.name] ? ` autocomplete="${AUTOCOMPLETE[field.name]}"` : '';
  return [
    '  <p>',
    `    <label for="${escapeHtml(id)}">${escapeHtml(field.label)}</label><br>`,
    `    <input type="${type}" id="${escapeHtml(id)}" name="${escapeHtml(field.inputName)}"${field.required ? ' required' : ''}${autocomplete}>`,
    '  </p>',
  ];
}

const AUTOCOMPLETE: Record<string, string> = {
  email: 'email',
  first_name: 'given-name',
  last_name: 'family-name',
  city: 'address-level2',
  state: 'address-level1',
  address_line1: 'address-line1',
  address_line2: 'address-line2',
  postal_code: 'postal-code',
};

function listInputs(form: PublicForm): string[] {
  if (form.lists.length === 1) return [`  <input type="hidden" name="${LISTS_FIELD}" value="${form.lists[0].id}">`];
  return [
    '  <fieldset>',
    '    <legend>Lists</legend>',
    ...form.lists.map(
      (l) => `    <label><input type="checkbox" name="${LISTS_FIELD}" value="${l.id}" checked> ${escapeHtml(l.name)}</label><br>`,
    ),
    '  </fieldset>',
  ];
}

export function formUsage(form: PublicForm, publicUrl: string): FormUsage {
  const hostedUrl = `${publicUrl}/subscribe/${form.id}`;
  const prefix = `herald-${form.id.slice(0, 16)}`;
  const lines = [
    `<form method="post" action="${escapeHtml(hostedUrl)}" accept-charset="UTF-8">`,
    ...form.fields.flatMap((f) => fieldInput(f, prefix)),
    ...listInputs(form),
    '  <p>',
    `    <label><input type="checkbox" name="${CONSENT_FIELD}" value="1" required> ${escapeHtml(form.consentText)}</label>`,
    '  </p>',
    // Off-screen rather than display:none, which some bots skip; never announced, never tabbed to.
    `  <div aria-hidden="true" style="position:absolute;left:-10000px;width:1px;height:1px;overflow:hidden">`,
    `    <label>Leave this empty <input type="text" name="${HONEYPOT_FIELD}" value="" tabindex="-1" autocomplete="off"></label>`,
    '  </div>',
    ...(form.captcha === 'proof_of_work' ? powLines(publicUrl, hostedUrl) : []),
    '  <p><button type="submit">Subscribe</button></p>',
    '</form>',
  ];
  return { hostedUrl, jsonUrl: hostedUrl, snippet: lines.join('\n') + '\n' };
}

/**
 * The proof-of-work widget (ALTCHA, served by Herald itself, src/public/subscribe.tsx): it fetches a
 * challenge from `<hosted URL>/challenge`, solves it and fills the `altcha` field.
 */
function powLines(publicUrl: string, hostedUrl: string): string[] {
  return [
    `  <link rel="stylesheet" href="${escapeHtml(`${publicUrl}/app/assets/altcha.css`)}">`,
    `  <script type="module" src="${escapeHtml(`${publicUrl}/app/assets/altcha.js`)}"></script>`,
    `  <altcha-widget challenge="${escapeHtml(`${hostedUrl}/challenge`)}" name="altcha"></altcha-widget>`,
  ];
}
