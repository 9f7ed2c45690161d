import type { Knex } from 'knex';
import request from 'supertest';
import { fanOutChunk } from '../../src/delivery/audience';
import { suppressedAmong } from '../../src/suppression';
import { sendsMaybeComplete } from '../../src/single-sends/schedule';
import { erasureRecord } from '../../src/resources/contacts/person.router';
import { countryId } from '../helpers/person';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectSuccess, expectVal } from '../helpers/expect';
import { writePerson, type PersonWorld } from '../helpers/person';
import { createSend } from '../helpers/sends';

/**
 * POST /contacts/erase (issue 35): every row of the account that holds the address goes, in one
 * transaction, checked by a catalog walk — every text, varchar, jsonb, array and bytea column of
 * every table, read for the address — and the hashed suppression keeps a re-import or re-add
 * from being mailed.
 */
// The sends made here are running: soft-delete them so that worker databases cloned later do not send them.
afterAll(async () => {
  await db('single_sends').whereIn('user_id', [a.id, b.id]).update({ deleted_at: db.fn.now() });
});
const { app, db } = setupApp();

const EMAIL = 'Erin.Erase@Example.com';
let a: TestAccount;
let b: TestAccount;
let world: PersonWorld;

/**
 * Columns that may still hold the address after an erasure, on purpose: the account's own
 * addresses — its sign-in address, its senders' from and reply-to addresses, its notification
 * recipients, a send's or variation's sender and reply-to — are the sender's, not a recipient's
 * personal data, and erasing a recipient must not break the account's sending.
 */
const DELIBERATE = new Set([
  'accounts.email',
  'senders.from_email',
  'senders.reply_to_email',
  'notification_recipients.email_address',
  'single_sends.reply_to',
  'single_sends.from_sender',
  'single_sends.sender_address',
  'single_send_variations.reply_to',
  'single_send_variations.from_sender',
  'single_send_variations.sender_address',
]);

interface Column {
  table: string;
  column: string;
  type: string;
  tenant: boolean;
}

/** Every column that can hold text: text, varchar, json, jsonb, arrays and bytea, of every table. */
async function textColumns(): Promise<Column[]> {
  const { rows } = await db.raw(`
    SELECT c.table_name AS table, c.column_name AS column, c.data_type AS type,
           EXISTS (SELECT 1 FROM information_schema.columns u WHERE u.table_schema = c.table_schema AND u.table_name = c.table_name AND u.column_name = 'user_id') AS tenant
    FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
    WHERE c.table_schema = current_schema()
      AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY', 'bytea')
    ORDER BY 1, 2`);
  return rows as Column[];
}

/** `table.column` of every column holding the address (any case) in account `userId`'s rows (all rows of a table with no account). */
async function columnsHolding(email: string, userId: number): Promise<string[]> {
  const found: string[] = [];
  for (const c of await textColumns()) {
    const text = c.type === 'bytea' ? `encode("${c.column}", 'escape')` : `"${c.column}"::text`;
    const where = c.tenant ? `user_id = ${userId} AND` : '';
    const { rows } = await db.raw(`SELECT count(*)::int AS n FROM "${c.table}" WHERE ${where} strpos(lower(${text}), lower(?)) > 0`, [email]);
    if (rows[0].n > 0) found.push(`${c.table}.${c.column}`);
  }
  return found;
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  world = await writePerson(app, db, a, EMAIL);
  // The same address in another account, and the account's own notification address: both stay.
  expectSuccess(await api(app, b).form('/contacts/add', { country: await countryId(db), contact_type_id: (await db('contact_types').insert({ user_id: b.id, name: 'B list' }).returning('id'))[0].id, email: EMAIL }));
  await db('notification_recipients').insert({ user_id: a.id, email_owner: 'Owner', email_address: EMAIL });
}, 60_000);

const erase = (account: TestAccount, email: string) => api(app, account).form('/contacts/erase', { email });

