import type { Knex } from 'knex';

/**
 * A running import's progress, for GET /contacts/imports: the upload's size and how much of
 * it has been read (what a progress bar needs; rows_read alone has no total until the end).
 * The import updates both about once a second from outside its own transaction.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contact_imports', (t) => {
    t.bigInteger('file_bytes').notNullable().defaultTo(0);
    t.bigInteger('bytes_read').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contact_imports', (t) => {
    t.dropColumn('bytes_read');
    t.dropColumn('file_bytes');
  });
}
