import { randomUUID } from 'node:crypto';
import {
  abStatus,
  AutomationStatus,
  automationStatus,
  AutomationType,
  deliveryStatus,
  dnsRecordStatus,
  ExitCriteria,
  groupDisplay,
  importStatus,
  ImportStatus,
  jobStatus,
  KeyState,
  keyState,
  progressState,
  ScheduleType,
  senderVerification,
  SendStatus,
  sendStatus,
  TemplateBlank,
  webhookActivity,
  webhookBatchStatus,
} from '../../src/states';
import type { Knex } from 'knex';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';

/**
 * The database refuses a status the code does not name (migrations 202611270100_status-checks,
 * 202612030110_state-checks and the CHECKs the tables were made with): every named value is
 * accepted, a value outside the set fails with check_violation (23514). And no status-like column
 * is left without a CHECK: the catalog is read, so a new column without one fails here.
 */
const { db } = setupApp();
let a: TestAccount;
const ids = { send: 0, automation: 0, progress: 0, delivery: 0, import: 0, sender: 0, group: 0, webhook: 0, batch: 0, outbox: 0, job: 0, key: 0, report: 0 };

beforeAll(async () => {
  a = await makeAccount(db);
  const typeId = await makeContactType(db, a);
  const [contactId] = await makeContacts(db, a, typeId, [{ email: 'checked@example.com' }]);
  ids.sender = await makeSender(db, a);
  const groupId = await makeGroup(db, a);
  ids.group = groupId;
  [{ id: ids.send }] = await db('single_sends')
    .insert({
      user_id: a.id,
      utr: randomUUID(),
      template_id: 1,
      sender_id: ids.sender,
      unsubscribe_group_id: groupId,
      single_send_name: 'Checked',
      subject: 'Hello',
      preheader: 'Hi',
      from_sender: 'news@acme.test',
      reply_to: 'reply@acme.test',
      // Draft: nothing picks it up while the test moves it through its states.
      status: SendStatus.Draft,
      schedule_type: ScheduleType.Now,
    })
    .returning('id');
  [{ id: ids.automation }] = await db('automations')
    .insert({
      user_id: a.id,
      utr: randomUUID(),
      automation_for: typeId,
      automation_for_table: 'contacts_',
      automation_name: 'Checked',
      exit_criteria: ExitCriteria.OnUnsubscribe,
      unsubscribe_group_id: groupId,
      automation_type: AutomationType.Custom,
      status: AutomationStatus.Draft,
    })
    .returning('id');
  [{ id: ids.progress }] = await db('automation_contacts')
    .insert({ user_id: a.id, automation_id: ids.automation, contact_id: contactId, email: 'checked@example.com' })
    .returning('id');
  [{ id: ids.delivery }] = await db('deliveries')
    .insert({ user_id: a.id, single_send_id: ids.send, contact_id: contactId, email: 'checked@example.com' })
    .returning('id');
  [{ id: ids.import }] = await db('contact_imports')
    .insert({ user_id: a.id, contact_type_id: typeId, file_name: 'checked.csv', status: ImportStatus.Running })
    .returning('id');
  // Paused, so no worker of another test file sends its batch.
  [{ id: ids.webhook }] = await db('webhooks').insert({ user_id: a.id, url: 'https://hooks.example.com/x', secret: 'whsec_x', is_active: 0 }).returning('id');
  [{ id: ids.batch }] = await db('webhook_deliveries')
    .insert({ user_id: a.id, webhook_id: ids.webhook, msg_id: 'msg_checked', type: 'delivered', event_ids: [1], payload: {} })
    .returning('id');
  // Finished, so no worker mails it; an unknown kind of job, which no worker runs.
  [{ id: ids.outbox }] = await db('outbox_jobs').insert({ user_id: a.id, kind: 'notification', status: 'done' }).returning('id');
  [{ id: ids.job }] = await db('jobs').insert({ user_id: a.id, kind: 'test.status-checks' }).returning('id');
  [{ id: ids.key }] = await db('dkim_keys')
    .insert({ user_id: a.id, domain: `checked-${a.id}.example`, selector: 'herald2026121', algorithm: 'rsa-sha256', public_key: 'x', private_key: Buffer.from('x'), state: KeyState.Retired })
    .returning('id');
  await db('ab_tests').insert({ user_id: a.id, single_send_id: ids.send, type: 'subject', test_percentage: 20, duration_minutes: 60, winner_criteria: 'open', confidence: 0.95, if_inconclusive: 'wait' });
  [{ id: ids.report }] = await db('bounce_reports').insert({ user_id: a.id, delivery_id: ids.delivery, kind: 'hard', source: 'api' }).returning('id');
});

