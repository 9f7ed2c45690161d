import type { Knex } from 'knex';

/**
 * A running single send may be paused and resumed (issue 34): `paused_at` is when it was paused
 * (null while it is not). While it is set, the send's queued recipient rows wait with
 * `next_attempt_at = 'infinity'` (never due, so the claim needs no join), its fan-out writes no
 * chunk, and it is not completed (src/single-sends/pause.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE single_sends ADD COLUMN paused_at timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE single_sends DROP COLUMN paused_at');
}
