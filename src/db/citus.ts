import type { Knex } from 'knex';
import type { Logger } from '../logger';

/**
 * Herald on Citus, distributed by the account (docs/scaling.md, "Citus"; docs/decisions.md,
 * "Citus"). On a database with the `citus` extension, prepareDatabase() calls
 * distributeTables() after the migrations: every table becomes what these lists say, and
 * test/api/schema-rules.test.ts checks on every PostgreSQL that the schema keeps to them.
 *
 * - Tenant tables (a NOT NULL `user_id`): distributed by `user_id`, all colocated, so one
 *   account's rows of every table live on one node and joins between them stay there.
 * - Reference tables: copied to every node. `accounts` is one, so the tenant tables' foreign
 *   keys to it hold on every node (Citus refuses a foreign key from a distributed table to a
 *   table that is neither a reference table nor colocated).
 * - Global tables: belong to no account and stay on the coordinator.
 */
export const REFERENCE_TABLES = ['accounts', 'countries', 'states', 'cities', 'templates', 'reserved_fields'];

/**
 * The installation's own tables: migrations, the global send budget, the secret that signs
 * every account's tracking links, the bounce mailbox's read position, and DKIM keys (per
 * signing domain — a selector is unique per domain whichever account sends as it, and the key
 * of MAIL_FROM's domain belongs to no account), and the tokens of signed ESP webhook requests
 * already received (the installation's ESP account, not one of Herald's), and the dashboard's
 * failed sign-ins (per client address: a failure names no account). dkim_keys and member_logins refer to
 * `accounts`, so Citus keeps them as "Citus-local" tables: still only on the coordinator.
 */
export const GLOBAL_TABLES = [
  'knex_migrations',
  'knex_migrations_lock',
  'send_budget',
  'herald_secrets',
  'bounce_mailboxes',
  'dkim_keys',
  'esp_replay_tokens',
  'dashboard_sign_in_failures',
  // The public subscribe endpoint's per-client-address limit and its spent proof-of-work
  // challenges (src/forms/subscribe-guards.ts): a submission's client address names no account.
  'subscribe_limits',
  'pow_spent',
  // Delivery routes (src/routes/): a relay's health, quotas and blocks are the installation's,
  // shared by every account that sends through it.
  'route_state',
  'route_usage',
  'route_blocks',
  // Teams (src/team/): the sign-in lookup by address and the per-address failures come before
  // anyone knows the account.
  'member_logins',
  'member_sign_in_failures',
];

export const DISTRIBUTION_COLUMN = 'user_id';

type Kind = 'distributed' | 'reference' | 'local';

interface TableState {
  name: string;
  hasUserId: boolean;
  /** What Citus's catalog says it is now. */
  kind: Kind;
  distributedBy: string | null;
  colocationId: number | null;
}

/** True when the database has the citus extension: Herald then distributes its tables. */
export async function isCitus(db: Knex): Promise<boolean> {
  const r = await db.raw(`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus`);
  return (r.rows as Array<{ citus: boolean }>)[0].citus;
}

/** The kind a table must have: named, or a tenant table when it has a user_id column. */
export function wantedKind(table: { name: string; hasUserId: boolean }): Kind | undefined {
  if (GLOBAL_TABLES.includes(table.name)) return 'local';
  if (REFERENCE_TABLES.includes(table.name)) return 'reference';
  return table.hasUserId ? 'distributed' : undefined;
}

async function tableStates(db: Knex): Promise<TableState[]> {
  // pg_dist_partition: partmethod 'h' is hash-distributed; 'n' with repmodel 't' a reference
  // table; 'n' with repmodel 's' a Citus-local table (on the coordinator only).
  const r = await db.raw(`
    SELECT c.relname AS name,
           EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = ? AND NOT a.attisdropped) AS has_user_id,
           CASE WHEN p.partmethod = 'h' THEN 'distributed' WHEN p.repmodel = 't' THEN 'reference' ELSE 'local' END AS kind,
           CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS distributed_by,
           CASE WHEN p.partmethod = 'h' THEN p.colocationid END AS colocation_id
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
    LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
    WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
    ORDER BY c.relname`, [DISTRIBUTION_COLUMN]);
  return (r.rows as Array<{ name: string; has_user_id: boolean; kind: Kind; distributed_by: string | null; colocation_id: number | null }>).map((row) => ({
    name: row.name,
    hasUserId: row.has_user_id,
    kind: row.kind,
    distributedBy: row.distributed_by,
    colocationId: row.colocation_id,
  }));
}