describe('the catalog', () => {
  it('names every column that holds an email by name, and each is one the scan reads', async () => {
    const scanned = new Set((await textColumns()).map((c) => `${c.table}.${c.column}`));
    const { rows } = await db.raw(`
      SELECT table_name || '.' || column_name AS name FROM information_schema.columns
      WHERE table_schema = current_schema() AND (column_name ~ '(^|_)e{0,1}mail($|_)' OR column_name ~ 'address')
        AND table_name IN (SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE')`);
    const named = (rows as Array<{ name: string }>).map((r) => r.name);
    expect(named).toEqual(expect.arrayContaining(['contacts.email', 'contacts.alt_email', 'deliveries.email', 'events.email', 'suppressions.email', 'consent_records.email', 'pending_subscriptions.email']));
    for (const n of named) expect(scanned.has(n)).toBe(true);
  });

  it('finds the address, before the erasure, in every table a path wrote it to', async () => {
    const held = await columnsHolding(EMAIL, a.id);
    expect(held).toEqual(
      expect.arrayContaining([
        'automation_contacts.email',
        'bounce_reports.diagnostic',
        'bounce_reports.raw',
        'consent_records.email',
        'contact_imports.reasons',
        'contacts.alt_email',
        'contacts.email',
        'deliveries.data',
        'deliveries.email',
        'events.data',
        'events.email',
        'global_unsubscribers.email_address',
        'jobs.payload',
        'outbox_jobs.payload',
        'pending_subscriptions.email',
        'segment_recipients.email',
        'suppressions.email',
        'test_sends.email',
        'unsubscribe_group_recipients.email_address',
        'webhook_deliveries.payload',
      ]),
    );
  });
});

