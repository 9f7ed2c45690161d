import type { Knex } from 'knex';
import { owner, softDelete, timestamps } from '../src/db/schema-helpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('unsubscribe_groups', (t) => {
    t.increments('id');
    owner(t);
    // Public identifier (digits); unique so it can name a group on its own, whatever the account.
    t.string('rand_id', 20).notNullable().unique({ indexName: 'unsubscribe_groups_rand_id_unique' });
    t.string('group_name', 255).notNullable();
    t.text('description').notNullable();
    t.smallint('is_display').notNullable().defaultTo(1);
    // Not part of the record: deleted groups vanish from the API but old emails' pages still resolve.
    softDelete(t);
    timestamps(t, knex);
  });
  await knex.raw('CREATE INDEX unsubscribe_groups_user_live_index ON unsubscribe_groups (user_id, id DESC) WHERE deleted_at IS NULL');

  await knex.schema.createTable('unsubscribe_group_recipients', (t) => {
    t.increments('id');
    owner(t);
    t.integer('unsubscribe_groups_id').notNullable().references('id').inTable('unsubscribe_groups').onDelete('CASCADE');
    t.string('email_address', 254).notNullable();
    timestamps(t, knex);
  });
  await knex.raw(
    'CREATE UNIQUE INDEX unsubscribe_group_recipients_email_address_unique ON unsubscribe_group_recipients (unsubscribe_groups_id, lower(email_address))',
  );
  await knex.raw('CREATE INDEX unsubscribe_group_recipients_user_index ON unsubscribe_group_recipients (user_id)');
  // A group's recipients newest first (recipients-list) and its count in the group list.
  await knex.raw(
    'CREATE INDEX unsubscribe_group_recipients_group_index ON unsubscribe_group_recipients (unsubscribe_groups_id, id DESC)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('unsubscribe_group_recipients');
  await knex.schema.dropTable('unsubscribe_groups');
}
