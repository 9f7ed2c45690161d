import type { Knex } from 'knex';

/**
 * DKIM keys (docs/decisions.md, "DKIM and sender DNS"): one signing key per account and sending
 * domain, and one per domain of MAIL_FROM for Herald's own mail (`user_id` null). A key is
 * `active` (signs), `pending` (made by a rotation; signs once its record is found published) or
 * `retired`. The private key is AES-256-GCM ciphertext (nonce ‖ tag ‖ ciphertext) under the
 * master key, which is never in the database. `checks` holds the last DNS check of the domain's
 * records on its active key (purpose → status), `dns_status` this key's own DKIM record's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE dkim_keys (
      id serial PRIMARY KEY,
      user_id integer REFERENCES accounts (id) ON DELETE CASCADE,
      domain text NOT NULL CHECK (domain = lower(domain) AND domain <> ''),
      selector text NOT NULL CHECK (selector ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
      algorithm text NOT NULL CHECK (algorithm IN ('rsa-sha256')),
      public_key text NOT NULL,
      private_key bytea NOT NULL,
      state text NOT NULL CHECK (state IN ('active', 'pending', 'retired')),
      dns_status text NOT NULL DEFAULT 'unchecked' CHECK (dns_status IN ('verified', 'missing', 'mismatch', 'unchecked')),
      checks jsonb NOT NULL DEFAULT '{}',
      checked_at timestamptz(6),
      verified_at timestamptz(6),
      created_at timestamptz(6) NOT NULL DEFAULT now(),
      CONSTRAINT dkim_keys_domain_selector_unique UNIQUE (domain, selector)
    )`);
  // One active and at most one pending key per account (or installation) and domain.
  await knex.raw(`CREATE UNIQUE INDEX dkim_keys_active_unique ON dkim_keys (coalesce(user_id, 0), domain) WHERE state = 'active'`);
  await knex.raw(`CREATE UNIQUE INDEX dkim_keys_pending_unique ON dkim_keys (coalesce(user_id, 0), domain) WHERE state = 'pending'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE dkim_keys');
}
