import crypto from 'node:crypto';
import {
  groupListRecord,
  groupRecipientRecord,
  groupRecord,
} from '../../src/resources/unsubscribe-groups/unsubscribe-groups.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';

const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
});

afterEach(() => jest.restoreAllMocks());

type Group = {
  id: number;
  user_id: number;
  rand_id: string;
  group_name: string;
  description: string;
  is_display: number;
  created_at: string;
  updated_at: string;
  unsubscribe_clients_count: number;
};
type Recipient = { id: number; user_id: number; unsubscribe_groups_id: number; email_address: string };

async function groupsOf(account: TestAccount) {
  const res = await api(app, account).get('/unsubscribes-groups');
  expectSuccess(res);
  return res.body.message.unsubscribesGroups as Group[];
}

/** Creates a group through the API and returns it as the list shows it. */
async function makeGroup(account: TestAccount, group_name = 'Newsletter', is_display = 1, description = 'Monthly news') {
  const res = await api(app, account).form('/unsubscribes-groups/save', { group_name, description, is_display });
  expectSuccess(res, 'Saved Successfully');
  return (await groupsOf(account))[0];
}

async function details(account: TestAccount, id: number) {
  const res = await api(app, account).get(`/unsubscribes-groups/details?id=${id}`);
  expectSuccess(res);
  return res.body.message.unsubscribesGroup as Omit<Group, 'unsubscribe_clients_count'>;
}

async function addTo(account: TestAccount, groupId: number, emails: string) {
  const res = await api(app, account).form('/unsubscribes-groups/manually-add', { unsubscribe_groups_id: groupId, email_address: emails });
  expectSuccess(res, 'Added Successfully');
}

async function recipientsOf(account: TestAccount, groupId: number) {
  const res = await api(app, account).get(`/unsubscribes-groups/recipients-list?groupId=${groupId}`);
  expectSuccess(res);
  return res.body.message.recipients as Recipient[];
}

const countOf = async (account: TestAccount, groupId: number) =>
  (await groupsOf(account)).find((g) => g.id === groupId)!.unsubscribe_clients_count;

const badGroupId = { unsubscribe_groups_id: ['The selected unsubscribe groups id is invalid.'] };

describe('GET /unsubscribes-groups', () => {
  it('lists the account’s groups newest first, each with exactly the spec’s list fields', async () => {
    const first = await makeGroup(a, 'First', 1, 'First group');
    const second = await makeGroup(a, 'Second', 0, 'Second group');
    const list = await groupsOf(a);
    expect(list.map((g) => g.group_name)).toEqual(['Second', 'First']);
    for (const g of list) expectShape(groupListRecord, g);
    expect(second).toMatchObject({
      user_id: a.id,
      group_name: 'Second',
      description: 'Second group',
      is_display: 0,
      unsubscribe_clients_count: 0,
    });
    expect(first.is_display).toBe(1);
    expect(Object.keys(first).sort()).toEqual(
      [
        'created_at',
        'description',
        'group_name',
        'id',
        'is_display',
        'rand_id',
        'unsubscribe_clients_count',
        'updated_at',
        'user_id',
      ].sort(),
    );
  });

  it('gives each group a rand_id of ten digits, different for every group', async () => {
    const list = await groupsOf(a);
    for (const g of list) expect(g.rand_id).toMatch(/^\d{10}$/);
    expect(new Set(list.map((g) => g.rand_id)).size).toBe(list.length);
  });

  it('counts each group’s recipients, following adds and deletes', async () => {
    const account = await makeAccount(db);
    const g1 = await makeGroup(account, 'One');
    const g2 = await makeGroup(account, 'Two');
    await addTo(account, g1.id, 'a@example.com, b@example.com, c@example.com');
    await addTo(account, g2.id, 'a@example.com');
    expect(await countOf(account, g1.id)).toBe(3);
    expect(await countOf(account, g2.id)).toBe(1);
    await addTo(account, g1.id, 'A@EXAMPLE.COM, d@example.com');
    expect(await countOf(account, g1.id)).toBe(4);
    const [newest] = await recipientsOf(account, g1.id);
    expectSuccess(await api(app, account).delete(`/unsubscribes-groups/recipients-delete?id=${newest.id}`));
    expect(await countOf(account, g1.id)).toBe(3);
    const rest = (await recipientsOf(account, g1.id)).map((r) => r.id);
    expectSuccess(await api(app, account).form('/unsubscribes-groups/recipients-bulk-delete', { strIds: rest }));
    expect(await countOf(account, g1.id)).toBe(0);
    expect(await countOf(account, g2.id)).toBe(1);
  });

  it('pages with ?page=&per_page= and reports the total', async () => {
    const res = await api(app, a).get('/unsubscribes-groups?page=2&per_page=1');
    expectSuccess(res);
    expect(res.body.message.unsubscribesGroups).toHaveLength(1);
    expectShape(groupListRecord, res.body.message.unsubscribesGroups[0]);
    expect(res.body.message.unsubscribesGroups[0].group_name).toBe('First');
    expect(res.body.message.pagination).toEqual({ page: 2, per_page: 1, total: 2 });
  });

  it('without paging parameters returns everything and no pagination key', async () => {
    expect(Object.keys((await api(app, a).get('/unsubscribes-groups')).body.message)).toEqual(['unsubscribesGroups']);
  });

  it('refuses a bad page with VAL', async () => {
    expectVal(await api(app, a).get('/unsubscribes-groups?page=0'), {
      page: ['The page must be an integer between 1 and 1000000.'],
    });
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/unsubscribes-groups'));
  });

  it('never shows another account’s groups', async () => {
    expect(await groupsOf(b)).toEqual([]);
  });
});

