import { notificationRecord } from '../../src/resources/notifications/notifications.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';

const { app, db } = setupApp();
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
    await db('account_events').insert([
      { user_id: a.id, type: 'sender.verified', subject: 'First', payload: JSON.stringify({ n: 1 }) },
      { user_id: a.id, type: 'single_send.started', subject: 'Second', payload: JSON.stringify({ n: 2 }) },
      { user_id: b.id, type: 'sender.verified', subject: 'Theirs', payload: '{}' },
    ]);
    const res = await api(app, a).get('/notification-events');
    expectSuccess(res);
    expect(res.body.message.events.map((e: { subject: string }) => e.subject)).toEqual(['Second', 'First']);
    expect(res.body.message.events[0]).toMatchObject({ type: 'single_send.started', payload: { n: 2 }, notified: 0, notify_error: null });
    const page = await api(app, a).get('/notification-events?page=1&per_page=1');
    expect(page.body.message.pagination).toEqual({ page: 1, per_page: 1, total: 2 });
    expectAuthMissing(await api(app).get('/notification-events'));
  });
});
