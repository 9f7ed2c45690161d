import type { Knex } from 'knex';
import { owner, softDelete, timestamps } from '../src/db/schema-helpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('senders', (t) => {
    t.increments('id');
    owner(t);
    t.string('from_name', 255).notNullable();
    t.string('from_email', 254).notNullable();
    t.string('reply_to_email', 254).notNullable();
    t.integer('country_id').notNullable().references('id').inTable('countries');
    t.integer('state_id').nullable().references('id').inTable('states');
    t.integer('city_id').nullable().references('id').inTable('cities');
    t.string('zip_code', 40).notNullable().defaultTo('');
    t.string('company_address', 255).notNullable();
    t.string('company_address2', 255).notNullable().defaultTo('');
    t.string('nickname', 255).notNullable();
    t.smallint('is_verified').notNullable().defaultTo(0);
    // Public identifier (16 hex characters), not a UUID.
    t.string('utr', 16).notNullable().unique('senders_utr_unique');
    // SHA-256 of the token in the latest verification link; the token itself is only in the mail.
    t.binary('verify_token_hash').nullable();
    // When the last verification mail went out (`send_at` in the record).
    t.timestamp('send_at', { useTz: true, precision: 6 }).nullable();
    softDelete(t);
    timestamps(t, knex);
  });
  await knex.raw('CREATE INDEX senders_user_live_index ON senders (user_id, id DESC) WHERE deleted_at IS NULL');
  await knex.raw('CREATE UNIQUE INDEX senders_verify_token_unique ON senders (verify_token_hash) WHERE verify_token_hash IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('senders');
}
