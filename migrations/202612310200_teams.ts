import type { Knex } from 'knex';
import { owner } from '../src/db/schema-helpers';

/**
 * Teams (issue 37; src/team/, docs/decisions.md "Teams"): the people of an account, who sign in to
 * the dashboard as themselves, with a role, an optional second factor, and an audit log of what
 * each of them changed.
 *
 * - `members`: an account's users ("users" in the README and the CLI; `user_id` is the account, as
 *   everywhere). The password is a scrypt hash sealed with the master key (AES-256-GCM), the TOTP
 *   secret is sealed the same way; `totp_last_step` refuses a code used twice; `recovery_codes` are
 *   SHA-256 digests of ten one-time codes (a used one is removed). `password_hash` is NULL until the
 *   user sets one (an invitation or the first owner's setup link not used yet).
 * - `member_logins`: the sign-in lookup, email (lower case) → account and user. An address is a
 *   user of one account only. It belongs to no account's shard (a sign-in does not know the
 *   account yet): a global table, on the coordinator on Citus.
 * - `member_tokens`: one-time links (setup 24 h, invitation 72 h, password reset 1 h); only the
 *   token's SHA-256 is kept.
 * - `member_sign_in_failures`: failed sign-ins per address typed (its SHA-256, whether or not a user
 *   has it), for the per-user hold; global like `dashboard_sign_in_failures`.
 * - `audit_log`: what each person (or the API keys) changed, when and from where; kept
 *   AUDIT_RETENTION_DAYS, never edited or deleted through Herald.
 * - `dashboard_sessions.member_id` / `via`: the user a session signs in as (NULL for a sign-in with
 *   the account's keys, which acts as the owner), and how it signed in.
 * - `accounts.require_two_factor`: an owner requires a second factor of every user.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('members', (t) => {
    owner(t);
    t.increments('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.text('email').notNullable();
    t.text('name').notNullable().defaultTo('');
    t.text('role').notNullable();
    t.binary('password_hash').nullable();
    t.binary('totp_secret').nullable();
    t.binary('totp_pending').nullable();
    t.bigInteger('totp_last_step').nullable();
    t.specificType('recovery_codes', 'text[]').notNullable().defaultTo('{}');
    t.timestamp('password_changed_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('last_sign_in_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE members ADD CONSTRAINT members_role_check CHECK (role IN ('owner', 'admin', 'sender', 'editor', 'viewer'))`);
  await knex.raw('CREATE UNIQUE INDEX members_user_email_unique ON members (user_id, lower(email))');

  await knex.schema.createTable('member_logins', (t) => {
    t.text('email').primary();
    t.integer('user_id').notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.integer('member_id').notNullable();
  });

  await knex.schema.createTable('member_tokens', (t) => {
    owner(t);
    t.binary('token_hash').notNullable();
    t.primary(['user_id', 'token_hash']);
    t.integer('member_id').notNullable();
    t.foreign(['user_id', 'member_id']).references(['user_id', 'id']).inTable('members').onDelete('CASCADE');
    t.text('purpose').notNullable();
    t.timestamp('expires_at', { useTz: true, precision: 6 }).notNullable();
    t.timestamp('used_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE member_tokens ADD CONSTRAINT member_tokens_purpose_check CHECK (purpose IN ('setup', 'invite', 'reset'))`);
  await knex.raw('CREATE INDEX member_tokens_member_index ON member_tokens (user_id, member_id)');

  await knex.schema.createTable('member_sign_in_failures', (t) => {
    t.bigIncrements('id');
    t.binary('email_hash').notNullable();
    t.timestamp('failed_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE INDEX member_sign_in_failures_email_index ON member_sign_in_failures (email_hash, failed_at)');
  await knex.raw('CREATE INDEX member_sign_in_failures_failed_at_index ON member_sign_in_failures (failed_at)');

  await knex.schema.createTable('audit_log', (t) => {
    owner(t);
    t.bigIncrements('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.timestamp('at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    // No foreign key: an entry outlives the user it names (the label keeps who it was).
    t.integer('member_id').nullable();
    t.text('actor').notNullable();
    t.text('via').notNullable();
    t.text('address').nullable();
    t.text('action').notNullable();
    t.text('object_kind').nullable();
    t.text('object_id').nullable();
    t.text('summary').notNullable().defaultTo('');
  });
  await knex.raw(`ALTER TABLE audit_log ADD CONSTRAINT audit_log_via_check CHECK (via IN ('api', 'dashboard', 'cli'))`);
  await knex.raw('CREATE INDEX audit_log_user_at_index ON audit_log (user_id, at DESC, id DESC)');
  await knex.raw('CREATE INDEX audit_log_at_index ON audit_log (at)');

  await knex.schema.alterTable('dashboard_sessions', (t) => {
    t.integer('member_id').nullable();
    t.text('via').notNullable().defaultTo('keys');
    t.foreign(['user_id', 'member_id']).references(['user_id', 'id']).inTable('members').onDelete('CASCADE');
  });
  await knex.raw(`ALTER TABLE dashboard_sessions ADD CONSTRAINT dashboard_sessions_via_check CHECK (via IN ('keys', 'password'))`);
  await knex.schema.alterTable('accounts', (t) => {
    t.boolean('require_two_factor').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('accounts', (t) => t.dropColumn('require_two_factor'));
  await knex.raw('ALTER TABLE dashboard_sessions DROP CONSTRAINT dashboard_sessions_via_check');
  await knex.schema.alterTable('dashboard_sessions', (t) => {
    t.dropForeign(['user_id', 'member_id']);
    t.dropColumn('member_id');
    t.dropColumn('via');
  });
  await knex.schema.dropTable('audit_log');
  await knex.schema.dropTable('member_sign_in_failures');
  await knex.schema.dropTable('member_tokens');
  await knex.schema.dropTable('member_logins');
  await knex.schema.dropTable('members');
}
