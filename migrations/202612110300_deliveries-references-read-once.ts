import type { Knex } from 'knex';
import { CHECK_REFERENCES_THREE_READS } from './202611240100_lean-deliveries';

/**
 * deliveries' statement-level reference check (migration 202611240100) read the rows a statement
 * wrote three times — once per reference: its account, its single send, its automation — each a
 * DISTINCT over the whole transition table, so a fan-out chunk of 100,000 rows was hashed three
 * times after it was written (bench/README.md, "Fan-out"). It now reads them once: the distinct
 * (account, single send, automation) triples of the statement, each parent looked up and locked
 * FOR KEY SHARE as before, and the first missing one raised with the same error, constraint name
 * and detail as before, in the same order (account, then single send, then automation).
 *
 * On Citus the trigger and its function are gone (foreign keys instead, src/db/citus.ts): then
 * there is nothing to replace.
 */
const READ_ONCE = `
CREATE OR REPLACE FUNCTION deliveries_check_references() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  missing record;
BEGIN
  SELECT n.user_id, n.single_send_id, n.automation_id,
         a.found IS NULL AS no_account,
         n.single_send_id IS NOT NULL AND s.found IS NULL AS no_send
  INTO missing
  FROM (SELECT DISTINCT user_id, single_send_id, automation_id FROM new_rows) n
  LEFT JOIN LATERAL (SELECT 1 AS found FROM accounts a WHERE a.id = n.user_id FOR KEY SHARE) a ON true
  LEFT JOIN LATERAL (
    SELECT 1 AS found FROM single_sends s WHERE s.id = n.single_send_id AND s.user_id = n.user_id FOR KEY SHARE
  ) s ON true
  LEFT JOIN LATERAL (
    SELECT 1 AS found FROM automations x WHERE x.id = n.automation_id AND x.user_id = n.user_id FOR KEY SHARE
  ) x ON true
  WHERE a.found IS NULL OR (n.single_send_id IS NOT NULL AND s.found IS NULL) OR (n.automation_id IS NOT NULL AND x.found IS NULL)
  ORDER BY a.found IS NULL DESC, n.single_send_id IS NOT NULL AND s.found IS NULL DESC
  LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF missing.no_account THEN
    RAISE EXCEPTION 'insert or update on table "deliveries" violates foreign key constraint "deliveries_user_id_foreign"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries', CONSTRAINT = 'deliveries_user_id_foreign',
            DETAIL = format('Key (user_id)=(%s) is not present in table "accounts".', missing.user_id);
  ELSIF missing.no_send THEN
    RAISE EXCEPTION 'insert or update on table "deliveries" violates foreign key constraint "deliveries_single_send_id_foreign"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries', CONSTRAINT = 'deliveries_single_send_id_foreign',
            DETAIL = format('Key (single_send_id, user_id)=(%s, %s) is not present in table "single_sends".', missing.single_send_id, missing.user_id);
  END IF;
  RAISE EXCEPTION 'insert or update on table "deliveries" violates foreign key constraint "deliveries_automation_fk"'
    USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries', CONSTRAINT = 'deliveries_automation_fk',
          DETAIL = format('Key (automation_id, user_id)=(%s, %s) is not present in table "automations".', missing.automation_id, missing.user_id);
END
$fn$`;

async function hasCheck(knex: Knex): Promise<boolean> {
  const r = await knex.raw(
    `SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace AND n.nspname = current_schema() WHERE p.proname = 'deliveries_check_references'`,
  );
  return r.rows.length > 0;
}

export async function up(knex: Knex): Promise<void> {
  if (await hasCheck(knex)) await knex.raw(READ_ONCE);
}

export async function down(knex: Knex): Promise<void> {
  if (await hasCheck(knex)) await knex.raw(CHECK_REFERENCES_THREE_READS.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'));
}
