import {
  columnsOf,
  counterOwners,
  designParts,
  OWNER_COLUMNS,
  OWNER_KINDS,
  OWNERS,
  ownsLink,
  sourceKey,
  sourceOfRow,
  sourceRef,
} from '../../src/sources';
import { COUNTERS } from '../../src/statistics';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { createAutomation, createSend } from '../helpers/sends';

/**
 * src/sources: the one home of "a single send or an automation email". The schema's CHECK
 * constraints that name owners must list what the module declares, so a new kind cannot be
 * added there without the migration that widens them.
 */
// Registered before setupApp's hook that closes the pool: a later run's worker databases are
// cloned from this one and must not find a ready send or a live automation.
afterAll(async () => {
  await db('single_sends').where({ user_id: a.id }).update({ deleted_at: db.fn.now() });
  await db('automations').where({ user_id: a.id }).update({ deleted_at: db.fn.now() });
});
const { app, db } = setupApp();
let a: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db);
});

async function constraint(name: string): Promise<string> {
  const { rows } = await db.raw('SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = ?', [name]);
  expect(rows).toHaveLength(1);
  return rows[0].def as string;
}

describe('owners as the schema knows them', () => {
  it('tracked_links_one_owner allows exactly one of the owner columns, and names them all', async () => {
    const def = await constraint('tracked_links_one_owner');
    const named = [...def.matchAll(/\b(\w+) IS NULL/g)].map((m) => m[1]);
    expect(named.sort()).toEqual([...OWNER_COLUMNS].sort());
  });

  it('message_stats_hourly_owner_type_check lists exactly the owner kinds that keep a timeline', async () => {
    const def = await constraint('message_stats_hourly_owner_type_check');
    const listed = [...def.matchAll(/'(\w+)'::text/g)].map((m) => m[1]);
    expect(listed.sort()).toEqual(OWNER_KINDS.filter((k) => OWNERS[k].timeline).sort());
  });

  it('each owner’s table has a utr, deleted_at and every counter; its column is on deliveries, events and tracked_links', async () => {
    const columnsOfTable = async (table: string) =>
      new Set(await db('information_schema.columns').where({ table_schema: db.raw('current_schema()'), table_name: table }).pluck('column_name'));
    for (const kind of OWNER_KINDS) {
      const own = await columnsOfTable(OWNERS[kind].table);
      const named = OWNERS[kind].named ? ['utr', 'deleted_at'] : [];
      for (const c of ['id', 'user_id', ...named, ...COUNTERS.map((k) => OWNERS[kind].counters[k])]) {
        expect({ kind, column: c, present: own.has(c) }).toEqual({ kind, column: c, present: true });
      }
      for (const table of ['deliveries', 'events', 'tracked_links']) {
        expect({ table, column: OWNERS[kind].column, present: (await columnsOfTable(table)).has(OWNERS[kind].column) }).toEqual({
          table,
          column: OWNERS[kind].column,
          present: true,
        });
      }
    }
  });
});

describe('the source of a recipient row', () => {
  type Columns = Record<'single_send_id' | 'automation_id' | 'automation_schedule_id' | 'ab_variation_id' | 'ab_phase', number | null>;
  const none: Columns = { single_send_id: null, automation_id: null, automation_schedule_id: null, ab_variation_id: null, ab_phase: null };
  const sendRow = { ...none, single_send_id: 7 };
  const emailRow = { ...none, automation_id: 3, automation_schedule_id: 11 };
  const testRow = { ...sendRow, ab_variation_id: 21, ab_phase: 1 };
  const winnerRow = { ...sendRow, ab_variation_id: 22, ab_phase: 2 };
  const link = (columns: Partial<Columns>) => ({ single_send_id: null, automation_id: null, ab_variation_id: null, ...columns });

  it('is its single send, an automation email, or an A/B send’s variation', () => {
    expect(sourceOfRow(sendRow)).toEqual({ kind: 'single_send', singleSendId: 7 });
    expect(sourceOfRow(emailRow)).toEqual({ kind: 'automation_email', automationId: 3, scheduleId: 11 });
    expect(sourceOfRow(testRow)).toEqual({ kind: 'ab_variation', singleSendId: 7, variationId: 21 });
    expect(sourceOfRow(none)).toBeUndefined();
  });

  it('has a key per design: two emails of one automation are two keys, a send and an email with equal ids too', () => {
    const keys = [sendRow, emailRow, { ...emailRow, automation_schedule_id: 12 }, { ...none, automation_id: 7, automation_schedule_id: 7 }, testRow, winnerRow].map(
      (r) => sourceKey(sourceOfRow(r)!),
    );
    expect(new Set(keys).size).toBe(6);
  });

  it('moves the counters of its owner, and of its variation in an A/B test group only', () => {
    expect(counterOwners(sourceRef(sendRow))).toEqual([{ kind: 'single_send', id: 7 }]);
    expect(counterOwners(sourceRef(emailRow))).toEqual([{ kind: 'automation', id: 3 }]);
    expect(counterOwners({ singleSendId: null, automationId: null })).toEqual([]);
    expect(counterOwners(sourceRef(testRow))).toEqual([{ kind: 'single_send', id: 7 }, { kind: 'ab_variation', id: 21 }]);
    // The winner phase counts in the send's totals only: the variations' counters are the test's evidence.
    expect(counterOwners(sourceRef(winnerRow))).toEqual([{ kind: 'single_send', id: 7 }]);
  });

  it('owns the links of its owner, and of its variation (a design test’s)', () => {
    expect(columnsOf({ kind: 'automation', id: 3 })).toEqual(link({ automation_id: 3 }));
    expect(ownsLink(sourceRef(sendRow), link({ single_send_id: 7 }))).toBe(true);
    expect(ownsLink(sourceRef(sendRow), link({ single_send_id: 8 }))).toBe(false);
    expect(ownsLink(sourceRef(sendRow), link({ automation_id: 7 }))).toBe(false);
    expect(ownsLink(sourceRef(emailRow), link({ automation_id: 3 }))).toBe(true);
    expect(ownsLink({ singleSendId: null, automationId: null }, link({}))).toBe(false);
    expect(ownsLink(sourceRef(testRow), link({ single_send_id: 7 }))).toBe(true);
    expect(ownsLink(sourceRef(testRow), link({ ab_variation_id: 21 }))).toBe(true);
    expect(ownsLink(sourceRef(testRow), link({ ab_variation_id: 22 }))).toBe(false);
    expect(ownsLink(sourceRef(winnerRow), link({ ab_variation_id: 22 }))).toBe(true);
    expect(ownsLink(sourceRef(sendRow), link({ ab_variation_id: 21 }))).toBe(false);
  });
});

