import type { Knex } from 'knex';
import { timestamps } from '../src/db/schema-helpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('accounts', (t) => {
    t.increments('id');
    t.string('name', 255).notNullable();
    t.string('email', 254).notNullable();
    t.string('public_key', 64).notNullable().unique('accounts_public_key_unique');
    // SHA-256 of the secret key; the secret itself is never stored.
    t.binary('secret_key_hash').notNullable();
    timestamps(t, knex);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('accounts');
}
