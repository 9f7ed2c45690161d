import type { Knex } from 'knex';
import { owner, softDelete, timestamps } from '../src/db/schema-helpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('contacts', (t) => {
    t.increments('id');
    owner(t);
    t.integer('contact_type_id').notNullable().references('id').inTable('contact_types');
    t.string('first_name', 255).notNullable().defaultTo('');
    t.string('last_name', 255).notNullable().defaultTo('');
    t.string('email', 254).notNullable();
    t.string('alt_email', 254).nullable();
    t.integer('country_id').nullable().references('id').inTable('countries');
    for (const c of ['state', 'city', 'address_line1', 'address_line2', 'state_province_region', 'postal_code']) {
      t.string(c, 255).notNullable().defaultTo('');
    }
    // Custom field values keyed by field id (names can be reused after a delete; ids cannot).
    t.jsonb('custom_fields').notNullable().defaultTo('{}');
    softDelete(t);
    timestamps(t, knex);
  });
  // One live contact per address and contact type, compared case-insensitively.
  await knex.raw(
    'CREATE UNIQUE INDEX contacts_type_email_unique ON contacts (contact_type_id, lower(email)) WHERE deleted_at IS NULL',
  );
  // The list (newest first per account) and contacts_count per type.
  await knex.raw('CREATE INDEX contacts_user_live_index ON contacts (user_id, id DESC) WHERE deleted_at IS NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('contacts');
}