describe('POST /contacts/erase', () => {
  it('VAL for a missing or bad email; AUTH without keys', async () => {
    expectVal(await api(app, a).form('/contacts/erase', {}), { email: ['The email field is required.'] });
    expectVal(await erase(a, 'nope'), { email: ['The email must be a valid email address.'] });
    expectAuthMissing(await request(app).post('/contacts/erase').send({ email: EMAIL }));
    // Nothing was written by the refused requests.
    expect(await db('erasures').where({ user_id: a.id })).toEqual([]);
  });

  it('removes every row holding the address, in every table, leaving only the deliberate exceptions', async () => {
    const res = await erase(a, EMAIL.toLowerCase());
    expectSuccess(res);
    const erasure = expectShape(erasureRecord, res.body.message.erasure);
    expect(erasure.rows_removed).toMatchObject({
      contacts: 3,
      contacts_alt_email: 1,
      segment_recipients: 1,
      automation_contacts: 1,
      deliveries: 2,
      bounce_reports: 1,
      consent_records: 3,
      pending_subscriptions: 1,
      global_unsubscribers: 1,
      unsubscribe_group_recipients: 1,
      suppressions: 1,
      test_sends: 1,
      webhook_deliveries: 1,
      jobs: 1,
      outbox_jobs: 1,
      contact_imports: 1,
    });
    expect(erasure.rows_removed.events).toBeGreaterThanOrEqual(3);
    const left = await columnsHolding(EMAIL, a.id);
    // The erasure's own notice goes to the account's notification recipients, which here (on purpose) include the address.
    const notices = await db('outbox_jobs').where({ user_id: a.id }).whereRaw('strpos(lower(payload::text), lower(?)) > 0', [EMAIL]).pluck('payload');
    expect(notices).toEqual([{ to: [{ name: 'Owner', email: EMAIL }] }]);
    expect(left.filter((c) => !DELIBERATE.has(c) && c !== 'outbox_jobs.payload')).toEqual([]);
    expect(left).toContain('notification_recipients.email_address');
    // The rest of a redacted payload stays.
    const hook = await db('webhook_deliveries').where({ user_id: a.id }).first('payload');
    expect(hook.payload).toEqual({ data: { email: '[erased]', other: `keep-${a.id}@example.com` } });
    // Another account's rows of the address are untouched.
    expect(await db('contacts').where({ user_id: b.id }).whereRaw('lower(email) = lower(?)', [EMAIL])).toHaveLength(1);
  });

  it('leaves an audit record and an account event without the address, and a hashed suppression', async () => {
    const [audit] = await db('erasures').where({ user_id: a.id });
    expect(audit).toMatchObject({ actor: `key:${a.public_key}` });
    expect(JSON.stringify(audit).toLowerCase()).not.toContain(EMAIL.toLowerCase());
    const [event] = await db('events').where({ user_id: a.id, type: 'contact.erased' });
    expect(event.data).toMatchObject({ erasure_id: audit.id, by: `key:${a.public_key}`, removed_contacts: 3 });
    expect(JSON.stringify(event).toLowerCase()).not.toContain(EMAIL.toLowerCase());
    const list = await api(app, a).get('/suppressions/list');
    expectSuccess(list);
    const entries = JSON.stringify(list.body.message);
    expect(entries).toMatch(/"erased:[0-9a-f]{64}"/);
    expect(entries).toContain('"erased"');
    expect(entries.toLowerCase()).not.toContain(EMAIL.toLowerCase());
  });

  it('a running send loses the queued row and can still complete (its triggered count drops by it)', async () => {
    const send = await db('single_sends').where({ id: world.sendId }).first('triggered');
    expect(send.triggered).toBe(1);
    expect(await db('deliveries').where({ id: world.queuedRowId, user_id: a.id })).toEqual([]);
    await db('deliveries').where({ user_id: a.id, single_send_id: world.sendId }).update({ status: 'sent' });
    await db('single_sends').where({ id: world.sendId }).update({ delivered: 1 });
    expect((await sendsMaybeComplete(db)).map((s) => s.id)).toContain(world.sendId);
  });

  it('a re-add and a re-import of the address are dropped at send time (suppressed), in any case; lifting the suppression by address mails it again', async () => {
    const list = world.lists[0];
    expectSuccess(await api(app, a).form('/contacts/add', { country: await countryId(db), contact_type_id: list, email: EMAIL.toUpperCase() }));
    expectSuccess(await request(app).post('/contacts/upload-csv').set(a.headers).field('contact_type_id', String(world.lists[1])).attach('file', Buffer.from(`email\n${EMAIL}\n`), 'again.csv'));
    const fanOut = async (typeId: number) => {
      const send = await createSend(app, db, a, { sender: world.sender, group: world.groupId, list: typeId }, { single_send_name: 'Again' });
      await db('single_sends').where({ id: send.id }).update({ status: 2 });
      await db.transaction((trx: Knex.Transaction) =>
        fanOutChunk(trx, { userId: a.id, singleSendId: send.id, groupId: world.groupId, sources: [{ id: String(typeId), table: 'contacts_' }], exclusions: [], hold: false }, { source: 0, after: 0 }, 100),
      );
      return (await db('deliveries').where({ user_id: a.id, single_send_id: send.id }).whereRaw('lower(email) = lower(?)', [EMAIL]).select('status', 'last_error')) as Array<{ status: string; last_error: string }>;
    };
    expect(await fanOut(list)).toEqual([{ status: 'dropped', last_error: 'suppressed' }]);
    expect(await fanOut(world.lists[1])).toEqual([{ status: 'dropped', last_error: 'suppressed' }]);
    // The automation engine's check refuses it too; another account's copy is not affected.
    const refused = await suppressedAmong(db, [{ userId: a.id, email: EMAIL, groupId: null }, { userId: b.id, email: EMAIL, groupId: null }]);
    expect([...refused]).toEqual([[0, 'suppressed']]);
    // Lifted like any suppression, by the address.
    expectSuccess(await api(app, a).delete(`/suppressions/delete?emails=${encodeURIComponent(EMAIL)}`));
    expect(await db('suppressions').where({ user_id: a.id, type: 'erased' })).toEqual([]);
    expect(await fanOut(list)).toEqual([{ status: 'queued', last_error: null }]);
  });

  it('erasing an address the account does not hold removes nothing and still leaves the suppression; another account’s rows are never touched', async () => {
    const res = await erase(b, 'never.seen@example.com');
    expectSuccess(res);
    expect(res.body.message.erasure.rows_removed).toEqual({});
    expect(await db('suppressions').where({ user_id: b.id, type: 'erased' })).toHaveLength(1);
    const inA = await db('contacts').where({ user_id: a.id }).whereRaw('lower(email) = lower(?)', [EMAIL]).count('* as n');
    expect(Number(inA[0].n)).toBeGreaterThan(0);
  });
});
