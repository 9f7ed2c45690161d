import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { eraseRecipientRows } from '../../deliveries/person';
import { recordAccountEvent } from '../../events/account-events';
import { eraseEventsOf } from '../../events/person';
import { forgetUnsentRows } from '../../single-sends/erase';
import { suppressErased } from '../../suppression';
import { bumpContactsVersion } from './contacts-version';

/**
 * Erasure (issue 35, POST /contacts/erase and the recipient's "forget me"; docs/decisions.md
 * "Erasure"): every row of the account that holds the address goes, in one transaction, and two
 * things stay — a suppression entry holding only the address's keyed hash (src/suppression/
 * erased.ts), so a re-import or re-add is never mailed, and an `erasures` audit record (time, who,
 * rows removed per table, no address). Statistics counters stay as they were.
 *
 * Left on purpose (test/api/erase.test.ts lists them): the account's own addresses (accounts,
 * senders, notification recipients, a send's reply-to), which are the sender's and not the
 * recipient's; and a custom field value or an A/B result that happens to spell the address.
 */
export interface ErasureOutcome {
  erasure_id: number;
  rows_removed: Record<string, number>;
}

export interface EraseBy {
  /** `key:…` or `session:…` (src/consent/actor.ts), or `recipient` for "forget me". */
  actor: string;
  source: 'api' | 'recipient';
}

/** A JSON value's text with every spelling of the address replaced (a payload that quoted it). */
const REDACT = (column: string) => `regexp_replace(${column}::text, ?, '[erased]', 'gi')::jsonb`;
const regexOf = (email: string) => email.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function redactJson(trx: Knex, table: string, column: string, userId: number, email: string): Promise<number> {
  return trx(table)
    .where('user_id', userId)
    .whereRaw(`strpos(lower(${column}::text), lower(?)) > 0`, [email])
    .update({ [column]: trx.raw(REDACT(column), [regexOf(email)]) });
}

const byAddress = (q: Knex.QueryBuilder, column: string, email: string) => q.whereRaw(`lower(${column}) = lower(?)`, [email]);

export async function eraseAddress(ctx: Ctx, email: string, by: EraseBy): Promise<ErasureOutcome> {
  const { userId } = ctx;
  return ctx.db.transaction(async (trx) => {
    const n: Record<string, number> = {};
    const contacts = (await byAddress(trx('contacts').where('user_id', userId), 'email', email).select('id', 'contact_type_id')) as Array<{ id: number; contact_type_id: number }>;
    const contactIds = contacts.map((c) => c.id);
    n.segment_recipients = await trx('segment_recipients')
      .where('user_id', userId)
      .where((w) => w.whereIn('contact_id', contactIds).orWhereRaw('lower(email) = lower(?)', [email]))
      .delete();
    n.automation_contacts = await trx('automation_contacts')
      .where('user_id', userId)
      .where((w) => w.whereIn('contact_id', contactIds).orWhereRaw('lower(email) = lower(?)', [email]))
      .delete();
    n.contacts = await trx('contacts').where('user_id', userId).whereIn('id', contactIds).delete();
    // Another contact that gave the address as its alternative one keeps itself, without it.
    n.contacts_alt_email = await byAddress(trx('contacts').where('user_id', userId), 'alt_email', email).update({ alt_email: null });
    const rows = await eraseRecipientRows(trx, userId, email);
    n.deliveries = rows.ids.length;
    await forgetUnsentRows(trx, userId, rows.unsent);
    n.bounce_reports = rows.ids.length ? await trx('bounce_reports').where('user_id', userId).whereIn('delivery_id', rows.ids).delete() : 0;
    n.events = await eraseEventsOf(trx, userId, email, rows.ids);
    n.consent_records = await byAddress(trx('consent_records').where('user_id', userId), 'email', email).delete();
    n.pending_subscriptions = await byAddress(trx('pending_subscriptions').where('user_id', userId), 'email', email).delete();
    n.global_unsubscribers = await byAddress(trx('global_unsubscribers').where('user_id', userId), 'email_address', email).delete();
    n.unsubscribe_group_recipients = await byAddress(trx('unsubscribe_group_recipients').where('user_id', userId), 'email_address', email).delete();
    n.suppressions = await byAddress(trx('suppressions').where('user_id', userId), 'email', email).delete();
    n.test_sends = await byAddress(trx('test_sends').where('user_id', userId), 'email', email).delete();
    n.data_requests = await byAddress(trx('data_requests').where('user_id', userId), 'email', email).delete();
    // Payloads that quote the address (webhook batches, background jobs, an import's skip reasons) keep the rest.
    n.webhook_deliveries = await redactJson(trx, 'webhook_deliveries', 'payload', userId, email);
    n.jobs = await redactJson(trx, 'jobs', 'payload', userId, email);
    n.outbox_jobs = await redactJson(trx, 'outbox_jobs', 'payload', userId, email);
    n.contact_imports = await redactJson(trx, 'contact_imports', 'reasons', userId, email);
    for (const k of Object.keys(n)) if (n[k] === 0) delete n[k];
    await suppressErased(trx, userId, email, by.source);
    const types = [...new Set(contacts.map((c) => c.contact_type_id))];
    if (types.length) await bumpContactsVersion(trx, userId, types);
    const [audit] = (await trx('erasures').insert({ user_id: userId, actor: by.actor, rows_removed: JSON.stringify(n) }).returning(['id'])) as Array<{ id: number }>;
    const total = Object.values(n).reduce((a, b) => a + b, 0);
    await recordAccountEvent({ db: trx }, userId, 'contact.erased', `An address was erased (${total} rows)`, {
      erasure_id: audit.id,
      by: by.actor,
      rows_removed: total,
      ...Object.fromEntries(Object.entries(n).map(([table, count]) => [`removed_${table}`, count])),
    });
    return { erasure_id: audit.id, rows_removed: n };
  });
}
