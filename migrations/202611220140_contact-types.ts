import type { Knex } from 'knex';
import { owner, softDelete, timestamps } from '../src/db/schema-helpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('contact_types', (t) => {
    t.increments('id');
    owner(t);
    t.string('name', 255).notNullable();
    softDelete(t);
    timestamps(t, knex);
  });
  await knex.raw('CREATE INDEX contact_types_user_live_index ON contact_types (user_id, id DESC) WHERE deleted_at IS NULL');
  // Names are unique per account among live types (checked in the service; this catches races).
  await knex.raw(
    'CREATE UNIQUE INDEX contact_types_name_unique ON contact_types (user_id, lower(name)) WHERE deleted_at IS NULL',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('contact_types');
}