describe('POST /unsubscribes-groups/save', () => {
  it('reports every missing field with the spec’s words', async () => {
    const res = await api(app, a).form('/unsubscribes-groups/save', {});
    expectVal(res, {
      group_name: ['The group name field is required.'],
      description: ['The description field is required.'],
      is_display: ['The is display field is required.'],
    });
    expect(Object.keys(res.body.errors).sort()).toEqual(['description', 'group_name', 'is_display']);
  });

  it('refuses values that are too long or not a flag, and saves nothing', async () => {
    const before = await groupsOf(a);
    const res = await api(app, a).form('/unsubscribes-groups/save', {
      group_name: 'x'.repeat(256),
      description: 'y'.repeat(2001),
      is_display: 2,
    });
    expectVal(res, {
      group_name: ['The group name must not be greater than 255 characters.'],
      description: ['The description must not be greater than 2000 characters.'],
      is_display: ['The selected is display is invalid.'],
    });
    expectVal(await api(app, a).form('/unsubscribes-groups/save', { group_name: 'G', description: 'D', is_display: 'yes' }), {
      is_display: ['The selected is display is invalid.'],
    });
    expect(await groupsOf(a)).toEqual(before);
  });

  it('accepts the longest values, trims them, and takes urlencoded and JSON bodies', async () => {
    const account = await makeAccount(db);
    const name = 'n'.repeat(255);
    const description = 'd'.repeat(2000);
    expectSuccess(
      await api(app, account).form('/unsubscribes-groups/save', { group_name: `  ${name} `, description, is_display: '0' }),
      'Saved Successfully',
    );
    expect(await groupsOf(account)).toEqual([expect.objectContaining({ group_name: name, description, is_display: 0 })]);
    expectSuccess(
      await api(app, account).urlencoded('/unsubscribes-groups/save', 'group_name=Url&description=Encoded&is_display=1'),
      'Saved Successfully',
    );
    expectSuccess(
      await api(app, account).json('/unsubscribes-groups/save', { group_name: 'Json', description: 'Body', is_display: true }),
      'Saved Successfully',
    );
    const [json, url] = await groupsOf(account);
    expect(json).toMatchObject({ group_name: 'Json', description: 'Body', is_display: 1 });
    expect(url).toMatchObject({ group_name: 'Url', description: 'Encoded', is_display: 1 });
  });

  it('draws another rand_id when the first one is taken', async () => {
    const account = await makeAccount(db);
    const existing = (await makeGroup(account, 'Holder')).rand_id;
    // The first ten draws repeat the taken rand_id; later ones are really random again.
    const spy = jest.spyOn(crypto, 'randomInt');
    for (const d of existing) spy.mockImplementationOnce((() => Number(d)) as unknown as typeof crypto.randomInt);
    const group = await makeGroup(account, 'Clash');
    const draws = spy.mock.calls.length;
    spy.mockRestore();
    expect(draws).toBe(20);
    expect(group.rand_id).not.toBe(existing);
    expect(group.rand_id).toMatch(/^\d{10}$/);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/unsubscribes-groups/save', { group_name: 'G', description: 'D', is_display: 1 }));
  });
});

