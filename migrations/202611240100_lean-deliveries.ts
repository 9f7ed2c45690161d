import type { Knex } from 'knex';

/** The first statement-level check (migration 202612110300 made it read the rows once; its down restores this). */
export const CHECK_REFERENCES_THREE_READS = `
CREATE FUNCTION deliveries_check_references() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  missing record;
BEGIN
  SELECT n.user_id INTO missing
  FROM (SELECT DISTINCT user_id FROM new_rows) n
  LEFT JOIN LATERAL (SELECT 1 AS found FROM accounts a WHERE a.id = n.user_id FOR KEY SHARE) a ON true
  WHERE a.found IS NULL
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert or update on table "deliveries" violates foreign key constraint "deliveries_user_id_foreign"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries', CONSTRAINT = 'deliveries_user_id_foreign',
            DETAIL = format('Key (user_id)=(%s) is not present in table "accounts".', missing.user_id);
  END IF;
  SELECT n.single_send_id, n.user_id INTO missing
  FROM (SELECT DISTINCT single_send_id, user_id FROM new_rows WHERE single_send_id IS NOT NULL) n
  LEFT JOIN LATERAL (
    SELECT 1 AS found FROM single_sends s WHERE s.id = n.single_send_id AND s.user_id = n.user_id FOR KEY SHARE
  ) s ON true
  WHERE s.found IS NULL
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert or update on table "deliveries" violates foreign key constraint "deliveries_single_send_id_foreign"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries', CONSTRAINT = 'deliveries_single_send_id_foreign',
            DETAIL = format('Key (single_send_id, user_id)=(%s, %s) is not present in table "single_sends".', missing.single_send_id, missing.user_id);
  END IF;
  SELECT n.automation_id, n.user_id INTO missing
  FROM (SELECT DISTINCT automation_id, user_id FROM new_rows WHERE automation_id IS NOT NULL) n
  LEFT JOIN LATERAL (
    SELECT 1 AS found FROM automations x WHERE x.id = n.automation_id AND x.user_id = n.user_id FOR KEY SHARE
  ) x ON true
  WHERE x.found IS NULL
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert or update on table "deliveries" violates foreign key constraint "deliveries_automation_fk"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries', CONSTRAINT = 'deliveries_automation_fk',
            DETAIL = format('Key (automation_id, user_id)=(%s, %s) is not present in table "automations".', missing.automation_id, missing.user_id);
  END IF;
  RETURN NULL;
END
$fn$;`;

/**
 * Recipient rows cost less to write and to move through the queue (bench/README.md, "Fan-out"):
 *
 * - No copy of the contact per row: the worker reads a recipient's placeholder values when it
 *   claims the row (`data` stays only for hand-added segment recipients, who are no contact).
 * - No stored token: the token in a message's links is an HMAC of the row's key with a secret
 *   kept once in `herald_secrets` (src/recipient-token.ts), so it needs neither a random value
 *   per row nor a unique index. Rows written before this migration keep their stored token
 *   (links already mailed keep working), behind a partial index that new rows never enter.
 * - One queue index for claiming and for taking over expired leases (a claimed row's
 *   `next_attempt_at` is the end of its lease), instead of a due index, a lease index and a
 *   per-send status index that every insert and every status change had to maintain.
 * - deliveries' references to its account, single send and automation are checked once per
 *   statement over the rows it wrote, as contacts' are (migration 202611230100), not by three
 *   per-row foreign-key triggers: 1,000,000 recipients took 11.6 s instead of 19.2 s to write
 *   with only this changed. The parents refuse to go while deliveries refer to them, and an
 *   account's deletion takes its deliveries along, as the foreign keys did.
 */
const REFERENCE_CHECKS = `
${CHECK_REFERENCES_THREE_READS}

CREATE TRIGGER deliveries_references_on_insert AFTER INSERT ON deliveries
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION deliveries_check_references();

-- The claim and the outcomes never change these columns; a row trigger limited to them costs
-- those updates nothing and keeps an UPDATE from pointing a row elsewhere unchecked.
CREATE FUNCTION deliveries_references_fixed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.single_send_id IS DISTINCT FROM OLD.single_send_id
     OR NEW.automation_id IS DISTINCT FROM OLD.automation_id THEN
    RAISE EXCEPTION 'the account, single send or automation of a delivery cannot change'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER deliveries_references_fixed BEFORE UPDATE OF user_id, single_send_id, automation_id ON deliveries
  FOR EACH ROW EXECUTE FUNCTION deliveries_references_fixed();

CREATE FUNCTION deliveries_referenced_parent_guard() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_TABLE_NAME = 'single_sends' THEN
    IF EXISTS (SELECT 1 FROM deliveries d JOIN old_rows o ON d.single_send_id = o.id AND d.user_id = o.user_id) THEN
      RAISE EXCEPTION 'update or delete on table "single_sends" violates foreign key constraint "deliveries_single_send_id_foreign" on table "deliveries"'
        USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries', CONSTRAINT = 'deliveries_single_send_id_foreign';
    END IF;
  ELSIF EXISTS (SELECT 1 FROM deliveries d JOIN old_rows o ON d.automation_id = o.id AND d.user_id = o.user_id) THEN
    RAISE EXCEPTION 'update or delete on table "automations" violates foreign key constraint "deliveries_automation_fk" on table "deliveries"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries', CONSTRAINT = 'deliveries_automation_fk';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER single_sends_referenced_by_deliveries AFTER DELETE ON single_sends
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION deliveries_referenced_parent_guard();
CREATE TRIGGER automations_referenced_by_deliveries AFTER DELETE ON automations
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION deliveries_referenced_parent_guard();

CREATE FUNCTION delivery_parent_keys_fixed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.id IS DISTINCT FROM OLD.id OR NEW.user_id IS DISTINCT FROM OLD.user_id THEN
    RAISE EXCEPTION 'the key of a row of "%" that deliveries refer to cannot change', TG_TABLE_NAME
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER single_sends_keys_fixed BEFORE UPDATE OF id, user_id ON single_sends
  FOR EACH ROW EXECUTE FUNCTION delivery_parent_keys_fixed();
CREATE TRIGGER automations_keys_fixed BEFORE UPDATE OF id, user_id ON automations
  FOR EACH ROW EXECUTE FUNCTION delivery_parent_keys_fixed();

CREATE FUNCTION accounts_delete_deliveries() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM deliveries WHERE user_id = OLD.id;
  RETURN OLD;
END
$fn$;

CREATE TRIGGER accounts_delete_deliveries BEFORE DELETE ON accounts
  FOR EACH ROW EXECUTE FUNCTION accounts_delete_deliveries();
`;

