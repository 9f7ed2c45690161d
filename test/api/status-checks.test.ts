import { randomUUID } from 'node:crypto';
import {
  AutomationStatus,
  automationStatus,
  AutomationType,
  deliveryStatus,
  ExitCriteria,
  importStatus,
  ImportStatus,
  progressState,
  ScheduleType,
  senderVerification,
  SendStatus,
  sendStatus,
} from '../../src/states';
import { makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';

/**
 * The database refuses a status the code does not name (migrations/202611270100_status-checks.ts
 * and the older CHECKs on deliveries, automation_contacts and contact_imports): every named
 * value is accepted, a value outside the set fails with check_violation (23514).
 */
const { db } = setupApp();
let a: TestAccount;
const ids = { send: 0, automation: 0, progress: 0, delivery: 0, import: 0, sender: 0 };

beforeAll(async () => {
  a = await makeAccount(db);
  const typeId = await makeContactType(db, a);
  const [contactId] = await makeContacts(db, a, typeId, [{ email: 'checked@example.com' }]);
  ids.sender = await makeSender(db, a);
  const groupId = await makeGroup(db, a);
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
});

const columns = () => [
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
];

describe('CHECK constraints on every status column', () => {
  it('accept every value src/states.ts names', async () => {
    for (const c of columns()) {
      const trx = await db.transaction();
      try {
        for (const v of c.values) {
          const updated = await trx(c.table).where({ id: c.id, user_id: a.id }).update({ [c.column]: v });
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
        const err = await db(c.table)
          .where({ id: c.id, user_id: a.id })
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