describe('GET /unsubscribes-groups/details', () => {
  it('returns the group without its count', async () => {
    const listed = (await groupsOf(a))[0];
    const group = await details(a, listed.id);
    expectShape(groupRecord, group);
    const { unsubscribe_clients_count: _count, ...rest } = listed;
    expect(group).toEqual(rest);
  });

  it('answers NF1 for unknown, malformed and missing ids', async () => {
    for (const q of ['?id=999999999', '?id=abc', '?id=0', '?id=99999999999', '']) {
      expectNF1(await api(app, a).get(`/unsubscribes-groups/details${q}`));
    }
  });

  it('answers NF1 for another account’s group', async () => {
    expectNF1(await api(app, b).get(`/unsubscribes-groups/details?id=${(await groupsOf(a))[0].id}`));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/unsubscribes-groups/details?id=1'));
  });
});

describe('POST /unsubscribes-groups/update', () => {
  it('changes every field, keeps rand_id and created_at, and moves updated_at', async () => {
    const group = await makeGroup(a, 'Before', 1, 'Old text');
    const res = await api(app, a).form(`/unsubscribes-groups/update?id=${group.id}`, {
      group_name: 'After',
      description: 'New text',
      is_display: 0,
    });
    expectSuccess(res, 'Updated Successfully');
    const after = await details(a, group.id);
    expectShape(groupRecord, after);
    expect(after).toMatchObject({
      id: group.id,
      user_id: a.id,
      rand_id: group.rand_id,
      group_name: 'After',
      description: 'New text',
      is_display: 0,
      created_at: group.created_at,
    });
    expect(after.updated_at > group.updated_at).toBe(true);
  });

  it('accepts the id in the body too', async () => {
    const group = await makeGroup(a, 'Body id');
    expectSuccess(
      await api(app, a).form('/unsubscribes-groups/update', { id: group.id, group_name: 'Body id 2', description: 'D', is_display: 1 }),
      'Updated Successfully',
    );
    expect((await details(a, group.id)).group_name).toBe('Body id 2');
  });

  it('reports missing and bad fields with VAL and changes nothing', async () => {
    const group = await makeGroup(a, 'Stays');
    const before = await details(a, group.id);
    expectVal(await api(app, a).form(`/unsubscribes-groups/update?id=${group.id}`, {}), {
      group_name: ['The group name field is required.'],
      description: ['The description field is required.'],
      is_display: ['The is display field is required.'],
    });
    expectVal(
      await api(app, a).form(`/unsubscribes-groups/update?id=${group.id}`, {
        group_name: 'x'.repeat(256),
        description: 'D',
        is_display: 1,
      }),
      { group_name: ['The group name must not be greater than 255 characters.'] },
    );
    expect(await details(a, group.id)).toEqual(before);
  });

  it('answers NF1 for unknown, malformed and missing ids', async () => {
    const fields = { group_name: 'G', description: 'D', is_display: 1 };
    for (const q of ['?id=999999999', '?id=abc', '?id=-5', '']) {
      expectNF1(await api(app, a).form(`/unsubscribes-groups/update${q}`, fields));
    }
  });

  it('answers NF1 for another account’s group and leaves it unchanged', async () => {
    const group = await makeGroup(a, 'Mine');
    const before = await details(a, group.id);
    expectNF1(
      await api(app, b).form(`/unsubscribes-groups/update?id=${group.id}`, { group_name: 'Stolen', description: 'D', is_display: 0 }),
    );
    expect(await details(a, group.id)).toEqual(before);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/unsubscribes-groups/update?id=1', { group_name: 'G', description: 'D', is_display: 1 }));
  });
});

