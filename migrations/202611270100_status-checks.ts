import type { Knex } from 'knex';

/**
 * The database refuses a status the code does not name (src/states.ts). deliveries.status,
 * automation_contacts.state and contact_imports.status have had their CHECK since they were
 * made; these are the integer states and kinds that had none. The values are written out
 * here, not imported: a migration states what the schema was at its time.
 *
 * Adding a constraint checks the existing rows; the code has only ever written these values,
 * so they pass. The tables are small (a row per send, automation or sender), so the check
 * needs no NOT VALID / VALIDATE split (which a migration's transaction would undo anyway).
 */
const CHECKS: Array<{ table: string; name: string; check: string }> = [
  // 0 initiate (draft), 1 ready, 2 running, 3 completed
  { table: 'single_sends', name: 'single_sends_status_check', check: 'status IN (0, 1, 2, 3)' },
  // 0 now, 1 at the given date and time
  { table: 'single_sends', name: 'single_sends_schedule_type_check', check: 'schedule_type IN (0, 1)' },
  // 0 draft, 1 live, 2 paused
  { table: 'automations', name: 'automations_status_check', check: 'status IN (0, 1, 2)' },
  // 1 welcome, 2 custom
  { table: 'automations', name: 'automations_automation_type_check', check: 'automation_type IN (1, 2)' },
  // 0 leave on unsubscribe only, 1 also when removed from the target
  { table: 'automations', name: 'automations_exit_criteria_check', check: 'exit_criteria IN (0, 1)' },
  { table: 'automations', name: 'automations_automation_for_table_check', check: `automation_for_table IN ('contacts_', 'segments_')` },
  // 0 not verified, 1 verified
  { table: 'senders', name: 'senders_is_verified_check', check: 'is_verified IN (0, 1)' },
];

export async function up(knex: Knex): Promise<void> {
  for (const c of CHECKS) {
    await knex.raw(`ALTER TABLE ?? ADD CONSTRAINT ?? CHECK (${c.check})`, [c.table, c.name]);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const c of [...CHECKS].reverse()) {
    await knex.raw('ALTER TABLE ?? DROP CONSTRAINT ??', [c.table, c.name]);
  }
}