export async function up(knex: Knex): Promise<void> {
  // Secrets Herald generates once and every process shares (src/db/secrets.ts). Global: a key
  // belongs to the installation, not to an account.
  await knex.raw(`
    CREATE TABLE herald_secrets (
      name varchar(40) PRIMARY KEY,
      value bytea NOT NULL CONSTRAINT herald_secrets_value_length CHECK (octet_length(value) >= 32),
      created_at timestamptz(6) NOT NULL DEFAULT now()
    )`);

  await knex.raw(`
    ALTER TABLE deliveries
      DROP CONSTRAINT deliveries_user_id_foreign,
      DROP CONSTRAINT deliveries_single_send_id_foreign,
      DROP CONSTRAINT deliveries_automation_fk,
      DROP CONSTRAINT deliveries_token_unique,
      ALTER COLUMN token DROP NOT NULL,
      ALTER COLUMN data DROP NOT NULL,
      ALTER COLUMN data DROP DEFAULT`);
  await knex.raw(`UPDATE deliveries SET data = NULL WHERE contact_id IS NOT NULL AND data IS NOT NULL`);
  await knex.raw('CREATE UNIQUE INDEX deliveries_token_unique ON deliveries (token, user_id) WHERE token IS NOT NULL');
  await knex.raw(REFERENCE_CHECKS);

  await knex.raw('DROP INDEX deliveries_due_index, deliveries_sending_index, deliveries_send_status_index');
  // Due rows and rows whose lease ran out, in one order: the claim's walk (src/delivery/queue.ts).
  await knex.raw(`CREATE INDEX deliveries_queue_index ON deliveries (next_attempt_at) WHERE status IN ('queued', 'sending')`);
  // The recipients who opened a send (unique_open_token): entered only when a message is opened.
  await knex.raw('CREATE INDEX deliveries_opened_index ON deliveries (single_send_id, user_id) WHERE opened_at IS NOT NULL');
  // A claimed row's lease end is its next_attempt_at from now on; rows in flight keep theirs.
  await knex.raw(`UPDATE deliveries SET next_attempt_at = locked_until WHERE status = 'sending' AND locked_until IS NOT NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX deliveries_opened_index, deliveries_queue_index');
  await knex.raw(`CREATE INDEX deliveries_due_index ON deliveries (next_attempt_at) WHERE status = 'queued'`);
  await knex.raw(`CREATE INDEX deliveries_sending_index ON deliveries (locked_until) WHERE status = 'sending'`);
  await knex.raw('CREATE INDEX deliveries_send_status_index ON deliveries (single_send_id, status) WHERE single_send_id IS NOT NULL');
  await knex.raw(`
    DROP TRIGGER accounts_delete_deliveries ON accounts;
    DROP TRIGGER automations_keys_fixed ON automations;
    DROP TRIGGER single_sends_keys_fixed ON single_sends;
    DROP TRIGGER automations_referenced_by_deliveries ON automations;
    DROP TRIGGER single_sends_referenced_by_deliveries ON single_sends;
    DROP TRIGGER deliveries_references_fixed ON deliveries;
    DROP TRIGGER deliveries_references_on_insert ON deliveries;
    DROP FUNCTION accounts_delete_deliveries();
    DROP FUNCTION delivery_parent_keys_fixed();
    DROP FUNCTION deliveries_referenced_parent_guard();
    DROP FUNCTION deliveries_references_fixed();
    DROP FUNCTION deliveries_check_references();
  `);
  await knex.raw('DROP INDEX deliveries_token_unique');
  // Rows written since have no stored token or data: give them what the old code expects.
  await knex.raw(`UPDATE deliveries SET token = replace(gen_random_uuid()::text, '-', '') WHERE token IS NULL`);
  await knex.raw(`UPDATE deliveries SET data = '{}' WHERE data IS NULL`);
  await knex.raw(`
    ALTER TABLE deliveries
      ALTER COLUMN data SET DEFAULT '{}',
      ALTER COLUMN data SET NOT NULL,
      ALTER COLUMN token SET NOT NULL,
      ADD CONSTRAINT deliveries_token_unique UNIQUE (token, user_id),
      ADD CONSTRAINT deliveries_user_id_foreign FOREIGN KEY (user_id) REFERENCES accounts (id) ON DELETE CASCADE,
      ADD CONSTRAINT deliveries_single_send_id_foreign FOREIGN KEY (single_send_id, user_id) REFERENCES single_sends (id, user_id),
      ADD CONSTRAINT deliveries_automation_fk FOREIGN KEY (automation_id, user_id) REFERENCES automations (id, user_id)`);
  await knex.raw('DROP TABLE herald_secrets');
}
