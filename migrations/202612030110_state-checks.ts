import type { Knex } from 'knex';

/**
 * The status-like columns that had no CHECK constraint get one (src/states.ts names their
 * values; test/api/status-checks.test.ts reads the catalog and fails on any such column
 * without one). The values are written out here, not imported: a migration is history.
 *
 * `bounce_reports.status` is not a state but the report's RFC 3463 enhanced status code
 * (`5.1.1`): every parser writes one of that form or none, and the CHECK says so.
 *
 * Adding a constraint checks the existing rows; the code has only ever written these values.
 * templates and unsubscribe_groups are small; bounce_reports is bounded by BOUNCE_RETENTION_DAYS,
 * and its check is one regular expression per row.
 */
export async function up(knex: Knex): Promise<void> {
  // 1 the blank canvas, 0 a designed template
  await knex.raw('ALTER TABLE templates ADD CONSTRAINT templates_is_blank_check CHECK (is_blank IN (0, 1))');
  // 1 shown on the unsubscribe preferences page, 0 not shown there
  await knex.raw('ALTER TABLE unsubscribe_groups ADD CONSTRAINT unsubscribe_groups_is_display_check CHECK (is_display IN (0, 1))');
  await knex.raw(`ALTER TABLE bounce_reports ADD CONSTRAINT bounce_reports_status_check CHECK (status ~ '^[245]\\.[0-9]{1,3}\\.[0-9]{1,3}$')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE bounce_reports DROP CONSTRAINT bounce_reports_status_check');
  await knex.raw('ALTER TABLE unsubscribe_groups DROP CONSTRAINT unsubscribe_groups_is_display_check');
  await knex.raw('ALTER TABLE templates DROP CONSTRAINT templates_is_blank_check');
}
