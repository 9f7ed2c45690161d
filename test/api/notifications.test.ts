import { recordAccountEvent } from '../../src/events/account-events';
import { eventRecord, notificationRecord } from '../../src/resources/notifications/notifications.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';

const { app, db, mailer } = setupApp();
let a: TestAccount;
let b: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
});

async function add(account: TestAccount, email: string, owner = 'Owner') {
  const res = await api(app, account).form('/notification-recipient/save', { email_address: email, email_owner: owner });
  expectSuccess(res, 'Added Successfully');
}

async function listOf(account: TestAccount) {
  const res = await api(app, account).get('/notification-recipients');
  expectSuccess(res);
  return res.body.message.notifications as Array<{ id: number; email_address: string; email_owner: string }>;
}

describe('GET /notification-recipients', () => {
  it('lists the account’s recipients newest first, each with the spec’s fields', async () => {
    await add(a, 'first@example.com', 'First');
    await add(a, 'second@example.com', 'Second');
    const list = await listOf(a);
    expect(list.map((r) => r.email_address)).toEqual(['second@example.com', 'first@example.com']);
    for (const r of list) expectShape(notificationRecord, r);
    expect(list[0]).toMatchObject({ user_id: a.id, email_owner: 'Second' });
  });

  it('pages with ?page=&per_page= and reports the total', async () => {
    const res = await api(app, a).get('/notification-recipients?page=2&per_page=1');
    expectSuccess(res);
    expect(res.body.message.notifications).toHaveLength(1);
    expect(res.body.message.notifications[0].email_address).toBe('first@example.com');
    expect(res.body.message.pagination).toEqual({ page: 2, per_page: 1, total: 2 });
  });

  it('refuses a bad page size with VAL', async () => {
    const res = await api(app, a).get('/notification-recipients?per_page=5000');
    expectVal(res, { per_page: ['The per page must be an integer between 1 and 1000.'] });
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/notification-recipients'));
  });

  it('never shows another account’s recipients', async () => {
    expect(await listOf(b)).toEqual([]);
  });
});

describe('POST /notification-recipient/save', () => {
  it('reports each missing field with the spec’s words (owner: `The name field is required`)', async () => {
    const res = await api(app, a).form('/notification-recipient/save', {});
    expectVal(res, {
      email_address: ['The email address field is required.'],
      email_owner: ['The name field is required'],
    });
  });

  it('refuses an invalid address and changes nothing', async () => {
    const before = await listOf(a);
    const res = await api(app, a).form('/notification-recipient/save', { email_address: 'not-an-email', email_owner: 'X' });
    expectVal(res, { email_address: ['The email address must be a valid email address.'] });
    expect(await listOf(a)).toEqual(before);
  });

  it('re-adding an address (any case) updates its owner instead of duplicating it', async () => {
    await add(a, 'FIRST@example.com', 'Renamed');
    const list = await listOf(a);
    expect(list.filter((r) => r.email_address.toLowerCase() === 'first@example.com')).toEqual([
      expect.objectContaining({ email_address: 'first@example.com', email_owner: 'Renamed' }),
    ]);
  });

  it('accepts urlencoded and JSON bodies too', async () => {
    expectSuccess(await api(app, b).urlencoded('/notification-recipient/save', 'email_address=u%40example.com&email_owner=U'));
    expectSuccess(await api(app, b).json('/notification-recipient/save', { email_address: 'j@example.com', email_owner: 'J' }));
    expect((await listOf(b)).map((r) => r.email_address).sort()).toEqual(['j@example.com', 'u@example.com']);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/notification-recipient/save', { email_address: 'x@example.com', email_owner: 'X' }));
  });
});

describe('DELETE /notification-recipient/delete', () => {
  it('deletes the record', async () => {
    await add(a, 'gone@example.com');
    const id = (await listOf(a)).find((r) => r.email_address === 'gone@example.com')!.id;
    expectSuccess(await api(app, a).delete(`/notification-recipient/delete?id=${id}`), 'Deleted Successfully');
    expect((await listOf(a)).some((r) => r.id === id)).toBe(false);
    expectNF1(await api(app, a).delete(`/notification-recipient/delete?id=${id}`));
  });

  it('answers NF1 for unknown, malformed and missing ids', async () => {
    for (const q of ['?id=999999999', '?id=abc', '?id=-1', '?id=99999999999', '']) {
      expectNF1(await api(app, a).delete(`/notification-recipient/delete${q}`));
    }
  });

  it('answers NF1 for another account’s id and leaves it alone', async () => {
    const id = (await listOf(a))[0].id;
    expectNF1(await api(app, b).delete(`/notification-recipient/delete?id=${id}`));
    expect((await listOf(a)).some((r) => r.id === id)).toBe(true);
  });
});