interface Column {
  table: string;
  column: string;
  id: number;
  values: ReadonlyArray<string | number | null>;
  bad: Array<string | number>;
  /** A reference table's row has no account. */
  global?: boolean;
  /** The column `id` is the value of (default `id`). */
  key?: string;
}

const columns = (): Column[] => [
  { table: 'single_sends', column: 'status', id: ids.send, values: sendStatus.values, bad: [9, -1, 4] },
  { table: 'single_sends', column: 'schedule_type', id: ids.send, values: Object.values(ScheduleType), bad: [2] },
  { table: 'automations', column: 'status', id: ids.automation, values: automationStatus.values, bad: [9, 3] },
  { table: 'automations', column: 'automation_type', id: ids.automation, values: Object.values(AutomationType), bad: [0, 3] },
  { table: 'automations', column: 'exit_criteria', id: ids.automation, values: Object.values(ExitCriteria), bad: [2] },
  { table: 'automations', column: 'automation_for_table', id: ids.automation, values: ['contacts_', 'segments_'], bad: ['lists_'] },
  { table: 'automation_contacts', column: 'state', id: ids.progress, values: progressState.values, bad: ['paused', 'ACTIVE'] },
  { table: 'deliveries', column: 'status', id: ids.delivery, values: deliveryStatus.values, bad: ['delivered', 'pending'] },
  { table: 'contact_imports', column: 'status', id: ids.import, values: importStatus.values, bad: ['queued'] },
  { table: 'senders', column: 'is_verified', id: ids.sender, values: senderVerification.values, bad: [2, -1] },
  { table: 'webhooks', column: 'is_active', id: ids.webhook, values: webhookActivity.values, bad: [2, -1] },
  { table: 'webhook_deliveries', column: 'status', id: ids.batch, values: webhookBatchStatus.values, bad: ['queued', 'done', 'sent'] },
  { table: 'outbox_jobs', column: 'status', id: ids.outbox, values: jobStatus.values, bad: ['pending', 'sending'] },
  { table: 'jobs', column: 'status', id: ids.job, values: jobStatus.values, bad: ['pending', 'running'] },
  { table: 'unsubscribe_groups', column: 'is_display', id: ids.group, values: groupDisplay.values, bad: [2, -1] },
  { table: 'dkim_keys', column: 'state', id: ids.key, values: keyState.values, bad: ['revoked'] },
  { table: 'dkim_keys', column: 'dns_status', id: ids.key, values: dnsRecordStatus.values, bad: ['ok', 'failed'] },
  // Decided needs its winner (ab_tests_decision_check): the values without one.
  { table: 'ab_tests', column: 'status', id: ids.send, values: abStatus.values.filter((v) => v !== 'decided'), bad: ['completed', 'running'], key: 'single_send_id' },
  { table: 'templates', column: 'is_blank', id: 1, values: Object.values(TemplateBlank), bad: [2, -1], global: true },
  // Not a state: the report's RFC 3463 enhanced status code, or none.
  { table: 'bounce_reports', column: 'status', id: ids.report, values: ['5.1.1', '4.2.2', '2.0.0', '5.7.26', null], bad: ['bounce', '5.1', '6.1.1', '5.1.1 user unknown'] },
];

const row = (c: Column, db2 = db) => db2(c.table).where(c.global ? { [c.key ?? 'id']: c.id } : { [c.key ?? 'id']: c.id, user_id: a.id });

