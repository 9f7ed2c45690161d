import type { Knex } from 'knex';
import { owner } from '../src/db/schema-helpers';

/**
 * Bounces, complaints and suppressions (docs/decisions.md, "Bounces, complaints and suppressions").
 *
 * `suppressions`: addresses an account must not mail (type bounce | complaint | manual), one row
 * per address (unique on lower(email) per account: the suppression rule's index lookup), with
 * where Herald learned it (`source`), the message it was about and the report kept for it.
 *
 * `bounce_reports`: one row per outcome applied to a recipient row (hard, soft, deferred,
 * complaint), unique per (row, kind) so a report delivered twice (SMTP retries, a mailbox
 * read again, a webhook retried) is applied once; `raw` keeps the report (≤ 256 KB) for
 * BOUNCE_RETENTION_DAYS so an operator can see why an address was suppressed.
 *
 * The kinds and sources are repeated here on purpose: a migration is history.
 */
const SOURCES = ['smtp', 'dsn', 'arf', 'imap', 'sendgrid', 'mailgun', 'postmark', 'ses', 'api'];
const list = (xs: string[]) => xs.map((x) => `'${x}'`).join(', ');

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('bounce_reports', (t) => {
    owner(t);
    t.bigIncrements('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.bigInteger('delivery_id').notNullable();
    t.text('kind').notNullable();
    t.text('source').notNullable();
    t.text('status').nullable();
    t.text('diagnostic').notNullable().defaultTo('');
    t.binary('raw').nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE bounce_reports ADD CONSTRAINT bounce_reports_kind_check CHECK (kind IN ('hard', 'soft', 'deferred', 'complaint'))`);
  await knex.raw(`ALTER TABLE bounce_reports ADD CONSTRAINT bounce_reports_source_check CHECK (source IN (${list(SOURCES)}))`);
  await knex.raw('ALTER TABLE bounce_reports ADD CONSTRAINT bounce_reports_raw_size_check CHECK (octet_length(raw) <= 262144)');
  await knex.raw('CREATE UNIQUE INDEX bounce_reports_once_index ON bounce_reports (user_id, delivery_id, kind)');
  await knex.raw('CREATE INDEX bounce_reports_created_at_index ON bounce_reports USING brin (created_at)');

  await knex.schema.createTable('suppressions', (t) => {
    t.increments('id', { primaryKey: false });
    owner(t);
    t.primary(['user_id', 'id']);
    t.text('email').notNullable();
    t.text('type').notNullable();
    t.text('reason').notNullable().defaultTo('');
    t.text('diagnostic').notNullable().defaultTo('');
    t.text('source').notNullable();
    t.bigInteger('delivery_id').nullable();
    t.integer('single_send_id').nullable();
    t.integer('automation_id').nullable();
    /** The kept report (bounce_reports.id); it may have been purged since. */
    t.bigInteger('report_id').nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_type_check CHECK (type IN ('bounce', 'complaint', 'manual'))`);
  await knex.raw(`ALTER TABLE suppressions ADD CONSTRAINT suppressions_source_check CHECK (source IN (${list(SOURCES)}))`);
  await knex.raw('CREATE UNIQUE INDEX suppressions_email_index ON suppressions (user_id, lower(email))');
  await knex.raw('CREATE INDEX suppressions_list_index ON suppressions (user_id, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('suppressions');
  await knex.schema.dropTable('bounce_reports');
}
