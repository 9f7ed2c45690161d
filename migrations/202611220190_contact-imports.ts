import type { Knex } from 'knex';
import { owner } from '../src/db/schema-helpers';

/** One row per CSV upload: what it read, wrote and skipped (GET /contacts/imports). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('contact_imports', (t) => {
    t.increments('id');
    owner(t);
    t.integer('contact_type_id').notNullable().references('id').inTable('contact_types');
    t.string('file_name', 255).notNullable();
    t.string('status', 16).notNullable();
    t.integer('rows_read').notNullable().defaultTo(0);
    t.integer('inserted').notNullable().defaultTo(0);
    t.integer('updated').notNullable().defaultTo(0);
    t.integer('skipped').notNullable().defaultTo(0);
    t.jsonb('reasons').notNullable().defaultTo('[]');
    t.jsonb('ignored_columns').notNullable().defaultTo('[]');
    t.text('error').nullable();
    t.integer('duration_ms').nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('finished_at', { useTz: true, precision: 6 }).nullable();
  });
  await knex.raw(`ALTER TABLE contact_imports ADD CONSTRAINT contact_imports_status_check CHECK (status IN ('running', 'completed', 'failed'))`);
  await knex.raw('CREATE INDEX contact_imports_user_index ON contact_imports (user_id, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('contact_imports');
}
