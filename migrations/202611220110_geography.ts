import type { Knex } from 'knex';

/** Reference data (seeds/02_geography): countries → states → cities. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('countries', (t) => {
    t.increments('id');
    t.string('name', 120).notNullable();
    t.string('iso_code', 2).notNullable().unique('countries_iso_code_unique');
    t.string('phone_code', 40).notNullable().defaultTo('');
  });
  await knex.schema.createTable('states', (t) => {
    t.increments('id');
    t.integer('country_id').notNullable().references('id').inTable('countries');
    t.string('name', 160).notNullable();
    t.string('iso_code', 16).notNullable();
    t.unique(['country_id', 'iso_code'], { indexName: 'states_country_iso_unique' });
  });
  await knex.schema.createTable('cities', (t) => {
    t.increments('id');
    t.integer('country_id').notNullable().references('id').inTable('countries');
    t.integer('state_id').notNullable().references('id').inTable('states');
    t.string('name', 200).notNullable();
    t.index(['state_id'], 'cities_state_id_index');
    t.index(['country_id'], 'cities_country_id_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('cities');
  await knex.schema.dropTable('states');
  await knex.schema.dropTable('countries');
}
