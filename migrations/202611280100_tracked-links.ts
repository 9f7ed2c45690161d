import type { Knex } from 'knex';
import { owner } from '../src/db/schema-helpers';

/**
 * Click tracking (src/delivery/links.ts, src/public/tracking.ts). `tracked_links`: every link a
 * single send's or automation's emails carry, registered once when the design is compiled, with
 * its click counters (kept by src/events/statistics.ts). `link_clicks`: per recipient row and
 * link, how many clicks and how many of them not suspected of being a scanner — what makes a
 * click the first (unique) one, decided atomically by the upsert. `deliveries.clicked_at`: the
 * first human click of a message, the same for the message's unique clicks.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tracked_links', (t) => {
    t.bigIncrements('id', { primaryKey: false });
    owner(t);
    t.primary(['id', 'user_id']);
    t.integer('single_send_id').nullable();
    t.integer('automation_id').nullable();
    t.foreign(['single_send_id', 'user_id']).references(['id', 'user_id']).inTable('single_sends').onDelete('CASCADE');
    t.foreign(['automation_id', 'user_id']).references(['id', 'user_id']).inTable('automations').onDelete('CASCADE');
    t.text('url').notNullable();
    t.integer('total_clicks').notNullable().defaultTo(0);
    t.integer('unique_clicks').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE tracked_links ADD CONSTRAINT tracked_links_one_owner
    CHECK ((single_send_id IS NULL) <> (automation_id IS NULL))`);
  await knex.raw(`CREATE UNIQUE INDEX tracked_links_owner_url ON tracked_links
    (user_id, coalesce(single_send_id, 0), coalesce(automation_id, 0), md5(url))`);
  await knex.schema.createTable('link_clicks', (t) => {
    t.bigInteger('delivery_id').notNullable();
    t.bigInteger('link_id').notNullable();
    owner(t);
    t.foreign(['link_id', 'user_id']).references(['id', 'user_id']).inTable('tracked_links').onDelete('CASCADE');
    t.integer('clicks').notNullable().defaultTo(0);
    t.integer('human_clicks').notNullable().defaultTo(0);
    t.primary(['delivery_id', 'link_id', 'user_id']);
  });
  await knex.raw('CREATE INDEX link_clicks_link ON link_clicks (link_id)');
  await knex.schema.alterTable('deliveries', (t) => {
    t.timestamp('clicked_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('deliveries', (t) => t.dropColumn('clicked_at'));
  await knex.schema.dropTable('link_clicks');
  await knex.schema.dropTable('tracked_links');
}
