import type { Knex } from 'knex';
import { distributeNewTable } from '../src/db/citus';
import { owner } from '../src/db/schema-helpers';

/**
 * Drafts and test sends of single sends (issue 34).
 *
 * - A draft (status 0) is saved with only its name: its design, sender and unsubscribe group may
 *   be missing until it is scheduled, so those three references may be null — on a draft only
 *   (`single_sends_draft_complete`: every other status has all three, as before). Its missing
 *   texts are stored as empty strings.
 * - `test_sends`: one row per test message sent (POST /single/send/test), kept for the per-account
 *   limit of test messages per hour; nothing reads it for statistics. Rows older than a day are
 *   of no use to the limit and are removed as new ones are written.
 *
 * Citus propagates the ALTERs to every shard; `test_sends` is distributed by `user_id`.
 */
const REFERENCES = ['template_id', 'sender_id', 'unsubscribe_group_id'];

export async function up(knex: Knex): Promise<void> {
  for (const c of REFERENCES) await knex.raw(`ALTER TABLE single_sends ALTER COLUMN ${c} DROP NOT NULL`);
  await knex.raw(`ALTER TABLE single_sends ADD CONSTRAINT single_sends_draft_complete
    CHECK (status = 0 OR (${REFERENCES.map((c) => `${c} IS NOT NULL`).join(' AND ')}))`);

  await knex.schema.createTable('test_sends', (t) => {
    owner(t);
    t.bigIncrements('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.integer('single_send_id').notNullable();
    t.string('email', 254).notNullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE INDEX test_sends_user_created_index ON test_sends (user_id, created_at)');
  await distributeNewTable(knex, 'test_sends');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('test_sends');
  // Drafts that lack a reference cannot be kept once the columns are required again.
  await knex.raw(`DELETE FROM single_sends WHERE ${REFERENCES.map((c) => `${c} IS NULL`).join(' OR ')}`);
  await knex.raw('ALTER TABLE single_sends DROP CONSTRAINT single_sends_draft_complete');
  for (const c of REFERENCES) await knex.raw(`ALTER TABLE single_sends ALTER COLUMN ${c} SET NOT NULL`);
}