describe('POST /notification-recipient/bulk-delete', () => {
  it('deletes every listed id (strIds[0], strIds[1] urlencoded)', async () => {
    await add(a, 'bulk1@example.com');
    await add(a, 'bulk2@example.com');
    const ids = (await listOf(a)).filter((r) => r.email_address.startsWith('bulk')).map((r) => r.id);
    const res = await api(app, a).urlencoded('/notification-recipient/bulk-delete', `strIds[0]=${ids[0]}&strIds[1]=${ids[1]}`);
    expectSuccess(res, 'Deleted Successfully');
    expect((await listOf(a)).some((r) => ids.includes(r.id))).toBe(false);
  });

  it('is all or nothing: one unknown id → NF1 and nothing deleted', async () => {
    await add(a, 'keep@example.com');
    const id = (await listOf(a)).find((r) => r.email_address === 'keep@example.com')!.id;
    expectNF1(await api(app, a).form('/notification-recipient/bulk-delete', { strIds: [id, 999999999] }));
    expect((await listOf(a)).some((r) => r.id === id)).toBe(true);
  });

  it('answers NF1 with another account’s ids and leaves them alone', async () => {
    const ids = (await listOf(a)).map((r) => r.id);
    expectNF1(await api(app, b).form('/notification-recipient/bulk-delete', { strIds: ids }));
    expect((await listOf(a)).map((r) => r.id)).toEqual(ids);
  });

  it('requires strIds', async () => {
    expectVal(await api(app, a).form('/notification-recipient/bulk-delete', {}), { strIds: ['The str ids field is required.'] });
  });
});

describe('GET /notification-events', () => {
  it('lists only the account’s own events, newest first; AUTH without keys', async () => {
    await recordAccountEvent({ db }, a.id, 'sender.verified', 'First', { n: 1 });
    await recordAccountEvent({ db }, a.id, 'single_send.started', 'Second', { n: 2 });
    await recordAccountEvent({ db }, b.id, 'sender.verified', 'Theirs', {});
    const res = await api(app, a).get('/notification-events');
    expectSuccess(res);
    expect(res.body.message.events.map((e: { subject: string }) => e.subject)).toEqual(['Second', 'First']);
    expect(res.body.message.events[0]).toMatchObject({ type: 'single_send.started', payload: { n: 2 }, notified: 0, notify_error: null });
    const page = await api(app, a).get('/notification-events?page=1&per_page=1');
    expect(page.body.message.pagination).toEqual({ page: 1, per_page: 1, total: 2 });
    expectAuthMissing(await api(app).get('/notification-events'));
  });

  it('queues the notice for the worker instead of mailing it in the request, and shows how its mailing went', async () => {
    const c = await makeAccount(db);
    await add(c, 'ops@example.com', 'Ops');
    mailer.clear();
    await recordAccountEvent({ db }, c.id, 'automation.paused', 'Paused', { utr: 'x' });
    expect(mailer.sent).toHaveLength(0);
    const job = await db('outbox_jobs').where({ user_id: c.id }).first('kind', 'status', 'payload', 'attempts');
    expect(job).toEqual({ kind: 'notification', status: 'queued', payload: { to: [{ name: 'Ops', email: 'ops@example.com' }] }, attempts: 0 });
    const [event] = (await api(app, c).get('/notification-events')).body.message.events;
    expect(event).toMatchObject({ type: 'automation.paused', subject: 'Paused', payload: { utr: 'x' }, notified: 0, notify_error: null });
    expectShape(eventRecord, event);
    // Done as the worker does it (its loop is exercised in test/delivery): the job's result is the event's.
    await db('outbox_jobs').where({ user_id: c.id }).update({ status: 'done', done_count: 1 });
    const [done] = (await api(app, c).get('/notification-events')).body.message.events;
    expect(done).toMatchObject({ notified: 1, notify_error: null });
  });

  it('an account without notification recipients gets no job', async () => {
    const c = await makeAccount(db);
    await recordAccountEvent({ db }, c.id, 'automation.live', 'Live', {});
    expect(await db('outbox_jobs').where({ user_id: c.id })).toEqual([]);
    expect(await db('events').where({ user_id: c.id }).select('type', 'email', 'data')).toEqual([
      { type: 'automation.live', email: null, data: { subject: 'Live' } },
    ]);
  });
});
