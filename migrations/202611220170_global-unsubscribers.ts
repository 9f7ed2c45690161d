import type { Knex } from 'knex';
import { owner, timestamps } from '../src/db/schema-helpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('global_unsubscribers', (t) => {
    t.increments('id');
    owner(t);
    // The group of the email the address unsubscribed from, when it came through a page.
    t.integer('unsubscribe_groups_id').nullable().references('id').inTable('unsubscribe_groups').onDelete('SET NULL');
    t.string('email_address', 254).notNullable();
    timestamps(t, knex);
  });
  // Suppression lookups during fan-out are by (user_id, lower(email)).
  await knex.raw(
    'CREATE UNIQUE INDEX global_unsubscribers_email_address_unique ON global_unsubscribers (user_id, lower(email_address))',
  );
  // The list, newest first, one page at a time.
  await knex.raw('CREATE INDEX global_unsubscribers_user_index ON global_unsubscribers (user_id, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('global_unsubscribers');
}
