import type { Knex } from 'knex';
import { owner, timestamps } from '../src/db/schema-helpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('notification_recipients', (t) => {
    t.increments('id');
    owner(t);
    t.string('email_address', 254).notNullable();
    t.string('email_owner', 255).notNullable();
    timestamps(t, knex);
  });
  await knex.raw(
    'CREATE UNIQUE INDEX notification_recipients_email_address_unique ON notification_recipients (user_id, lower(email_address))',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('notification_recipients');
}
