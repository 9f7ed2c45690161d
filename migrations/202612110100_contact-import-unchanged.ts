import type { Knex } from 'knex';

/**
 * An import's rows that matched a contact whose values they would not change: counted apart
 * from `updated` (rows that changed a contact), as nothing was written for them (issue 18).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contact_imports', (t) => {
    t.integer('unchanged').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('contact_imports', (t) => {
    t.dropColumn('unchanged');
  });
}
