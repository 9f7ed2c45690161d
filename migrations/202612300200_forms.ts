import type { Knex } from 'knex';
import { distributeNewTable } from '../src/db/citus';
import { owner, softDelete, timestamps } from '../src/db/schema-helpers';

/**
 * Signup forms (issue 35; src/forms, src/resources/forms) and their statistics by day.
 *
 * `forms`: one account's public signup form. `contact_type_ids` are the lists it subscribes to
 * (an integer array in the row: the form is read whole by the public endpoint, one row on one
 * node; the API checks that each is a live list of the account when the form is saved, and the
 * public form leaves out a list deleted since). `fields` is the JSON array
 * `[{ field_id, required, label }]` of reserved and custom fields shown (ids of the `fields`
 * view; names are read when the form is shown, so a renamed custom field keeps its place).
 * Soft delete, like designs: a deleted form's statistics and the consent records that name it
 * keep their meaning; its public id answers not found.
 *
 * `form_stats_daily`: submissions and confirmations per form and UTC day, upserted into one of
 * STAT_SLOTS rows (`slot`, chosen at random per upsert) and summed when read (src/forms/stats.ts):
 * concurrent submissions to one form do not all wait on one row's lock until their commits.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('forms', (t) => {
    t.increments('id', { primaryKey: false });
    owner(t);
    t.primary(['user_id', 'id']);
    t.string('name', 255).notNullable();
    t.specificType('contact_type_ids', 'integer[]').notNullable();
    t.jsonb('fields').notNullable();
    t.smallint('double_opt_in').notNullable().defaultTo(1);
    t.text('consent_text').notNullable();
    t.string('success_url', 2048).nullable();
    t.string('confirm_url', 2048).nullable();
    t.string('confirmation_subject', 255).notNullable();
    t.integer('confirmation_sender_id').nullable();
    t.string('captcha', 16).notNullable().defaultTo('none');
    timestamps(t, knex);
    softDelete(t);
  });
  await knex.raw(`ALTER TABLE forms
    ADD CONSTRAINT forms_double_opt_in_check CHECK (double_opt_in IN (0, 1)),
    ADD CONSTRAINT forms_captcha_check CHECK (captcha IN ('none', 'proof_of_work')),
    ADD CONSTRAINT forms_lists_check CHECK (cardinality(contact_type_ids) >= 1)`);
  await knex.raw('CREATE INDEX forms_user_live_index ON forms (user_id, id DESC) WHERE deleted_at IS NULL');
  await distributeNewTable(knex, 'forms');

  await knex.schema.createTable('form_stats_daily', (t) => {
    owner(t);
    t.integer('form_id').notNullable();
    t.date('day').notNullable();
    t.smallint('slot').notNullable().defaultTo(0);
    t.integer('submissions').notNullable().defaultTo(0);
    t.integer('confirmations').notNullable().defaultTo(0);
    t.primary(['user_id', 'form_id', 'day', 'slot']);
    t.foreign(['user_id', 'form_id']).references(['user_id', 'id']).inTable('forms').onDelete('CASCADE');
  });
  await distributeNewTable(knex, 'form_stats_daily');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('form_stats_daily');
  await knex.schema.dropTable('forms');
}
