import type { Knex } from 'knex';

/**
 * Every key of a tenant table includes `user_id`, so the schema distributes on Citus by
 * `user_id` without change (docs/scaling.md): primary keys become (id, user_id), unique
 * indexes gain `user_id` as their last column (lookups by their leading columns still use
 * them), and references between tenant tables become composite, (x_id, user_id) → (id,
 * user_id), which also makes a reference to another account's row impossible.
 * test/unit/… schema-rules reads the catalog and fails when a table breaks the rule.
 *
 * `fields` held the global reserved fields (user_id null) and the accounts' custom fields in
 * one table; it is split into `reserved_fields` (reference data) and `custom_fields` (a
 * tenant table) sharing the id sequence, with a `fields` view of both for readers.
 *
 * On a large existing database this rebuilds every primary key and unique index once (the
 * migration holds each table's lock while it does); a new installation pays nothing.
 */

/** Tenant tables whose primary key becomes (id, user_id). */
const TENANT_TABLES = [
  'contact_types',
  'contacts',
  'unsubscribe_groups',
  'unsubscribe_group_recipients',
  'global_unsubscribers',
  'notification_recipients',
  'contact_imports',
  'segments',
  'segment_recipients',
  'account_events',
  'senders',
  'single_sends',
  'deliveries',
  'automations',
  'automation_schedules',
  'automation_contacts',
];

/** References between tenant tables: dropped, then re-added as (column, user_id) → (id, user_id). */
const TENANT_REFERENCES: Array<{ table: string; column: string; parent: string; name: string; onDelete?: string }> = [
  { table: 'unsubscribe_group_recipients', column: 'unsubscribe_groups_id', parent: 'unsubscribe_groups', name: 'unsubscribe_group_recipients_unsubscribe_groups_id_foreign', onDelete: 'CASCADE' },
  { table: 'global_unsubscribers', column: 'unsubscribe_groups_id', parent: 'unsubscribe_groups', name: 'global_unsubscribers_unsubscribe_groups_id_foreign', onDelete: 'SET NULL (unsubscribe_groups_id)' },
  { table: 'contact_imports', column: 'contact_type_id', parent: 'contact_types', name: 'contact_imports_contact_type_id_foreign' },
  { table: 'segments', column: 'contact_type_id', parent: 'contact_types', name: 'segments_contact_type_id_foreign' },
  { table: 'segment_recipients', column: 'segment_id', parent: 'segments', name: 'segment_recipients_segment_id_foreign', onDelete: 'CASCADE' },
  { table: 'segment_recipients', column: 'contact_id', parent: 'contacts', name: 'segment_recipients_contact_id_foreign' },
  { table: 'single_sends', column: 'unsubscribe_group_id', parent: 'unsubscribe_groups', name: 'single_sends_unsubscribe_group_id_foreign' },
  { table: 'single_sends', column: 'sender_id', parent: 'senders', name: 'single_sends_sender_id_foreign' },
  { table: 'deliveries', column: 'single_send_id', parent: 'single_sends', name: 'deliveries_single_send_id_foreign' },
  { table: 'deliveries', column: 'automation_id', parent: 'automations', name: 'deliveries_automation_fk' },
  { table: 'automations', column: 'unsubscribe_group_id', parent: 'unsubscribe_groups', name: 'automations_unsubscribe_group_id_foreign' },
  { table: 'automation_schedules', column: 'automation_id', parent: 'automations', name: 'automation_schedules_automation_id_foreign' },
  { table: 'automation_schedules', column: 'sender_id', parent: 'senders', name: 'automation_schedules_sender_id_foreign' },
];

/** Unique constraints (not bare indexes) that gain user_id. */
const UNIQUE_CONSTRAINTS: Array<{ table: string; name: string; columns: string }> = [
  { table: 'unsubscribe_groups', name: 'unsubscribe_groups_rand_id_unique', columns: 'rand_id' },
  { table: 'senders', name: 'senders_utr_unique', columns: 'utr' },
  { table: 'single_sends', name: 'single_sends_utr_unique', columns: 'utr' },
  { table: 'deliveries', name: 'deliveries_token_unique', columns: 'token' },
  { table: 'automations', name: 'automations_utr_unique', columns: 'utr' },
  { table: 'automation_schedules', name: 'automation_schedules_utr_unique', columns: 'utr' },
];

