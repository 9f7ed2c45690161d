import type { Knex } from 'knex';

/** Built-in designs (seeds/03_templates); ids below 1000 are Herald's own. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('templates', (t) => {
    t.increments('id');
    t.string('template_name', 255).notNullable();
    t.string('preview_image', 255).notNullable();
    t.text('json_code').notNullable();
    t.text('html_code').notNullable();
    t.smallint('is_blank').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('updated_at', { useTz: true, precision: 6 }).nullable();
  });
  await knex.raw('ALTER SEQUENCE templates_id_seq RESTART WITH 1001');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('templates');
}
