import type { Knex } from 'knex';

/**
 * An A/B test's winner is a variation's index, never below 0 (issue 33). The dashboard's pick
 * once took `-1` (an empty or non-numeric value became it): the test was recorded as decided
 * with winner −1 and `releasing`, the claim found no variation −1 to release the held rest to,
 * and the send waited for good. The pick is now checked once for every caller
 * (src/ab/decision.ts); the CHECK keeps any other writer from doing it again.
 *
 * A test left so is opened again first, waiting for a person's pick, as it was before the bad
 * one: nothing was released (no held row matched), so no recipient got a winner's message.
 * Citus propagates both statements to every shard of the distributed table.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE ab_tests
    SET status = 'waiting', winner = NULL, decided_by = NULL, decided_at = NULL, result = NULL, releasing = false, updated_at = now()
    WHERE winner < 0`);
  await knex.raw('ALTER TABLE ab_tests ADD CONSTRAINT ab_tests_winner_check CHECK (winner >= 0)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE ab_tests DROP CONSTRAINT ab_tests_winner_check');
}
