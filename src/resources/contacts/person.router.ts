import { z } from 'zod';
import { requestActor } from '../../consent/actor';
import { ok, type Envelope } from '../../http/envelope';
import { email } from '../../http/fields';
import { route, type RouteDef } from '../../http/routes';
import { eraseAddress } from './erase.service';
import { consentOf, EXPORT_PERSON_MAX_ROWS, exportPerson } from './person.service';
import { answer, count } from '../shared/audit';

/**
 * One person's data (issue 35; docs/decisions.md "Consent and personal data"): consent records,
 * the export of everything held about an address, and its erasure. Another account's address is
 * simply not found there: empty records, an empty export, an erasure that removes nothing.
 */
const tag = 'Contacts';
const byEmail = z.object({ email: email().meta({ description: 'the address (case-insensitive)', example: 'ann@example.com' }) });
const ts = z.string().nullable();
const text = z.string().nullable();

export const consentEntry = z.object({
  contact_type_id: z.number().int().nullable(),
  list_name: text,
  source: z.enum(['form', 'import', 'api', 'dashboard']).nullable().meta({ description: 'null: a contact added before consent was recorded' }),
  form_id: z.number().int().nullable(),
  import_id: z.number().int().nullable(),
  actor: text.meta({ description: '`key:<public key>` or `session:<id>` that added it (API, dashboard, import)' }),
  client_ip: text,
  user_agent: text,
  consent_text: text,
  consented_at: ts,
  confirmed_at: ts,
  confirm_ip: text,
  confirm_user_agent: text,
});

const personExport = z.object({
  email: z.string(),
  contacts: z.array(z.record(z.string(), z.unknown())),
  lists: z.array(z.object({ contact_type_id: z.number().int(), list_name: text })),
  consent: z.array(consentEntry),
  pending_subscriptions: z.array(z.record(z.string(), z.unknown())),
  unsubscribes: z.object({ global: z.array(z.record(z.string(), z.unknown())), groups: z.array(z.record(z.string(), z.unknown())) }),
  suppressions: z.array(z.record(z.string(), z.unknown())),
  segments: z.array(z.record(z.string(), z.unknown())),
  automations: z.array(z.record(z.string(), z.unknown())),
  deliveries: z.array(z.record(z.string(), z.unknown())),
  events: z.array(z.record(z.string(), z.unknown())),
  truncated: z.object({ deliveries: z.boolean(), events: z.boolean() }),
});

export const erasureRecord = z.object({
  erasure_id: z.number().int(),
  rows_removed: z.record(z.string(), z.number().int()).meta({ description: 'rows removed per table (tables with none left out)' }),
});


/** The data request's answer in counts (never the address). */
function personSummary(person: unknown): string {
  const p = (person ?? {}) as { contacts?: unknown[]; events?: unknown[]; deliveries?: unknown[] };
  return `data request answered: ${count(p.contacts?.length ?? 0, 'contact')}, ${count(p.deliveries?.length ?? 0, 'recipient row')}, ${count(p.events?.length ?? 0, 'event')}`;
}

const erasureOf = (envelope: Envelope) => answer(envelope).erasure as z.infer<typeof erasureRecord>;

export const personRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/contacts/consent',
    tag,
    summary: 'Herald extension: how an address joined each list — source (form, import, API, dashboard), when, client address, user agent, consent text, confirmation',
    description:
      'Oldest first, one entry per record: a form’s (with its client address, user agent, consent text and, for double ' +
      'opt-in, the confirmation’s time, address and user agent), an API or dashboard add’s (with the key or session ' +
      'that made it), and an import’s (the import that inserted the contact, with the key or session that ran it). A ' +
      'contact added before consent was recorded has an entry with `source` null.',
    query: byEmail,
    response: z.object({ consent: z.array(consentEntry) }),
    failures: ['AUTH', 'VAL'],
    permission: 'read',
    handle: async ({ ctx, query }) => ok({ consent: await consentOf(ctx, query.email) }),
  }),
  route({
    method: 'get',
    path: '/contacts/export-person',
    tag,
    summary: 'Herald extension: everything the account holds about an address, as one JSON document',
    description:
      'Contacts (every list, deleted ones included) with their fields by name, the lists, consent records, pending ' +
      `double opt-in subscriptions, unsubscribes (global and per group), suppressions (an erased entry of the address ` +
      `included), hand-added segment recipients, automation progress, recipient rows and events. Recipient rows and ` +
      `events are capped at ${EXPORT_PERSON_MAX_ROWS.toLocaleString('en')} each (oldest first); \`truncated\` says when.`,
    query: byEmail,
    response: z.object({ person: personExport }),
    failures: ['AUTH', 'VAL'],
    permission: 'contacts:erase',
    audit: {
      action: 'contact.exported',
      entry: (_input, envelope) => ({ objectKind: 'contact', summary: personSummary(answer(envelope).person) }),
    },
    handle: async ({ ctx, query }) => ok({ person: await exportPerson(ctx, query.email) }),
  }),
  route({
    method: 'post',
    path: '/contacts/erase',
    tag,
    summary: 'Herald extension: erase an address — every row that holds it, in one transaction; a hashed suppression and an audit record stay',
    description:
      'Removes the address’s contacts (deleted ones too) and their fields, list and segment memberships, automation ' +
      'progress, pending subscriptions, consent records, unsubscribes, suppressions, recipient rows (queued ones of a ' +
      'running send are not sent) and events, and the address from webhook payloads and job payloads. Leaves a ' +
      'suppression of type `erased` holding only a keyed hash of the address (a re-import or re-add is not mailed; ' +
      'lift it with DELETE /suppressions and the address), an audit record without the address, and the account ' +
      'event `contact.erased`. An address the account does not hold removes nothing and still leaves the suppression.',
    body: byEmail,
    response: z.object({ erasure: erasureRecord }),
    failures: ['AUTH', 'VAL'],
    permission: 'contacts:erase',
    audit: {
      action: 'contact.erased',
      entry: (_input, envelope) => ({ objectKind: 'erasure', objectId: erasureOf(envelope).erasure_id, summary: `${count(Object.values(erasureOf(envelope).rows_removed).reduce((a, b) => a + b, 0), 'row')} removed` }),
    },
    handle: async ({ ctx, body, req }) => {
      const actor = requestActor(req).actor ?? 'unknown';
      return ok({ erasure: await eraseAddress(ctx, body.email, { actor, source: 'api' }) });
    },
  }),
];
