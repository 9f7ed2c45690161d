import { up } from '../../migrations/202612050200_account-events-of-their-send';
import { SendStatus } from '../../src/states';
import { makeAccount, setupApp } from '../helpers/app';
import { makeSendRow } from '../helpers/fixtures';

/**
 * Account events about a send recorded before they carried its id (the utr only in `data`): the
 * migration gives them the id, so GET /events?single_send_utr= finds them too.
 */
const { db } = setupApp();

it('gives single_send.started/completed recorded with the utr only in data the send’s id; leaves others alone', async () => {
  const a = await makeAccount(db);
  const b = await makeAccount(db);
  const send = await makeSendRow(db, a, { name: 'Old events', status: SendStatus.Completed });
  const old = (type: string, userId: number, utr: string) =>
    db('events').insert({ user_id: userId, type, data: JSON.stringify({ utr, single_send: 'Old events', subject: 's' }) }).returning('id');
  const [[started], [completed], [otherAccount], [unknown]] = await Promise.all([
    old('single_send.started', a.id, send.utr),
    old('single_send.completed', a.id, send.utr),
    // Another account naming the same utr is not about this send.
    old('single_send.started', b.id, send.utr),
    old('single_send.completed', a.id, 'not-a-utr'),
  ]);
  await up(db);
  const ids = async (row: { id: number }) => (await db('events').where({ id: row.id }).first('single_send_id')).single_send_id;
  expect(await ids(started)).toBe(send.id);
  expect(await ids(completed)).toBe(send.id);
  expect(await ids(otherAccount)).toBeNull();
  expect(await ids(unknown)).toBeNull();
  const listed = await db('events').where({ user_id: a.id, single_send_id: send.id }).pluck('type');
  expect(listed.sort()).toEqual(['single_send.completed', 'single_send.started']);
});
