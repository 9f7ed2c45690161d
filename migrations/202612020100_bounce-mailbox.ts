import type { Knex } from 'knex';

/**
 * Where the bounce mailbox follower (BOUNCE_IMAP_URL, src/bounces/imap-follower.ts) got to:
 * one row per mailbox (`host:port/user/mailbox`, never the password), the mailbox's
 * UIDVALIDITY and the highest UID read under it, so a restart reads only new mail; a new
 * UIDVALIDITY starts over (processing a report again changes nothing). `lease_owner` /
 * `lease_until`: one worker follows a mailbox at a time, another takes over when the lease
 * runs out. Not a tenant table: the mailbox belongs to the installation.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('bounce_mailboxes', (t) => {
    t.text('mailbox').primary();
    t.bigInteger('uid_validity').nullable();
    t.bigInteger('last_uid').notNullable().defaultTo(0);
    t.text('lease_owner').nullable();
    t.timestamp('lease_until', { useTz: true }).nullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('bounce_mailboxes');
}
