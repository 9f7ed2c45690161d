import type { Knex } from 'knex';

/** The shared token bucket of SEND_RATE_SCOPE=global (src/delivery/throttle.ts). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('send_budget', (t) => {
    t.string('scope', 20).primary();
    t.double('tokens').notNullable().defaultTo(0);
    t.timestamp('refilled_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('send_budget');
}
