import type { Knex } from 'knex';
import { owner } from '../src/db/schema-helpers';

/**
 * The dashboard's sign-ins (src/dashboard/sessions.ts, docs/decisions.md "Dashboard").
 *
 * `dashboard_sessions`: one row per signed-in browser. The cookie carries the account id and a
 * random token; only the token's SHA-256 is stored. `public_key` is the account's public key
 * at sign-in: a session whose account has another key pair now (rotated) is over.
 * `last_seen_at` drives the idle expiry (DASHBOARD_SESSION_IDLE_MINUTES).
 *
 * `dashboard_sign_in_failures`: failed sign-ins per client address, for the limit of 10 in 10
 * minutes. Not a tenant table: a failed sign-in belongs to no account.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('dashboard_sessions', (t) => {
    owner(t);
    t.binary('token_hash').notNullable();
    t.primary(['user_id', 'token_hash']);
    t.text('public_key').notNullable();
    t.text('csrf_token').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE INDEX dashboard_sessions_last_seen_index ON dashboard_sessions (last_seen_at)');

  await knex.schema.createTable('dashboard_sign_in_failures', (t) => {
    t.bigIncrements('id');
    t.text('address').notNullable();
    t.timestamp('failed_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE INDEX dashboard_sign_in_failures_address_index ON dashboard_sign_in_failures (address, failed_at)');
  await knex.raw('CREATE INDEX dashboard_sign_in_failures_failed_at_index ON dashboard_sign_in_failures (failed_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('dashboard_sign_in_failures');
  await knex.schema.dropTable('dashboard_sessions');
}
