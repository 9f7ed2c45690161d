import type { Knex } from 'knex';
import { timestamps } from '../src/db/schema-helpers';

/**
 * Reserved fields (user_id null, seeded with ids below 1000) and each account's custom
 * fields share one table, so a segment rule's `select_field` id is unambiguous.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('fields', (t) => {
    t.increments('id');
    t.integer('user_id').nullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.string('field_name', 64).notNullable();
    t.string('field_type', 20).notNullable();
    t.smallint('is_reserved').notNullable().defaultTo(0);
    timestamps(t, knex, true);
  });
  await knex.raw(`ALTER TABLE fields ADD CONSTRAINT fields_type_check CHECK (field_type IN ('text', 'number', 'datetime-local'))`);
  await knex.raw('CREATE UNIQUE INDEX fields_field_name_unique ON fields (user_id, lower(field_name)) WHERE user_id IS NOT NULL');
  await knex.raw('CREATE UNIQUE INDEX fields_reserved_name_unique ON fields (lower(field_name)) WHERE user_id IS NULL');
  await knex.raw('ALTER SEQUENCE fields_id_seq RESTART WITH 1001');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('fields');
}
