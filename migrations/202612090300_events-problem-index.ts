import type { Knex } from 'knex';

/**
 * A send's bounces and complaints (the dashboard's send report, GET /events with
 * `type=bounced,complained` and a send or automation) without reading the send's other events:
 * a partial index holding only those two types, a small share of any account's events.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX events_problem_send_index ON events (user_id, single_send_id, id) WHERE type IN ('bounced', 'complained') AND single_send_id IS NOT NULL`);
  await knex.raw(`CREATE INDEX events_problem_automation_index ON events (user_id, automation_id, id) WHERE type IN ('bounced', 'complained') AND automation_id IS NOT NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX events_problem_automation_index');
  await knex.raw('DROP INDEX events_problem_send_index');
}