/** Unique indexes that gain user_id, as they were (`from`) and as they become (`to`). */
const UNIQUE_INDEXES: Array<{ name: string; table: string; from: string; to: string; where?: string }> = [
  { name: 'contacts_type_email_unique', table: 'contacts', from: 'contact_type_id, lower(email)', to: 'contact_type_id, lower(email), user_id', where: 'deleted_at IS NULL' },
  { name: 'deliveries_send_email_unique', table: 'deliveries', from: 'single_send_id, lower(email)', to: 'single_send_id, lower(email), user_id', where: 'single_send_id IS NOT NULL' },
  { name: 'deliveries_schedule_email_unique', table: 'deliveries', from: 'automation_schedule_id, lower(email)', to: 'automation_schedule_id, lower(email), user_id', where: 'automation_schedule_id IS NOT NULL' },
  { name: 'segment_recipients_email_unique', table: 'segment_recipients', from: 'segment_id, lower(email)', to: 'segment_id, lower(email), user_id' },
  { name: 'senders_verify_token_unique', table: 'senders', from: 'verify_token_hash', to: 'verify_token_hash, user_id', where: 'verify_token_hash IS NOT NULL' },
  { name: 'unsubscribe_group_recipients_email_address_unique', table: 'unsubscribe_group_recipients', from: 'unsubscribe_groups_id, lower(email_address)', to: 'unsubscribe_groups_id, lower(email_address), user_id' },
  { name: 'automation_contacts_unique', table: 'automation_contacts', from: 'automation_id, contact_id', to: 'automation_id, contact_id, user_id' },
];

/**
 * contacts' own references (its account, contact type and country) are checked once per
 * statement over the rows it wrote, not by per-row foreign-key triggers: a foreign key runs
 * one lookup and row lock per contact and reference, which made a million-row import three
 * times slower (COPY of 1,000,000 contacts measured here: 5.2 s without references, 15.3 s
 * with the three foreign keys, 6.1 s with these statement-level checks) — and the way around
 * it, session_replication_role, needs a superuser. The checks do what the foreign keys did:
 * lock each referenced row FOR KEY SHARE until commit and refuse (23503, the same constraint
 * names) a contact whose type is not its account's or whose country does not exist; the
 * parents refuse to be deleted while contacts refer to them (contact types and countries are
 * never deleted by Herald; an account's deletion takes its contacts along, as before).
 */
const CONTACT_REFERENCE_CHECKS = `
CREATE FUNCTION contacts_check_references() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  missing record;
BEGIN
  SELECT n.contact_type_id, n.user_id INTO missing
  FROM (SELECT DISTINCT contact_type_id, user_id FROM new_rows) n
  LEFT JOIN LATERAL (
    SELECT 1 AS found FROM contact_types t WHERE t.id = n.contact_type_id AND t.user_id = n.user_id FOR KEY SHARE
  ) t ON true
  WHERE t.found IS NULL
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert or update on table "contacts" violates foreign key constraint "contacts_contact_type_id_foreign"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'contacts', CONSTRAINT = 'contacts_contact_type_id_foreign',
            DETAIL = format('Key (contact_type_id, user_id)=(%s, %s) is not present in table "contact_types".', missing.contact_type_id, missing.user_id);
  END IF;
  SELECT n.country_id INTO missing
  FROM (SELECT DISTINCT country_id FROM new_rows WHERE country_id IS NOT NULL) n
  LEFT JOIN LATERAL (SELECT 1 AS found FROM countries c WHERE c.id = n.country_id FOR KEY SHARE) c ON true
  WHERE c.found IS NULL
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert or update on table "contacts" violates foreign key constraint "contacts_country_id_foreign"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'contacts', CONSTRAINT = 'contacts_country_id_foreign',
            DETAIL = format('Key (country_id)=(%s) is not present in table "countries".', missing.country_id);
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER contacts_references_on_insert AFTER INSERT ON contacts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contacts_check_references();
CREATE TRIGGER contacts_references_on_update AFTER UPDATE ON contacts
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contacts_check_references();

CREATE FUNCTION contacts_referenced_parent_guard() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_TABLE_NAME = 'contact_types' THEN
    IF EXISTS (SELECT 1 FROM contacts c JOIN old_rows o ON c.contact_type_id = o.id AND c.user_id = o.user_id) THEN
      RAISE EXCEPTION 'update or delete on table "contact_types" violates foreign key constraint "contacts_contact_type_id_foreign" on table "contacts"'
        USING ERRCODE = 'foreign_key_violation', TABLE = 'contacts', CONSTRAINT = 'contacts_contact_type_id_foreign';
    END IF;
  ELSIF EXISTS (SELECT 1 FROM contacts c JOIN old_rows o ON c.country_id = o.id) THEN
    RAISE EXCEPTION 'update or delete on table "countries" violates foreign key constraint "contacts_country_id_foreign" on table "contacts"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'contacts', CONSTRAINT = 'contacts_country_id_foreign';
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER contact_types_referenced_by_contacts AFTER DELETE ON contact_types
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contacts_referenced_parent_guard();
CREATE TRIGGER countries_referenced_by_contacts AFTER DELETE ON countries
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contacts_referenced_parent_guard();

CREATE FUNCTION contact_parent_keys_fixed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NEW.id IS DISTINCT FROM OLD.id OR (TG_TABLE_NAME = 'contact_types' AND NEW.user_id IS DISTINCT FROM OLD.user_id) THEN
    RAISE EXCEPTION 'the key of a row of "%" that contacts refer to cannot change', TG_TABLE_NAME
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NEW;
END
$fn$;

CREATE TRIGGER contact_types_keys_fixed BEFORE UPDATE OF id, user_id ON contact_types
  FOR EACH ROW EXECUTE FUNCTION contact_parent_keys_fixed();
CREATE TRIGGER countries_keys_fixed BEFORE UPDATE OF id ON countries
  FOR EACH ROW EXECUTE FUNCTION contact_parent_keys_fixed();

CREATE FUNCTION accounts_delete_contacts() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM contacts WHERE user_id = OLD.id;
  RETURN OLD;
END
$fn$;

CREATE TRIGGER accounts_delete_contacts BEFORE DELETE ON accounts
  FOR EACH ROW EXECUTE FUNCTION accounts_delete_contacts();
`;

