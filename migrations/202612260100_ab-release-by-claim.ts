import type { Knex } from 'knex';

/**
 * An A/B test's decision no longer rewrites the held rest of the audience (issue 19): an UPDATE
 * of 800,000 held rows took 7–16 s on this machine (a new version of every row and an entry in
 * three of its indexes, one of them the unique `lower(email)` index), against a target of 5 s.
 * The decision now marks the test `releasing`, and the worker's claim takes a releasing test's
 * held rows straight to `sending` with the winner's variation (src/delivery/queue.ts) — the
 * write every row gets anyway when it is claimed. `releasing` ends when the send completes or is
 * deleted (the claim only ever probes tests still releasing, through their partial index).
 *
 * `audience_size`: the recipients written when the test group was taken, so the decision can
 * say how many rows it released (the rest: audience less test group) without counting them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('ab_tests', (t) => {
    t.boolean('releasing').notNullable().defaultTo(false);
    t.integer('audience_size').nullable();
  });
  await knex.raw(`ALTER TABLE ab_tests ADD CONSTRAINT ab_tests_releasing_check CHECK (NOT releasing OR status = 'decided')`);
  await knex.raw('CREATE INDEX ab_tests_releasing_index ON ab_tests (user_id, decided_at) WHERE releasing');
}

export async function down(knex: Knex): Promise<void> {
  // Rows a releasing test still holds go to the winner the old way: queued, due now.
  await knex.raw(`
    UPDATE deliveries d SET status = 'queued', ab_variation_id = v.id, ab_phase = 2, next_attempt_at = now()
    FROM ab_tests t JOIN single_send_variations v ON v.single_send_id = t.single_send_id AND v.user_id = t.user_id AND v.idx = t.winner
    WHERE t.releasing AND d.single_send_id = t.single_send_id AND d.user_id = t.user_id AND d.status = 'held'`);
  await knex.raw('DROP INDEX ab_tests_releasing_index');
  await knex.raw('ALTER TABLE ab_tests DROP CONSTRAINT ab_tests_releasing_check');
  await knex.schema.alterTable('ab_tests', (t) => {
    t.dropColumn('audience_size');
    t.dropColumn('releasing');
  });
}
