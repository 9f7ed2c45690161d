import type { Knex } from 'knex';
import { distributeNewTable } from '../src/db/citus';
import { owner, softDelete, timestamps } from '../src/db/schema-helpers';

/**
 * An account's saved designs (issue 34; src/resources/designs, docs/decisions.md "Saved designs").
 *
 * Their ids come from a sequence starting at 1001 and never go below it (a CHECK), so they share
 * the id space of `template_id` with the built-in designs of `templates` (fixed ids below 1000):
 * a send, an automation email or an A/B variation names either by its `template_id`. `source` is
 * what the editor wrote (block JSON, Markdown or HTML); `html_code` is its rendering, made at save
 * and kept; `json_code` the block document of a `blocks` design ('' otherwise). Soft delete: a
 * deleted design keeps resolving for the sends and emails that already name it.
 *
 * `template_id` cannot keep its foreign key to `templates` now that it names designs too (a
 * foreign key names one table): the API checks it (src/resources/shared/design-rules.ts), and
 * neither a built-in (seeded, never deleted) nor a design (soft-deleted) row ever goes away.
 */
const REFERRERS = ['single_sends', 'automation_schedules', 'single_send_variations'];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('designs', (t) => {
    t.increments('id', { primaryKey: false });
    owner(t);
    t.primary(['user_id', 'id']);
    t.string('template_name', 255).notNullable();
    t.string('format', 16).notNullable();
    t.text('source').notNullable();
    t.text('html_code').notNullable();
    t.text('json_code').notNullable().defaultTo('');
    timestamps(t, knex);
    softDelete(t);
  });
  await knex.raw('ALTER SEQUENCE designs_id_seq RESTART WITH 1001');
  await knex.raw(`ALTER TABLE designs
    ADD CONSTRAINT designs_id_check CHECK (id >= 1001),
    ADD CONSTRAINT designs_format_check CHECK (format IN ('blocks', 'markdown', 'html'))`);
  await distributeNewTable(knex, 'designs');
  for (const table of REFERRERS) {
    await knex.raw(`ALTER TABLE ${table} DROP CONSTRAINT IF EXISTS ${table}_template_id_foreign`);
  }
}

/** Refused (by the foreign keys it restores) while a send or email still names a saved design. */
export async function down(knex: Knex): Promise<void> {
  for (const table of REFERRERS) {
    await knex.schema.alterTable(table, (t) => {
      t.foreign('template_id').references('id').inTable('templates');
    });
  }
  await knex.schema.dropTable('designs');
}