/** Tables whose kind differs from what the lists want (none, on a database already distributed). */
function pendingTables(states: TableState[], logger?: Logger): TableState[] {
  return states.filter((t) => {
    const want = wantedKind(t);
    if (!want) {
      logger?.warn({ table: t.name }, 'Citus: a table Herald does not know (no user_id, not a named reference or global table) stays on the coordinator');
      return false;
    }
    if (want === 'distributed') return t.kind !== 'distributed';
    if (t.kind === 'distributed' && t.distributedBy !== DISTRIBUTION_COLUMN) return true;
    return want === 'reference' ? t.kind !== 'reference' : t.kind === 'reference' || t.kind === 'distributed';
  });
}

/**
 * contacts' and deliveries' references are checked by statement-level triggers on one server
 * (migrations 202611230100 and 202611240100: an import writes three times faster than with
 * per-row foreign keys). On Citus a trigger runs on each shard, where its query of another
 * distributed table cannot be planned ("cannot perform a lateral outer join when a distributed
 * subquery references … local tables", tried on the cluster); Citus also refuses to distribute
 * a table with triggers unless told that they are safe. There, the same checks are foreign keys
 * of the same names, which Citus enforces on every node: to the reference tables and to the
 * colocated parents, ON DELETE CASCADE from accounts as the accounts_delete_* triggers did.
 */
const TRIGGER_CHECKS: Array<{ table: string; trigger: string }> = [
  { table: 'contacts', trigger: 'contacts_references_on_insert' },
  { table: 'contacts', trigger: 'contacts_references_on_update' },
  { table: 'contact_types', trigger: 'contact_types_referenced_by_contacts' },
  { table: 'contact_types', trigger: 'contact_types_keys_fixed' },
  { table: 'countries', trigger: 'countries_referenced_by_contacts' },
  { table: 'countries', trigger: 'countries_keys_fixed' },
  { table: 'accounts', trigger: 'accounts_delete_contacts' },
  { table: 'deliveries', trigger: 'deliveries_references_on_insert' },
  { table: 'deliveries', trigger: 'deliveries_references_fixed' },
  { table: 'single_sends', trigger: 'single_sends_referenced_by_deliveries' },
  { table: 'single_sends', trigger: 'single_sends_keys_fixed' },
  { table: 'automations', trigger: 'automations_referenced_by_deliveries' },
  { table: 'automations', trigger: 'automations_keys_fixed' },
  { table: 'accounts', trigger: 'accounts_delete_deliveries' },
];
const TRIGGER_CHECK_FUNCTIONS = [
  'contacts_check_references',
  'contacts_referenced_parent_guard',
  'contact_parent_keys_fixed',
  'accounts_delete_contacts',
  'deliveries_check_references',
  'deliveries_references_fixed',
  'deliveries_referenced_parent_guard',
  'delivery_parent_keys_fixed',
  'accounts_delete_deliveries',
];
const CHECKS_AS_FOREIGN_KEYS: ForeignKey[] = [
  { table: 'contacts', name: 'contacts_user_id_foreign', definition: 'FOREIGN KEY (user_id) REFERENCES accounts (id) ON DELETE CASCADE' },
  { table: 'contacts', name: 'contacts_contact_type_id_foreign', definition: 'FOREIGN KEY (contact_type_id, user_id) REFERENCES contact_types (id, user_id)' },
  { table: 'contacts', name: 'contacts_country_id_foreign', definition: 'FOREIGN KEY (country_id) REFERENCES countries (id)' },
  { table: 'deliveries', name: 'deliveries_user_id_foreign', definition: 'FOREIGN KEY (user_id) REFERENCES accounts (id) ON DELETE CASCADE' },
  { table: 'deliveries', name: 'deliveries_single_send_id_foreign', definition: 'FOREIGN KEY (single_send_id, user_id) REFERENCES single_sends (id, user_id)' },
  { table: 'deliveries', name: 'deliveries_automation_fk', definition: 'FOREIGN KEY (automation_id, user_id) REFERENCES automations (id, user_id)' },
];

/**
 * Triggers Citus may copy to the shards of a reference table: they read no table, so none of
 * the cross-node visibility or lock order that makes Citus refuse triggers by default applies.
 * accounts_keys_changed only announces a key change (NOTIFY herald_account_keys, the API
 * processes' key cache): it fires on every node's copy, and the coordinator's copy is where the
 * caches listen.
 */
const NOTIFY_ONLY_TRIGGERS = ['accounts_keys_changed'];

