import type { Knex } from 'knex';
import { distributeNewTable } from '../src/db/citus';
import { owner } from '../src/db/schema-helpers';

/**
 * Consent and personal data (issue 35; src/consent).
 *
 * `consent_records`: how an address joined a list — `source` form | import | api | dashboard,
 * when, from which client address and user agent, the consent text shown, and when it was
 * confirmed (double opt-in). `actor` names the API key (`key:<public key>`) or dashboard session
 * (`session:<16 hex of the session token's SHA-256>`) that made it. An import is recorded once
 * per (import, list) with no address (`email` NULL); the contacts it inserted carry its id in
 * `contacts.import_id`, and the consent read joins the two (no row per imported contact).
 *
 * `data_requests`: a recipient's one-time link to their export ("get my data" on the preferences
 * page): the SHA-256 of the link's random part, its expiry and when it was used.
 *
 * `erasures`: the audit record of an erasure — when, by which key, session or recipient, and how
 * many rows each table lost. Never the address.
 *
 * `suppressions` takes type `erased` (the address is then only a keyed hash, `erased:<hex>`) and
 * source `recipient` (the recipient's own "forget me"), and a partial index of the erased
 * entries per account (the send path asks whether an account has any).
 */
const SUPPRESSION_TYPES = ['bounce', 'complaint', 'manual'];
const SUPPRESSION_SOURCES = ['smtp', 'dsn', 'arf', 'imap', 'sendgrid', 'mailgun', 'postmark', 'ses', 'api'];
const list = (xs: string[]) => xs.map((x) => `'${x}'`).join(', ');

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('consent_records', (t) => {
    owner(t);
    t.bigIncrements('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.text('email').nullable();
    t.integer('contact_type_id').nullable();
    t.text('source').notNullable();
    t.integer('form_id').nullable();
    t.integer('import_id').nullable();
    t.text('actor').nullable();
    t.text('client_ip').nullable();
    t.text('user_agent').nullable();
    t.text('consent_text').nullable();
    t.timestamp('consented_at', { useTz: true, precision: 6 }).notNullable();
    t.timestamp('confirmed_at', { useTz: true, precision: 6 }).nullable();
    t.text('confirm_ip').nullable();
    t.text('confirm_user_agent').nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE consent_records ADD CONSTRAINT consent_records_source_check CHECK (source IN ('form', 'import', 'api', 'dashboard'))`);
  await knex.raw(`ALTER TABLE consent_records ADD CONSTRAINT consent_records_import_check CHECK (source <> 'import' OR import_id IS NOT NULL)`);
  await knex.raw('CREATE INDEX consent_records_email_index ON consent_records (user_id, lower(email)) WHERE email IS NOT NULL');
  await knex.raw('CREATE INDEX consent_records_import_index ON consent_records (user_id, import_id) WHERE import_id IS NOT NULL');
  await distributeNewTable(knex, 'consent_records');

  await knex.schema.createTable('erasures', (t) => {
    owner(t);
    t.increments('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.timestamp('erased_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.text('actor').notNullable();
    t.jsonb('rows_removed').notNullable().defaultTo('{}');
  });
  await distributeNewTable(knex, 'erasures');

  // A recipient's "get my data" link (src/public/my-data.tsx): the SHA-256 of its random part, used once, until it expires.
  await knex.schema.createTable('data_requests', (t) => {
    owner(t);
    t.binary('token_hash').notNullable();
    t.primary(['user_id', 'token_hash']);
    t.text('email').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true, precision: 6 }).notNullable();
    t.timestamp('used_at', { useTz: true, precision: 6 }).nullable();
  });
  await distributeNewTable(knex, 'data_requests');

  // The import that inserted a contact (NULL: added another way). No default, no index: free to add, and the import's COPY writes one constant more.
  await knex.raw('ALTER TABLE contacts ADD COLUMN import_id integer');

  await knex.raw('ALTER TABLE suppressions DROP CONSTRAINT suppressions_type_check');
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_type_check CHECK (type IN (${list([...SUPPRESSION_TYPES, 'erased'])}))`);
  await knex.raw('ALTER TABLE suppressions DROP CONSTRAINT suppressions_source_check');
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_source_check CHECK (source IN (${list([...SUPPRESSION_SOURCES, 'recipient'])}))`);
  // The send path's one-time check "has this account erased anyone?" (src/suppression/index.ts).
  await knex.raw(`CREATE INDEX suppressions_erased_index ON suppressions (user_id) WHERE type = 'erased'`);
}

/** Lifts the erased entries (their addresses are gone; nothing else could stand for them). */
export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX suppressions_erased_index');
  await knex('suppressions').where('type', 'erased').orWhere('source', 'recipient').delete();
  await knex.raw('ALTER TABLE suppressions DROP CONSTRAINT suppressions_type_check');
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_type_check CHECK (type IN (${list(SUPPRESSION_TYPES)}))`);
  await knex.raw('ALTER TABLE suppressions DROP CONSTRAINT suppressions_source_check');
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_source_check CHECK (source IN (${list(SUPPRESSION_SOURCES)}))`);
  await knex.raw('ALTER TABLE contacts DROP COLUMN import_id');
  await knex.schema.dropTable('data_requests');
  await knex.schema.dropTable('erasures');
  await knex.schema.dropTable('consent_records');
}
