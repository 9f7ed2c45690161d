import type { Knex } from 'knex';
import { owner } from '../src/db/schema-helpers';

/** What happened in an account (send started/completed, sender verified, …), kept and mailed to its notification recipients. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('account_events', (t) => {
    t.bigIncrements('id');
    owner(t);
    t.string('type', 40).notNullable();
    t.string('subject', 255).notNullable();
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.integer('notified').notNullable().defaultTo(0);
    t.text('notify_error').nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE INDEX account_events_user_index ON account_events (user_id, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('account_events');
}
