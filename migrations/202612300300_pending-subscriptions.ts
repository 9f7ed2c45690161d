import type { Knex } from 'knex';
import { distributeNewTable } from '../src/db/citus';
import { owner } from '../src/db/schema-helpers';

/**
 * Double opt-in (issue 35; src/forms/pending.ts, src/public/subscribe.ts).
 *
 * `pending_subscriptions`: a submission to a double opt-in form, waiting for the person to press
 * Confirm. Not a contact: nothing sends to it. It keeps what the consent record needs (the
 * lists, the fields, the consent text as shown, the client address and user agent of the
 * submission and of the confirmation). One row per form and address (any case): a second
 * submission updates it. `generation` is part of the confirmation link's signed token: a row that
 * was confirmed and is reused by a new submission gets a new generation, so the old link is dead.
 * The worker deletes rows older than OPTIN_PENDING_DAYS.
 *
 * `subscribe_limits`: submissions per client address per hour (SUBSCRIBE_LIMIT_PER_HOUR), for
 * every process. Belongs to no account (GLOBAL_TABLES): the limit holds across every account's forms.
 *
 * `pow_spent`: solved proof-of-work challenges already used, until their expiry, so that one
 * solution cannot be replayed. Belongs to no account (GLOBAL_TABLES).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('pending_subscriptions', (t) => {
    t.bigIncrements('id', { primaryKey: false });
    owner(t);
    t.primary(['user_id', 'id']);
    t.integer('form_id').notNullable();
    t.string('email', 255).notNullable();
    t.jsonb('fields').notNullable().defaultTo('{}');
    t.specificType('contact_type_ids', 'integer[]').notNullable();
    t.text('consent_text').notNullable();
    t.string('ip', 64).nullable();
    t.string('user_agent', 512).nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_mailed_at', { useTz: true, precision: 6 }).nullable();
    t.integer('generation').notNullable().defaultTo(1);
    t.timestamp('confirmed_at', { useTz: true, precision: 6 }).nullable();
    t.string('confirm_ip', 64).nullable();
    t.string('confirm_user_agent', 512).nullable();
  });
  await knex.raw('CREATE UNIQUE INDEX pending_subscriptions_form_email_unique ON pending_subscriptions (user_id, form_id, lower(email))');
  await knex.raw('CREATE INDEX pending_subscriptions_created_index ON pending_subscriptions (user_id, created_at)');
  await distributeNewTable(knex, 'pending_subscriptions');

  await knex.schema.createTable('subscribe_limits', (t) => {
    t.text('address').notNullable();
    t.timestamp('hour', { useTz: true }).notNullable();
    t.integer('n').notNullable().defaultTo(0);
    t.primary(['address', 'hour']);
  });
  await knex.raw('CREATE INDEX subscribe_limits_hour_index ON subscribe_limits (hour)');

  await knex.schema.createTable('pow_spent', (t) => {
    t.text('signature').primary();
    t.timestamp('expires_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX pow_spent_expires_index ON pow_spent (expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('pow_spent');
  await knex.schema.dropTable('subscribe_limits');
  await knex.schema.dropTable('pending_subscriptions');
}