describe('POST /unsubscribes-groups/manually-add', () => {
  it('adds every address of a comma-separated list once, in order, whatever the case', async () => {
    const account = await makeAccount(db);
    const group = await makeGroup(account);
    await addTo(account, group.id, 'one@example.com, Two@Example.com,ONE@EXAMPLE.COM ; three@example.org two@example.com');
    const list = await recipientsOf(account, group.id);
    expect(list.map((r) => r.email_address)).toEqual(['three@example.org', 'Two@Example.com', 'one@example.com']);
    for (const r of list) {
      expectShape(groupRecipientRecord, r);
      expect(r).toMatchObject({ user_id: account.id, unsubscribe_groups_id: group.id });
    }
  });

  it('leaves addresses already in the group as they are; the same address may be in other groups', async () => {
    const account = await makeAccount(db);
    const g1 = await makeGroup(account, 'One');
    const g2 = await makeGroup(account, 'Two');
    await addTo(account, g1.id, 'Kept@Example.com');
    const before = await recipientsOf(account, g1.id);
    await addTo(account, g1.id, 'kept@example.com, new@example.com');
    const after = await recipientsOf(account, g1.id);
    expect(after.map((r) => r.email_address)).toEqual(['new@example.com', 'Kept@Example.com']);
    expect(after[1]).toEqual(before[0]);
    await addTo(account, g2.id, 'KEPT@example.com');
    expect((await recipientsOf(account, g2.id)).map((r) => r.email_address)).toEqual(['KEPT@example.com']);
    expect(await countOf(account, g1.id)).toBe(2);
  });

  it('adds a long list in one go', async () => {
    const account = await makeAccount(db);
    const group = await makeGroup(account);
    await addTo(account, group.id, Array.from({ length: 3000 }, (_, i) => `r${i}@example.com`).join(', '));
    expect(await countOf(account, group.id)).toBe(3000);
  });

  it('reports missing fields with VAL', async () => {
    const res = await api(app, a).form('/unsubscribes-groups/manually-add', {});
    expectVal(res, {
      unsubscribe_groups_id: ['The unsubscribe groups id field is required.'],
      email_address: ['The email address field is required.'],
    });
  });

  it('refuses an invalid address, naming it, and adds nothing', async () => {
    const group = await makeGroup(a, 'Strict');
    const res = await api(app, a).form('/unsubscribes-groups/manually-add', {
      unsubscribe_groups_id: group.id,
      email_address: 'good@example.com, bad@@example.com',
    });
    expectVal(res, { email_address: ['The email address must be a valid email address ("bad@@example.com" is not).'] });
    expect(await recipientsOf(a, group.id)).toEqual([]);
  });

  it('refuses a group id that is not an integer', async () => {
    expectVal(await api(app, a).form('/unsubscribes-groups/manually-add', { unsubscribe_groups_id: 'abc', email_address: 'x@example.com' }), {
      unsubscribe_groups_id: ['The unsubscribe groups id must be an integer.'],
    });
  });

  it('refuses an unknown group and another account’s group with VAL, adding nothing', async () => {
    expectVal(
      await api(app, a).form('/unsubscribes-groups/manually-add', { unsubscribe_groups_id: 999999999, email_address: 'x@example.com' }),
      badGroupId,
    );
    const theirs = await makeGroup(b, 'Theirs');
    expectVal(
      await api(app, a).form('/unsubscribes-groups/manually-add', { unsubscribe_groups_id: theirs.id, email_address: 'x@example.com' }),
      badGroupId,
    );
    expect(await recipientsOf(b, theirs.id)).toEqual([]);
  });

  it('accepts urlencoded and JSON bodies too', async () => {
    const account = await makeAccount(db);
    const group = await makeGroup(account);
    expectSuccess(
      await api(app, account).urlencoded(
        '/unsubscribes-groups/manually-add',
        `unsubscribe_groups_id=${group.id}&email_address=u%40example.com%2C%20v%40example.com`,
      ),
      'Added Successfully',
    );
    expectSuccess(
      await api(app, account).json('/unsubscribes-groups/manually-add', { unsubscribe_groups_id: group.id, email_address: 'j@example.com' }),
      'Added Successfully',
    );
    expect((await recipientsOf(account, group.id)).map((r) => r.email_address)).toEqual(['j@example.com', 'v@example.com', 'u@example.com']);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/unsubscribes-groups/manually-add', { unsubscribe_groups_id: 1, email_address: 'x@example.com' }));
  });
});

