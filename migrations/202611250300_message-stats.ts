import type { Knex } from 'knex';
import { owner } from '../src/db/schema-helpers';

/**
 * Counters the spec does not have, kept like the spec's from recorded events
 * (src/events/statistics.ts) and shown only by GET /single/send/stats and /automations/stats:
 * deferrals, drops, bounces by kind, clicks, complaints. `message_stats_hourly` is the same
 * consumer's hourly timeline per send or automation (delivered, opens, clicks, unsubscribes).
 */
const COUNTERS = ['deferred', 'dropped', 'bounced_hard', 'bounced_soft', 'unique_clicks', 'total_clicks', 'complaints'];

export async function up(knex: Knex): Promise<void> {
  for (const table of ['single_sends', 'automations']) {
    await knex.schema.alterTable(table, (t) => {
      for (const c of COUNTERS) t.integer(c).notNullable().defaultTo(0);
    });
  }
  await knex.schema.createTable('message_stats_hourly', (t) => {
    owner(t);
    t.bigIncrements('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.text('owner_type').notNullable();
    t.integer('owner_id').notNullable();
    t.timestamp('hour', { useTz: true }).notNullable();
    for (const c of ['delivered', 'opens', 'clicks', 'unsubscribes']) t.integer(c).notNullable().defaultTo(0);
    t.unique(['user_id', 'owner_type', 'owner_id', 'hour'], { indexName: 'message_stats_hourly_owner_hour_unique' });
  });
  await knex.raw(`ALTER TABLE message_stats_hourly ADD CONSTRAINT message_stats_hourly_owner_type_check CHECK (owner_type IN ('single_send', 'automation'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('message_stats_hourly');
  for (const table of ['single_sends', 'automations']) {
    await knex.schema.alterTable(table, (t) => {
      for (const c of COUNTERS) t.dropColumn(c);
    });
  }
}
