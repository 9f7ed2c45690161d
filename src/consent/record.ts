import type { Knex } from 'knex';

/**
 * Consent records (issue 35, migrations/202612300400_consent.ts): how an address joined a list.
 * Every path that makes a contact records one through `recordConsent`, in the transaction that
 * makes it: a form (src/forms), an API or dashboard add (src/resources/contacts), an import (one
 * record per import and list, no address: the contacts it inserted carry its id).
 */
export type ConsentSource = 'form' | 'import' | 'api' | 'dashboard';

export interface ConsentRecord {
  userId: number;
  /** The address; null only for an import's record (one per import and list). */
  email: string | null;
  /** The list (contact type) consented to; null when the consent names no list. */
  contactTypeId: number | null;
  source: ConsentSource;
  formId?: number | null;
  importId?: number | null;
  /** Who made it: `key:<public key>` or `session:<id>` (see actor.ts); a form's submission has none. */
  actor?: string | null;
  clientIp?: string | null;
  userAgent?: string | null;
  /** The consent text as shown to the person. */
  consentText?: string | null;
  /** When consent was given (a Date, or a timestamp PostgreSQL reads). */
  consentedAt: Date | string;
  confirmedAt?: Date | string | null;
  confirmIp?: string | null;
  confirmUserAgent?: string | null;
}

/** Longest client address, user agent and consent text kept (longer ones are cut, never refused). */
const MAX = { ip: 64, userAgent: 1000, consentText: 10_000 };
const cut = (s: string | null | undefined, n: number): string | null => (s == null ? null : s.slice(0, n));
const at = (d: Date | string | null | undefined): string | null => (d == null ? null : d instanceof Date ? d.toISOString() : d);

/**
 * Writes the records in one statement, in the caller's transaction (`trx` may be the pool for a
 * caller with none). Records of several accounts are written one statement per account, so each
 * statement stays on one node under Citus.
 */
export async function recordConsent(trx: Knex | Knex.Transaction, records: ConsentRecord[]): Promise<void> {
  const byAccount = new Map<number, ConsentRecord[]>();
  for (const r of records) byAccount.set(r.userId, [...(byAccount.get(r.userId) ?? []), r]);
  for (const [userId, rows] of byAccount) {
    await trx.raw(
      `INSERT INTO consent_records (user_id, email, contact_type_id, source, form_id, import_id, actor, client_ip, user_agent,
         consent_text, consented_at, confirmed_at, confirm_ip, confirm_user_agent)
       SELECT ?, v.email, v.contact_type_id, v.source, v.form_id, v.import_id, v.actor, v.client_ip, v.user_agent,
         v.consent_text, v.consented_at, v.confirmed_at, v.confirm_ip, v.confirm_user_agent
       FROM json_to_recordset(?::json) AS v(n integer, email text, contact_type_id integer, source text, form_id integer,
         import_id integer, actor text, client_ip text, user_agent text, consent_text text, consented_at timestamptz,
         confirmed_at timestamptz, confirm_ip text, confirm_user_agent text)
       ORDER BY v.n`,
      [
        userId,
        JSON.stringify(
          rows.map((r, n) => ({
            n,
            email: r.email,
            contact_type_id: r.contactTypeId,
            source: r.source,
            form_id: r.formId ?? null,
            import_id: r.importId ?? null,
            actor: r.actor ?? null,
            client_ip: cut(r.clientIp, MAX.ip),
            user_agent: cut(r.userAgent, MAX.userAgent),
            consent_text: cut(r.consentText, MAX.consentText),
            consented_at: at(r.consentedAt),
            confirmed_at: at(r.confirmedAt),
            confirm_ip: cut(r.confirmIp, MAX.ip),
            confirm_user_agent: cut(r.confirmUserAgent, MAX.userAgent),
          })),
        ),
      ],
    );
  }
}

/**
 * Stamps the confirmation on an address's unconfirmed form records for these lists (a double
 * opt-in confirmed after its record was written at submission). Returns how many were stamped.
 */
export async function confirmConsent(
  trx: Knex | Knex.Transaction,
  c: { userId: number; email: string; contactTypeIds: number[]; formId?: number | null; confirmedAt: Date | string; confirmIp?: string | null; confirmUserAgent?: string | null },
): Promise<number> {
  const q = trx('consent_records')
    .where({ user_id: c.userId, source: 'form' })
    .whereRaw('lower(email) = lower(?)', [c.email])
    .whereIn('contact_type_id', c.contactTypeIds)
    .whereNull('confirmed_at');
  if (c.formId != null) q.where('form_id', c.formId);
  return q.update({ confirmed_at: at(c.confirmedAt), confirm_ip: cut(c.confirmIp, MAX.ip), confirm_user_agent: cut(c.confirmUserAgent, MAX.userAgent) });
}
