import type { Knex } from 'knex';
import { owner, softDelete, timestamps } from '../src/db/schema-helpers';

/**
 * Segments are rules over a contact type's contacts, evaluated in SQL whenever they are read
 * or sent (members always reflect the current contacts), plus recipients added by hand.
 *
 * The member count of a list of segments would cost one scan each; it is cached per segment
 * under a key made of the contact type's `contacts_version` (bumped by every contact write in
 * its own transaction) and the segment's `revision` (bumped by rule changes and hand-added
 * recipients). Key and count are read in one statement, so one snapshot: a cached count is
 * used only while its key is current, and is never stale.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contact_types', (t) => {
    t.bigInteger('contacts_version').notNullable().defaultTo(0);
  });

  await knex.schema.createTable('segments', (t) => {
    t.increments('id');
    owner(t);
    t.integer('contact_type_id').notNullable().references('id').inTable('contact_types');
    t.string('segment_name', 255).notNullable();
    t.jsonb('select_field').notNullable().defaultTo('[]');
    t.jsonb('select_operator').notNullable().defaultTo('[]');
    t.jsonb('value').notNullable().defaultTo('[]');
    t.string('query_type', 8).nullable();
    t.integer('revision').notNullable().defaultTo(0);
    t.integer('members_count').nullable();
    t.string('members_key', 64).nullable();
    softDelete(t);
    timestamps(t, knex);
  });
  await knex.raw('CREATE INDEX segments_user_live_index ON segments (user_id, id DESC) WHERE deleted_at IS NULL');

  await knex.schema.createTable('segment_recipients', (t) => {
    t.increments('id');
    owner(t);
    t.integer('segment_id').notNullable().references('id').inTable('segments').onDelete('CASCADE');
    t.integer('contact_id').nullable().references('id').inTable('contacts');
    t.string('first_name', 255).nullable();
    t.string('last_name', 255).nullable();
    t.string('email', 254).notNullable();
    t.string('country', 255).nullable();
    t.string('state', 255).nullable();
    t.string('city', 255).nullable();
    t.string('address_line1', 255).nullable();
    timestamps(t, knex);
  });
  await knex.raw('CREATE UNIQUE INDEX segment_recipients_email_unique ON segment_recipients (segment_id, lower(email))');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('segment_recipients');
  await knex.schema.dropTable('segments');
  await knex.schema.alterTable('contact_types', (t) => {
    t.dropColumn('contacts_version');
  });
}
