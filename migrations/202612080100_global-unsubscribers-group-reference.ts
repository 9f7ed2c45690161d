import type { Knex } from 'knex';

/**
 * A global unsubscribe's group reference loses `ON DELETE SET NULL (unsubscribe_groups_id)`:
 * Citus refuses SET NULL on a foreign key that includes the distribution column (`user_id`),
 * even when only the other column is set to null ("SET NULL or SET DEFAULT is not supported in
 * ON DELETE operation when distribution key is included in the foreign key constraint", tried on
 * a cluster; docs/decisions.md, "Citus"). Nothing depended on it: Herald deletes an
 * unsubscribe group softly (its row stays, for old emails' unsubscribe pages), and an account's
 * deletion removes its global unsubscribes in the same statement as its groups. A hard delete of
 * a group that a global unsubscribe names is now refused instead of forgetting the group.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE global_unsubscribers
      DROP CONSTRAINT global_unsubscribers_unsubscribe_groups_id_foreign,
      ADD CONSTRAINT global_unsubscribers_unsubscribe_groups_id_foreign
        FOREIGN KEY (unsubscribe_groups_id, user_id) REFERENCES unsubscribe_groups (id, user_id)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE global_unsubscribers
      DROP CONSTRAINT global_unsubscribers_unsubscribe_groups_id_foreign,
      ADD CONSTRAINT global_unsubscribers_unsubscribe_groups_id_foreign
        FOREIGN KEY (unsubscribe_groups_id, user_id) REFERENCES unsubscribe_groups (id, user_id) ON DELETE SET NULL (unsubscribe_groups_id)`);
}