export async function up(knex: Knex): Promise<void> {
  // fields → reserved_fields (reference) + custom_fields (tenant), one id sequence.
  await knex.raw(`
    CREATE TABLE reserved_fields (
      id integer PRIMARY KEY,
      field_name varchar(64) NOT NULL,
      field_type varchar(20) NOT NULL CONSTRAINT reserved_fields_type_check CHECK (field_type IN ('text', 'number', 'datetime-local'))
    );
    CREATE UNIQUE INDEX reserved_fields_name_unique ON reserved_fields (lower(field_name));
    INSERT INTO reserved_fields (id, field_name, field_type) SELECT id, field_name, field_type FROM fields WHERE user_id IS NULL;

    CREATE TABLE custom_fields (
      id integer NOT NULL DEFAULT nextval('fields_id_seq'),
      user_id integer NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
      field_name varchar(64) NOT NULL,
      field_type varchar(20) NOT NULL CONSTRAINT custom_fields_type_check CHECK (field_type IN ('text', 'number', 'datetime-local')),
      created_at timestamptz(6) NOT NULL DEFAULT now(),
      updated_at timestamptz(6) NOT NULL DEFAULT now(),
      PRIMARY KEY (id, user_id)
    );
    CREATE UNIQUE INDEX custom_fields_field_name_unique ON custom_fields (user_id, lower(field_name));
    INSERT INTO custom_fields (id, user_id, field_name, field_type, created_at, updated_at)
      SELECT id, user_id, field_name, field_type, coalesce(created_at, now()), coalesce(updated_at, now()) FROM fields WHERE user_id IS NOT NULL;
    ALTER SEQUENCE fields_id_seq OWNED BY custom_fields.id;
    DROP TABLE fields;

    -- Readers that want both kinds (segment rules, dynamic content, the field lists).
    CREATE VIEW fields AS
      SELECT id, NULL::integer AS user_id, field_name, field_type, 1::smallint AS is_reserved,
             NULL::timestamptz AS created_at, NULL::timestamptz AS updated_at
      FROM reserved_fields
      UNION ALL
      SELECT id, user_id, field_name, field_type, 0::smallint, created_at, updated_at FROM custom_fields;
  `);

  for (const r of TENANT_REFERENCES) await knex.raw(`ALTER TABLE ${r.table} DROP CONSTRAINT ${r.name}`);
  await knex.raw('ALTER TABLE contacts DROP CONSTRAINT contacts_contact_type_id_foreign');
  await knex.raw('ALTER TABLE contacts DROP CONSTRAINT contacts_country_id_foreign');
  await knex.raw('ALTER TABLE contacts DROP CONSTRAINT contacts_user_id_foreign');

  for (const table of TENANT_TABLES) {
    await knex.raw(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey, ADD CONSTRAINT ${table}_pkey PRIMARY KEY (id, user_id)`);
  }
  for (const u of UNIQUE_CONSTRAINTS) {
    await knex.raw(`ALTER TABLE ${u.table} DROP CONSTRAINT ${u.name}, ADD CONSTRAINT ${u.name} UNIQUE (${u.columns}, user_id)`);
  }
  for (const i of UNIQUE_INDEXES) {
    await knex.raw(`DROP INDEX ${i.name}`);
    await knex.raw(`CREATE UNIQUE INDEX ${i.name} ON ${i.table} (${i.to})${i.where ? ` WHERE ${i.where}` : ''}`);
  }
  for (const r of TENANT_REFERENCES) {
    await knex.raw(
      `ALTER TABLE ${r.table} ADD CONSTRAINT ${r.name} FOREIGN KEY (${r.column}, user_id) REFERENCES ${r.parent} (id, user_id)${r.onDelete ? ` ON DELETE ${r.onDelete}` : ''}`,
    );
  }
  await knex.raw(CONTACT_REFERENCE_CHECKS);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER accounts_delete_contacts ON accounts;
    DROP TRIGGER countries_keys_fixed ON countries;
    DROP TRIGGER contact_types_keys_fixed ON contact_types;
    DROP TRIGGER countries_referenced_by_contacts ON countries;
    DROP TRIGGER contact_types_referenced_by_contacts ON contact_types;
    DROP TRIGGER contacts_references_on_update ON contacts;
    DROP TRIGGER contacts_references_on_insert ON contacts;
    DROP FUNCTION accounts_delete_contacts();
    DROP FUNCTION contact_parent_keys_fixed();
    DROP FUNCTION contacts_referenced_parent_guard();
    DROP FUNCTION contacts_check_references();
  `);
  for (const r of TENANT_REFERENCES) await knex.raw(`ALTER TABLE ${r.table} DROP CONSTRAINT ${r.name}`);
  for (const i of UNIQUE_INDEXES) {
    await knex.raw(`DROP INDEX ${i.name}`);
    await knex.raw(`CREATE UNIQUE INDEX ${i.name} ON ${i.table} (${i.from})${i.where ? ` WHERE ${i.where}` : ''}`);
  }
  for (const u of UNIQUE_CONSTRAINTS) {
    await knex.raw(`ALTER TABLE ${u.table} DROP CONSTRAINT ${u.name}, ADD CONSTRAINT ${u.name} UNIQUE (${u.columns})`);
  }
  for (const table of TENANT_TABLES) {
    await knex.raw(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey, ADD CONSTRAINT ${table}_pkey PRIMARY KEY (id)`);
  }
  for (const r of TENANT_REFERENCES) {
    const onDelete = r.onDelete?.startsWith('SET NULL') ? 'SET NULL' : r.onDelete;
    await knex.raw(`ALTER TABLE ${r.table} ADD CONSTRAINT ${r.name} FOREIGN KEY (${r.column}) REFERENCES ${r.parent} (id)${onDelete ? ` ON DELETE ${onDelete}` : ''}`);
  }
  await knex.raw(`
    ALTER TABLE contacts
      ADD CONSTRAINT contacts_user_id_foreign FOREIGN KEY (user_id) REFERENCES accounts (id) ON DELETE CASCADE,
      ADD CONSTRAINT contacts_contact_type_id_foreign FOREIGN KEY (contact_type_id) REFERENCES contact_types (id),
      ADD CONSTRAINT contacts_country_id_foreign FOREIGN KEY (country_id) REFERENCES countries (id);
    DROP VIEW fields;
    CREATE TABLE fields (
      id integer PRIMARY KEY DEFAULT nextval('fields_id_seq'),
      user_id integer REFERENCES accounts (id) ON DELETE CASCADE,
      field_name varchar(64) NOT NULL,
      field_type varchar(20) NOT NULL CONSTRAINT fields_type_check CHECK (field_type IN ('text', 'number', 'datetime-local')),
      is_reserved smallint NOT NULL DEFAULT 0,
      created_at timestamptz(6),
      updated_at timestamptz(6)
    );
    INSERT INTO fields (id, user_id, field_name, field_type, is_reserved) SELECT id, NULL, field_name, field_type, 1 FROM reserved_fields;
    INSERT INTO fields (id, user_id, field_name, field_type, is_reserved, created_at, updated_at)
      SELECT id, user_id, field_name, field_type, 0, created_at, updated_at FROM custom_fields;
    ALTER SEQUENCE fields_id_seq OWNED BY fields.id;
    DROP TABLE custom_fields;
    DROP TABLE reserved_fields;
    CREATE UNIQUE INDEX fields_field_name_unique ON fields (user_id, lower(field_name)) WHERE user_id IS NOT NULL;
    CREATE UNIQUE INDEX fields_reserved_name_unique ON fields (lower(field_name)) WHERE user_id IS NULL;
  `);
}