describe('CHECK constraints on every status column', () => {
  it('accept every value src/states.ts names', async () => {
    for (const c of columns()) {
      const trx = await db.transaction();
      try {
        for (const v of c.values) {
          const updated = await row(c, trx).update({ [c.column]: v });
          expect({ ...c, v, updated }).toEqual({ ...c, v, updated: 1 });
        }
      } finally {
        await trx.rollback();
      }
    }
  });

  it('refuse any other value with check_violation (a raw UPDATE … SET status = 9)', async () => {
    const raw = await db
      .raw('UPDATE single_sends SET status = 9 WHERE id = ? AND user_id = ?', [ids.send, a.id])
      .then(
        () => undefined,
        (err: { code?: string; constraint?: string }) => ({ code: err.code, constraint: err.constraint }),
      );
    expect(raw).toEqual({ code: '23514', constraint: 'single_sends_status_check' });

    for (const c of columns()) {
      for (const v of c.bad) {
        const err = await row(c)
          .update({ [c.column]: v })
          .then(
            () => undefined,
            (e: { code?: string; constraint?: string }) => ({ code: e.code, constraint: e.constraint }),
          );
        expect({ table: c.table, column: c.column, v, err }).toEqual({
          table: c.table,
          column: c.column,
          v,
          err: { code: '23514', constraint: expect.stringMatching(new RegExp(`^${c.table}_\\w*check$`)) },
        });
      }
    }
    // Nothing changed.
    expect(await db('single_sends').where({ id: ids.send }).first('status')).toEqual({ status: SendStatus.Draft });
  });
});

/**
 * Columns whose names look like a status but are none, each with the reason. Every other column
 * named `status`, `state`, `*_status` or `is_*` (not boolean) must have a CHECK constraint.
 */
const NOT_STATES: Record<string, string> = {
  'contacts.state': 'part of a postal address (the state or region), free text',
  'segment_recipients.state': 'part of a hand-added recipient’s postal address, free text',
  'webhook_deliveries.last_status': 'the HTTP status code the endpoint answered, a number the endpoint chose',
  'knex_migrations_lock.is_locked': 'knex’s own table',
};

/** Status-like columns of the schema's tables (or of one), and whether a CHECK constraint covers each. */
async function statusLikeColumns(q: Knex, relation?: string): Promise<Array<{ name: string; checked: boolean }>> {
  const { rows } = await q.raw(
    `SELECT c.relname || '.' || a.attname AS name,
            EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'c' AND a.attnum = ANY (k.conkey)) AS checked
     FROM pg_class c
     JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
     JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     WHERE c.relkind IN ('r', 'p')
       AND (a.attname IN ('status', 'state') OR a.attname LIKE '%\\_status' OR (a.attname LIKE 'is\\_%' AND a.atttypid <> 'boolean'::regtype))
       ${relation ? 'AND c.relname = ?' : ''}
     ORDER BY 1`,
    relation ? [relation] : [],
  );
  return rows;
}

describe('the catalog', () => {
  it('has a CHECK constraint on every status-like column', async () => {
    const found = await statusLikeColumns(db);
    // The pattern finds the known ones (a broken query would find nothing and pass).
    expect(found.map((r) => r.name)).toEqual(expect.arrayContaining(['deliveries.status', 'webhooks.is_active', 'dkim_keys.dns_status', 'templates.is_blank']));
    expect(found.filter((r) => !r.checked && !(r.name in NOT_STATES)).map((r) => r.name)).toEqual([]);
    // The exceptions are still there and still unchecked (a CHECK added later leaves the list).
    expect(found.filter((r) => r.name in NOT_STATES).map((r) => [r.name, r.checked])).toEqual(Object.keys(NOT_STATES).sort().map((n) => [n, false]));
  });

  it('would find a new status-like column without one', async () => {
    const trx = await db.transaction();
    try {
      await trx.raw('CREATE TABLE status_probe (id int, progress_status text, is_hidden smallint, is_shown smallint CHECK (is_shown IN (0, 1)), is_done boolean)');
      expect(await statusLikeColumns(trx, 'status_probe')).toEqual([
        { name: 'status_probe.is_hidden', checked: false },
        { name: 'status_probe.is_shown', checked: true },
        { name: 'status_probe.progress_status', checked: false },
      ]);
    } finally {
      await trx.rollback();
    }
  });
});
