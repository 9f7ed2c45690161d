import type { Knex } from 'knex';

/**
 * Signed ESP webhook requests already received (Mailgun's `token`), kept until their timestamp
 * could no longer pass the age check, so a request replayed inside that window is refused —
 * also after a restart or by another process (they were kept in memory before). Not a tenant
 * table: the token belongs to the installation's ESP account, not to one of Herald's accounts.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('esp_replay_tokens', (t) => {
    t.text('provider').notNullable();
    t.text('token').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['provider', 'token']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('esp_replay_tokens');
}
