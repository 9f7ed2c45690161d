import type { Knex } from 'knex';

/**
 * A recipient the suppression rule refuses (src/suppression) is written as a `dropped` row, with
 * its reason in `last_error`, instead of being left out of the send silently. Dropped rows are
 * never claimed (the queue index covers queued and sending rows only).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check');
  await knex.raw(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
    CHECK (status IN ('queued', 'sending', 'sent', 'bounced', 'failed', 'cancelled', 'dropped'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DELETE FROM deliveries WHERE status = 'dropped'`);
  await knex.raw('ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check');
  await knex.raw(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
    CHECK (status IN ('queued', 'sending', 'sent', 'bounced', 'failed', 'cancelled'))`);
}
