import type { Knex } from 'knex';
import { distributeNewTable } from '../src/db/citus';
import { owner, timestamps } from '../src/db/schema-helpers';

/**
 * A/B tests of single sends (docs/decisions.md, "A/B tests").
 *
 * - `ab_tests`: one per A/B send — its settings as the API took them, and where the test stands
 *   (pending until the send starts, testing, waiting for a person, decided), the winner and why,
 *   the size of the test group, when its last message left the queue, and `result`: the
 *   variations' counters and statistics frozen at the decision.
 * - `single_send_variations`: the 2–6 variations of an A/B send, index 0 the send's own subject,
 *   design or sender (A), each with what it replaces and the counters of its test-phase messages
 *   (kept by src/statistics as an owner of statistics, src/sources).
 * - `deliveries.ab_variation_id` / `ab_phase`: the variation a recipient row sends and in which
 *   phase (1 test, 2 winner); a row of the rest of the audience is `held` until the decision
 *   releases it to the winner. `events.ab_variation_id` and `tracked_links.ab_variation_id` name
 *   the variation as an owner (a design test's links are its variations').
 *
 * The states are written out here, not imported: a migration is history.
 */
const COUNTERS = ['triggered', 'delivered', 'unique_opens', 'total_opens', 'bounces', 'unsubscribes', 'deferred', 'dropped', 'bounced_hard', 'bounced_soft', 'unique_clicks', 'total_clicks', 'complaints'];

/** The account event of a decision (src/events/types.ts ACCOUNT_EVENT_TYPES). */
const DECIDED = 'single_send.ab_decided';