/**
 * The trigger fires on every node's copy of `accounts`, and Citus commits a change of a
 * reference table with two-phase commit, whose PREPARE TRANSACTION a worker refuses after a
 * NOTIFY ("cannot PREPARE a transaction that has executed LISTEN, UNLISTEN, or NOTIFY", seen
 * on the cluster). So on Citus it announces only on the coordinator, where the key caches
 * listen and whose own copy is written in the caller's transaction. Replaces migration
 * 202611230300's function once `accounts` is distributed (Citus then sends it to every node).
 */
const COORDINATOR_NOTIFY = `
CREATE OR REPLACE FUNCTION accounts_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF citus_is_coordinator() THEN
    PERFORM pg_notify('herald_account_keys', OLD.id::text);
  END IF;
  RETURN NULL;
END $$`;

interface ForeignKey {
  table: string;
  name: string;
  definition: string;
}

/** Drops the trigger checks that exist; returns the foreign keys to add in their place. */
async function dropTriggerChecks(trx: Knex.Transaction): Promise<ForeignKey[]> {
  const r = await trx.raw(
    `SELECT t.tgname AS trigger, c.relname AS "table" FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
     JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
     WHERE NOT t.tgisinternal AND t.tgname = ANY (?)`,
    [TRIGGER_CHECKS.map((t) => t.trigger)],
  );
  const present = r.rows as Array<{ trigger: string; table: string }>;
  if (!present.length) return [];
  for (const t of present) await trx.raw('DROP TRIGGER ?? ON ??', [t.trigger, t.table]);
  for (const fn of TRIGGER_CHECK_FUNCTIONS) await trx.raw(`DROP FUNCTION IF EXISTS ??()`, [fn]);
  const tables = new Set(present.map((t) => t.table));
  return CHECKS_AS_FOREIGN_KEYS.filter((fk) => tables.has(fk.table));
}

async function createReferenceTable(trx: Knex.Transaction, table: string): Promise<void> {
  const r = await trx.raw(`SELECT tgname FROM pg_trigger WHERE tgrelid = ?::regclass AND NOT tgisinternal`, [table]);
  const triggers = (r.rows as Array<{ tgname: string }>).map((t) => t.tgname);
  const unknown = triggers.filter((t) => !NOTIFY_ONLY_TRIGGERS.includes(t));
  if (unknown.length) throw new Error(`Citus: ${table} has triggers Citus cannot run on its copies (${unknown.join(', ')}); see docs/scaling.md, "Writing migrations for Citus"`);
  if (triggers.length) await trx.raw('SET LOCAL citus.enable_unsafe_triggers TO on');
  await trx.raw('SELECT create_reference_table(?)', [table]);
  if (triggers.includes('accounts_keys_changed')) await trx.raw(COORDINATOR_NOTIFY);
  if (triggers.length) await trx.raw('SET LOCAL citus.enable_unsafe_triggers TO off');
}

/** Foreign keys from or to any of these tables, as `ALTER TABLE … ADD CONSTRAINT` can re-create them. */
async function foreignKeysTouching(trx: Knex.Transaction, tables: string[]): Promise<ForeignKey[]> {
  const r = await trx.raw(
    `SELECT c.relname AS "table", k.conname AS name, pg_get_constraintdef(k.oid) AS definition
     FROM pg_constraint k
     JOIN pg_class c ON c.oid = k.conrelid
     JOIN pg_class p ON p.oid = k.confrelid
     JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
     WHERE k.contype = 'f' AND (c.relname = ANY (?) OR p.relname = ANY (?))
     ORDER BY 1, 2`,
    [tables, tables],
  );
  return r.rows as ForeignKey[];
}

/**
 * Brings the database's tables to the kinds the lists want (nothing to do, and one catalog
 * query, once they are). A table is distributed with its data, so this also moves an existing
 * single-server database onto Citus (a long, locking step for a big one: run it once, with
 * `herald migrate`, before starting the processes). Runs in one transaction, under an advisory
 * lock, so processes starting together distribute once; Citus needs the transaction's
 * multi-shard statements one connection at a time to add foreign keys after creating shards.
 */