describe('GET /unsubscribes-groups/recipients-list', () => {
  let account: TestAccount;
  let group: Group;

  beforeAll(async () => {
    account = await makeAccount(db);
    group = await makeGroup(account, 'Listed');
    const other = await makeGroup(account, 'Other');
    await addTo(account, group.id, 'r1@example.com, r2@example.com');
    await addTo(account, group.id, 'r3@example.com');
    await addTo(account, other.id, 'elsewhere@example.com');
  });

  it('lists the group’s recipients only, newest first, each with exactly the spec’s fields', async () => {
    const list = await recipientsOf(account, group.id);
    expect(list.map((r) => r.email_address)).toEqual(['r3@example.com', 'r2@example.com', 'r1@example.com']);
    for (const r of list) expectShape(groupRecipientRecord, r);
    expect(Object.keys(list[0]).sort()).toEqual(
      ['created_at', 'email_address', 'id', 'unsubscribe_groups_id', 'updated_at', 'user_id'].sort(),
    );
  });

  it('lists an empty group as an empty array', async () => {
    const empty = await makeGroup(account, 'Empty');
    expect(await recipientsOf(account, empty.id)).toEqual([]);
  });

  it('pages with ?page=&per_page= and reports the total', async () => {
    const res = await api(app, account).get(`/unsubscribes-groups/recipients-list?groupId=${group.id}&page=1&per_page=2`);
    expectSuccess(res);
    expect(res.body.message.recipients.map((r: Recipient) => r.email_address)).toEqual(['r3@example.com', 'r2@example.com']);
    expect(res.body.message.pagination).toEqual({ page: 1, per_page: 2, total: 3 });
  });

  it('answers NF1 for unknown, malformed and missing group ids (the parameter is groupId)', async () => {
    for (const q of ['?groupId=999999999', '?groupId=abc', '?groupId=0', '', `?id=${group.id}`, `?group_id=${group.id}`]) {
      expectNF1(await api(app, account).get(`/unsubscribes-groups/recipients-list${q}`));
    }
  });

  it('answers NF1 for another account’s group', async () => {
    expectNF1(await api(app, b).get(`/unsubscribes-groups/recipients-list?groupId=${group.id}`));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get(`/unsubscribes-groups/recipients-list?groupId=${group.id}`));
  });
});

describe('DELETE /unsubscribes-groups/recipients-delete', () => {
  it('removes the address from its group; a second delete is NF1', async () => {
    const group = await makeGroup(a, 'Deletes');
    await addTo(a, group.id, 'stay@example.com, go@example.com');
    const go = (await recipientsOf(a, group.id)).find((r) => r.email_address === 'go@example.com')!;
    expectSuccess(await api(app, a).delete(`/unsubscribes-groups/recipients-delete?id=${go.id}`), 'Deleted Successfully');
    expect((await recipientsOf(a, group.id)).map((r) => r.email_address)).toEqual(['stay@example.com']);
    expectNF1(await api(app, a).delete(`/unsubscribes-groups/recipients-delete?id=${go.id}`));
  });

  it('answers NF1 for unknown, malformed and missing ids', async () => {
    for (const q of ['?id=999999999', '?id=abc', '?id=1.5', '']) {
      expectNF1(await api(app, a).delete(`/unsubscribes-groups/recipients-delete${q}`));
    }
  });

  it('answers NF1 for another account’s recipient and leaves it unchanged', async () => {
    const group = await makeGroup(a, 'Guarded');
    await addTo(a, group.id, 'guarded@example.com');
    const before = await recipientsOf(a, group.id);
    expectNF1(await api(app, b).delete(`/unsubscribes-groups/recipients-delete?id=${before[0].id}`));
    expect(await recipientsOf(a, group.id)).toEqual(before);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).delete('/unsubscribes-groups/recipients-delete?id=1'));
  });
});

