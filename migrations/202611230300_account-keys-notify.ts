import type { Knex } from 'knex';

/**
 * API processes keep verified key pairs in memory for a while (src/accounts/key-cache.ts).
 * Whatever changes or removes an account's keys — `herald account rotate-keys`, or an
 * operator's SQL — notifies them on the `herald_account_keys` channel with the account id, at
 * commit, so they drop that account's cached pairs.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION accounts_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('herald_account_keys', OLD.id::text);
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE TRIGGER accounts_keys_changed
      AFTER UPDATE OF public_key, secret_key_hash OR DELETE ON accounts
      FOR EACH ROW EXECUTE FUNCTION accounts_keys_changed()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER accounts_keys_changed ON accounts');
  await knex.raw('DROP FUNCTION accounts_keys_changed()');
}