export async function distributeTables(db: Knex, logger?: Logger): Promise<string[]> {
  if (!pendingTables(await tableStates(db)).length) return [];
  return db.transaction(async (trx) => {
    await trx.raw(`SELECT pg_advisory_xact_lock(hashtext('herald:citus-distribute'))`);
    const states = await tableStates(trx);
    const pending = pendingTables(states, logger);
    if (!pending.length) return [];
    await trx.raw(`SET LOCAL citus.multi_shard_modify_mode TO 'sequential'`);
    const replacing = await dropTriggerChecks(trx);
    const names = pending.map((t) => t.name);
    const foreignKeys = await foreignKeysTouching(trx, names);
    for (const fk of foreignKeys) await trx.raw('ALTER TABLE ?? DROP CONSTRAINT ??', [fk.table, fk.name]);
    for (const t of pending) {
      if (t.kind !== 'local') await trx.raw('SELECT undistribute_table(?)', [t.name]);
    }
    for (const t of pending.filter((x) => wantedKind(x) === 'reference')) await createReferenceTable(trx, t.name);
    let anchor = states.find((t) => t.kind === 'distributed' && wantedKind(t) === 'distributed' && !names.includes(t.name))?.name;
    for (const t of pending.filter((x) => wantedKind(x) === 'distributed')) {
      await trx.raw('SELECT create_distributed_table(?, ?, colocate_with => ?)', [t.name, DISTRIBUTION_COLUMN, anchor ?? 'none']);
      anchor ??= t.name;
    }
    for (const fk of [...foreignKeys, ...replacing]) await trx.raw(`ALTER TABLE ?? ADD CONSTRAINT ?? ${fk.definition}`, [fk.table, fk.name]);
    logger?.info({ tables: names, checksAsForeignKeys: replacing.map((fk) => fk.name) }, 'Citus: tables distributed');
    return names;
  });
}

/**
 * For a migration that creates a table: distributes it at once on Citus (a no-op on one
 * PostgreSQL), so the migration can go on to add foreign keys to other tenant tables, which
 * Citus refuses from a table that is not yet distributed. Call it after CREATE TABLE and
 * before such foreign keys (docs/scaling.md, "Writing migrations for Citus").
 */
export async function distributeNewTable(knex: Knex, table: string): Promise<void> {
  if (!(await isCitus(knex))) return;
  const want = wantedKind({ name: table, hasUserId: true });
  if (want === 'local') return;
  if (want === 'reference') {
    await knex.raw('SELECT create_reference_table(?)', [table]);
    return;
  }
  const r = await knex.raw(
    `SELECT logicalrelid::regclass::text AS anchor FROM pg_dist_partition
     WHERE partmethod = 'h' AND column_to_column_name(logicalrelid, partkey) = ? ORDER BY colocationid, logicalrelid LIMIT 1`,
    [DISTRIBUTION_COLUMN],
  );
  const anchor = (r.rows as Array<{ anchor: string }>)[0]?.anchor;
  // Nothing distributed yet (a new database's first migrations): the whole schema, this table
  // included, is distributed once the migrations are done.
  if (!anchor) return;
  await knex.raw('SELECT create_distributed_table(?, ?, colocate_with => ?)', [table, DISTRIBUTION_COLUMN, anchor]);
}

/** PostgreSQL's wording of each integrity violation (its messages in English, lc_messages C). */
const VIOLATIONS: Array<[RegExp, string]> = [
  [/^duplicate key value violates unique constraint "/, '23505'],
  [/ violates foreign key constraint "/, '23503'],
  [/ violates check constraint "/, '23514'],
  [/ violates not-null constraint/, '23502'],
  [/ violates exclusion constraint "/, '23P01'],
];

/**
 * Citus passes a shard's error on without its constraint field, naming the shard's constraint
 * in the message instead (`… unique constraint "contacts_type_email_unique_102014"`), and an
 * error of a COPY into a distributed table loses its code too (XX000, "internal error"). Code
 * that tells errors apart by code and constraint (src/http/pg-errors.ts and a few services)
 * gets both back from the message. Registered on every knex instance (src/db/knex.ts); a no-op
 * for errors that carry the fields, i.e. always on one PostgreSQL.
 */
export function restoreConstraintName(err: unknown): void {
  if (!err || typeof err !== 'object') return;
  const e = err as { code?: string; constraint?: string; message?: unknown };
  if (e.constraint && typeof e.message === 'string') {
    // A Citus-local table's (dkim_keys) error carries the field, but its shard's name: the
    // constraint ends in the shard's suffix, which the relation named in the message also has.
    const shard = /relation "[^"]*?(_\d{6,})"/.exec(e.message)?.[1];
    if (shard && e.constraint.endsWith(shard)) e.constraint = e.constraint.slice(0, -shard.length);
    return;
  }
  if (e.constraint || typeof e.code !== 'string' || typeof e.message !== 'string') return;
  if (e.code === 'XX000') {
    const violation = VIOLATIONS.find(([wording]) => wording.test(e.message as string));
    if (!violation) return;
    e.code = violation[1];
  }
  if (!e.code.startsWith('23')) return;
  const m = /violates (?:[a-z ]+ )?constraint "([^"]+?)(?:_\d+)?"/.exec(e.message);
  if (m) e.constraint = m[1];
}