describe('POST /unsubscribes-groups/recipients-bulk-delete', () => {
  it('deletes every listed id (strIds[0], strIds[1] urlencoded)', async () => {
    const group = await makeGroup(a, 'Bulk');
    await addTo(a, group.id, 'b1@example.com, b2@example.com, b3@example.com');
    const [r3, r2, r1] = await recipientsOf(a, group.id);
    const res = await api(app, a).urlencoded('/unsubscribes-groups/recipients-bulk-delete', `strIds[0]=${r1.id}&strIds[1]=${r3.id}`);
    expectSuccess(res, 'Deleted Successfully');
    expect(await recipientsOf(a, group.id)).toEqual([r2]);
  });

  it('deletes from a multipart body and across groups', async () => {
    const g1 = await makeGroup(a, 'Multi 1');
    const g2 = await makeGroup(a, 'Multi 2');
    await addTo(a, g1.id, 'm1@example.com');
    await addTo(a, g2.id, 'm2@example.com');
    const ids = [(await recipientsOf(a, g1.id))[0].id, (await recipientsOf(a, g2.id))[0].id];
    expectSuccess(await api(app, a).form('/unsubscribes-groups/recipients-bulk-delete', { strIds: ids }), 'Deleted Successfully');
    expect(await recipientsOf(a, g1.id)).toEqual([]);
    expect(await recipientsOf(a, g2.id)).toEqual([]);
  });

  it('is all or nothing: one unknown or malformed id → NF1 and nothing deleted', async () => {
    const group = await makeGroup(a, 'All or nothing');
    await addTo(a, group.id, 'k1@example.com, k2@example.com');
    const before = await recipientsOf(a, group.id);
    const ids = before.map((r) => r.id);
    expectNF1(await api(app, a).form('/unsubscribes-groups/recipients-bulk-delete', { strIds: [...ids, 999999999] }));
    expectNF1(await api(app, a).urlencoded('/unsubscribes-groups/recipients-bulk-delete', `strIds[0]=${ids[0]}&strIds[1]=x`));
    expect(await recipientsOf(a, group.id)).toEqual(before);
  });

  it('answers NF1 with another account’s ids and leaves them unchanged', async () => {
    const group = await makeGroup(a, 'Not yours');
    await addTo(a, group.id, 'n1@example.com, n2@example.com');
    const before = await recipientsOf(a, group.id);
    expectNF1(await api(app, b).form('/unsubscribes-groups/recipients-bulk-delete', { strIds: before.map((r) => r.id) }));
    expect(await recipientsOf(a, group.id)).toEqual(before);
  });

  it('requires strIds', async () => {
    expectVal(await api(app, a).form('/unsubscribes-groups/recipients-bulk-delete', {}), {
      strIds: ['The str ids field is required.'],
    });
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).urlencoded('/unsubscribes-groups/recipients-bulk-delete', 'strIds[0]=1'));
  });
});

describe('DELETE /unsubscribes-groups/delete (Herald extension)', () => {
  it('removes the group from the API but keeps its row and recipients', async () => {
    const account = await makeAccount(db);
    const keep = await makeGroup(account, 'Keep');
    const group = await makeGroup(account, 'Retired');
    await addTo(account, group.id, 'x1@example.com, x2@example.com');
    const recipients = await recipientsOf(account, group.id);

    expectSuccess(await api(app, account).delete(`/unsubscribes-groups/delete?id=${group.id}`), 'Deleted Successfully');

    expect((await groupsOf(account)).map((g) => g.id)).toEqual([keep.id]);
    expectNF1(await api(app, account).get(`/unsubscribes-groups/details?id=${group.id}`));
    expectNF1(await api(app, account).get(`/unsubscribes-groups/recipients-list?groupId=${group.id}`));
    expectNF1(
      await api(app, account).form(`/unsubscribes-groups/update?id=${group.id}`, { group_name: 'Back', description: 'D', is_display: 1 }),
    );
    expectVal(
      await api(app, account).form('/unsubscribes-groups/manually-add', { unsubscribe_groups_id: group.id, email_address: 'x3@example.com' }),
      badGroupId,
    );
    expectNF1(await api(app, account).delete(`/unsubscribes-groups/recipients-delete?id=${recipients[0].id}`));
    expectNF1(
      await api(app, account).form('/unsubscribes-groups/recipients-bulk-delete', { strIds: recipients.map((r) => r.id) }),
    );
    const paged = await api(app, account).get('/unsubscribes-groups?page=1&per_page=10');
    expect(paged.body.message.pagination.total).toBe(1);
    expectNF1(await api(app, account).delete(`/unsubscribes-groups/delete?id=${group.id}`));

    const row = await db('unsubscribe_groups').where({ id: group.id }).first();
    expect(row).toMatchObject({ group_name: 'Retired', rand_id: group.rand_id });
    expect(row.deleted_at).toEqual(expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/));
    expect(await db('unsubscribe_group_recipients').where({ unsubscribe_groups_id: group.id }).count({ n: '*' }).first()).toEqual({ n: 2 });
  });

  it('answers NF1 for unknown, malformed and missing ids', async () => {
    for (const q of ['?id=999999999', '?id=abc', '']) {
      expectNF1(await api(app, a).delete(`/unsubscribes-groups/delete${q}`));
    }
  });

  it('answers NF1 for another account’s group and leaves it unchanged', async () => {
    const group = await makeGroup(a, 'Survivor');
    const before = await details(a, group.id);
    expectNF1(await api(app, b).delete(`/unsubscribes-groups/delete?id=${group.id}`));
    expect(await details(a, group.id)).toEqual(before);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).delete('/unsubscribes-groups/delete?id=1'));
  });
});