describe('designParts', () => {
  it('of a single send: its subject, preheader and HTML, the sender as copied onto the send', async () => {
    const sender = await makeSender(db, a);
    const refs = { sender, group: await makeGroup(db, a), list: await makeContactType(db, a) };
    const send = await createSend(app, db, a, refs, { template_html: '<p>Hi ((first_name))</p>', subject: 'Subject ((first_name))', preheader: 'Preheader' });
    // A later change of the sender does not reach a send already saved.
    await db('senders').where({ id: sender }).update({ from_name: 'Renamed' });
    expect(await designParts(db, a.id, { kind: 'single_send', singleSendId: send.id })).toEqual({
      userId: a.id,
      owner: { kind: 'single_send', id: send.id },
      subject: 'Subject ((first_name))',
      preheader: 'Preheader',
      html: '<p>Hi ((first_name))</p>',
      fromName: 'Acme News',
      fromEmail: 'news@acme.test',
      replyTo: 'reply@acme.test',
      senderAddress: '1 High Street, United Kingdom',
    });
  });

  it('of an automation email: its own subject and its template’s HTML, its sender as it is now, no preheader', async () => {
    const sender = await makeSender(db, a);
    const automation = await createAutomation(app, db, a, { group: await makeGroup(db, a), list: await makeContactType(db, a) });
    const fields = { utr: automation.utr, sender_id: sender, subject: 'Welcome', waiting_period: 1, waiting_type: 'instantly', template_id: 3, preview_img: 'x.png' };
    expectSuccess(await api(app, a).form('/automations/schedule/create', fields), 'Schedule Added');
    const email = await db('automation_schedules').where({ automation_id: automation.id }).first('id');
    await db('senders').where({ id: sender }).update({ from_name: 'Renamed' });
    const template = await db('templates').where({ id: 3 }).first('html_code');
    expect(await designParts(db, a.id, { kind: 'automation_email', automationId: automation.id, scheduleId: email.id })).toEqual({
      userId: a.id,
      owner: { kind: 'automation', id: automation.id },
      subject: 'Welcome',
      preheader: '',
      html: template.html_code,
      fromName: 'Renamed',
      fromEmail: 'news@acme.test',
      replyTo: 'reply@acme.test',
      senderAddress: '1 High Street, United Kingdom',
    });
  });

  it('of a source that is gone: none', async () => {
    expect(await designParts(db, a.id, { kind: 'single_send', singleSendId: 2_000_000_000 })).toBeUndefined();
    expect(await designParts(db, a.id, { kind: 'automation_email', automationId: 1, scheduleId: 2_000_000_000 })).toBeUndefined();
  });

  it('of another account’s source: none (a source is read with its account, one node’s read on Citus)', async () => {
    const refs = { sender: await makeSender(db, a), group: await makeGroup(db, a), list: await makeContactType(db, a) };
    const send = await createSend(app, db, a, refs, { template_html: '<p>Hi</p>' });
    const other = await makeAccount(db, 'Other');
    expect(await designParts(db, a.id, { kind: 'single_send', singleSendId: send.id })).toBeDefined();
    expect(await designParts(db, other.id, { kind: 'single_send', singleSendId: send.id })).toBeUndefined();
  });
});