const DELIVERY_STATUSES = ['queued', 'sending', 'sent', 'bounced', 'failed', 'cancelled', 'dropped'];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('ab_tests', (t) => {
    owner(t);
    t.integer('single_send_id').notNullable();
    t.primary(['single_send_id', 'user_id']);
    t.text('type').notNullable();
    t.smallint('test_percentage').notNullable();
    t.integer('duration_minutes').notNullable();
    t.text('winner_criteria').notNullable();
    t.decimal('confidence', 4, 3).notNullable();
    t.text('if_inconclusive').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.smallint('winner').nullable();
    t.timestamp('decided_at', { useTz: true, precision: 6 }).nullable();
    t.text('decided_by').nullable();
    t.integer('test_size').nullable();
    t.timestamp('test_done_at', { useTz: true, precision: 6 }).nullable();
    t.jsonb('result').nullable();
    timestamps(t, knex);
  });
  // On Citus, distributed before its foreign keys to other tenant tables (docs/scaling.md).
  await distributeNewTable(knex, 'ab_tests');
  await knex.schema.alterTable('ab_tests', (t) => {
    t.foreign(['single_send_id', 'user_id']).references(['id', 'user_id']).inTable('single_sends').onDelete('CASCADE');
  });
  await knex.raw(`ALTER TABLE ab_tests
    ADD CONSTRAINT ab_tests_type_check CHECK (type IN ('subject', 'design', 'sender')),
    ADD CONSTRAINT ab_tests_test_percentage_check CHECK (test_percentage BETWEEN 1 AND 100),
    ADD CONSTRAINT ab_tests_duration_minutes_check CHECK (duration_minutes BETWEEN 1 AND 10080),
    ADD CONSTRAINT ab_tests_winner_criteria_check CHECK (winner_criteria IN ('open', 'click', 'manual')),
    ADD CONSTRAINT ab_tests_confidence_check CHECK (confidence BETWEEN 0.5 AND 0.999),
    ADD CONSTRAINT ab_tests_if_inconclusive_check CHECK (if_inconclusive IN ('send_leader', 'send_original', 'wait')),
    ADD CONSTRAINT ab_tests_status_check CHECK (status IN ('pending', 'testing', 'waiting', 'decided')),
    ADD CONSTRAINT ab_tests_decided_by_check CHECK (decided_by IN ('significant', 'leader', 'original', 'manual')),
    ADD CONSTRAINT ab_tests_decision_check CHECK ((status = 'decided') = (winner IS NOT NULL AND decided_at IS NOT NULL AND decided_by IS NOT NULL))`);
  // The housekeeping step that notices a test group's last message walks the sends still testing.
  await knex.raw(`CREATE INDEX ab_tests_testing_index ON ab_tests (single_send_id) WHERE status = 'testing' AND test_done_at IS NULL`);

  await knex.schema.createTable('single_send_variations', (t) => {
    t.increments('id', { primaryKey: false });
    owner(t);
    t.primary(['id', 'user_id']);
    t.integer('single_send_id').notNullable();
    t.smallint('idx').notNullable();
    t.string('subject', 255).nullable();
    t.integer('template_id').nullable();
    t.text('template_html').nullable();
    t.text('template_json').nullable();
    t.integer('sender_id').nullable();
    t.string('from_sender', 255).nullable();
    t.string('reply_to', 255).nullable();
    t.string('sender_name', 255).nullable();
    t.text('sender_address').nullable();
    for (const c of COUNTERS) t.integer(c).notNullable().defaultTo(0);
    timestamps(t, knex);
  });
  await distributeNewTable(knex, 'single_send_variations');
  await knex.schema.alterTable('single_send_variations', (t) => {
    t.foreign(['single_send_id', 'user_id']).references(['id', 'user_id']).inTable('single_sends').onDelete('CASCADE');
    t.foreign(['sender_id', 'user_id']).references(['id', 'user_id']).inTable('senders');
    t.foreign('template_id').references('id').inTable('templates');
  });
  await knex.raw('ALTER TABLE single_send_variations ADD CONSTRAINT single_send_variations_idx_check CHECK (idx BETWEEN 0 AND 5)');
  await knex.raw('CREATE UNIQUE INDEX single_send_variations_send_idx ON single_send_variations (single_send_id, idx, user_id)');

  await knex.schema.alterTable('deliveries', (t) => {
    t.integer('ab_variation_id').nullable();
    t.smallint('ab_phase').nullable();
  });
  await knex.raw('ALTER TABLE deliveries ADD CONSTRAINT deliveries_ab_phase_check CHECK (ab_phase IN (1, 2))');
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check');
  await knex.raw(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN (${[...DELIVERY_STATUSES, 'held'].map((s) => `'${s}'`).join(', ')}))`);
  // The release finds a send's held rows, and the check for a finished test group its test rows
  // still to send, without walking the send's whole audience: each index holds only those rows.
  await knex.raw(`CREATE INDEX deliveries_held_index ON deliveries (single_send_id, user_id) WHERE status = 'held'`);
  await knex.raw(`CREATE INDEX deliveries_ab_test_pending_index ON deliveries (single_send_id, user_id)
    WHERE ab_phase = 1 AND status IN ('queued', 'sending')`);

  await knex.schema.alterTable('events', (t) => t.integer('ab_variation_id').nullable());
  await replaceTypeCheck(knex, (def) => def.replace('ARRAY[', `ARRAY['${DECIDED}'::text, `));

  await knex.schema.alterTable('tracked_links', (t) => {
    t.integer('ab_variation_id').nullable();
    t.foreign(['ab_variation_id', 'user_id']).references(['id', 'user_id']).inTable('single_send_variations').onDelete('CASCADE');
  });
  await knex.raw('ALTER TABLE tracked_links DROP CONSTRAINT tracked_links_one_owner');
  await knex.raw(`ALTER TABLE tracked_links ADD CONSTRAINT tracked_links_one_owner
    CHECK ((single_send_id IS NULL)::int + (automation_id IS NULL)::int + (ab_variation_id IS NULL)::int = 2)`);
  await knex.raw('DROP INDEX tracked_links_owner_url');
  await knex.raw(`CREATE UNIQUE INDEX tracked_links_owner_url ON tracked_links
    (user_id, coalesce(single_send_id, 0), coalesce(automation_id, 0), coalesce(ab_variation_id, 0), md5(url))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX tracked_links_owner_url');
  await knex.raw(`DELETE FROM tracked_links WHERE ab_variation_id IS NOT NULL`);
  await knex.raw(`CREATE UNIQUE INDEX tracked_links_owner_url ON tracked_links
    (user_id, coalesce(single_send_id, 0), coalesce(automation_id, 0), md5(url))`);
  await knex.raw('ALTER TABLE tracked_links DROP CONSTRAINT tracked_links_one_owner');
  await knex.raw(`ALTER TABLE tracked_links ADD CONSTRAINT tracked_links_one_owner CHECK ((single_send_id IS NULL) <> (automation_id IS NULL))`);
  await knex.schema.alterTable('tracked_links', (t) => t.dropColumn('ab_variation_id'));
  await knex('events').where('type', DECIDED).delete();
  await replaceTypeCheck(knex, (def) => def.replace(`'${DECIDED}'::text, `, ''));
  await knex.schema.alterTable('events', (t) => t.dropColumn('ab_variation_id'));
  await knex.raw('DROP INDEX deliveries_ab_test_pending_index');
  await knex.raw('DROP INDEX deliveries_held_index');
  await knex.raw(`UPDATE deliveries SET status = 'cancelled' WHERE status = 'held'`);
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check');
  await knex.raw(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN (${DELIVERY_STATUSES.map((s) => `'${s}'`).join(', ')}))`);
  await knex.schema.alterTable('deliveries', (t) => {
    t.dropColumn('ab_phase');
    t.dropColumn('ab_variation_id');
  });
  await knex.schema.dropTable('single_send_variations');
  await knex.schema.dropTable('ab_tests');
}

async function replaceTypeCheck(knex: Knex, edit: (definition: string) => string): Promise<void> {
  const { rows } = await knex.raw(
    `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'events_type_check' AND conrelid = 'events'::regclass`,
  );
  await knex.raw('ALTER TABLE events DROP CONSTRAINT events_type_check');
  await knex.raw(`ALTER TABLE events ADD CONSTRAINT events_type_check ${edit(rows[0].def as string)}`);
}
