import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ScheduleType, SendStatus } from '../../src/states';
import type { TestAccount } from './app';

/** Direct inserts for the records a test needs around the thing it tests. */
export async function makeContactType(db: Knex, account: TestAccount, name = 'List'): Promise<number> {
  const [row] = await db('contact_types').insert({ user_id: account.id, name: `${name} ${randomBytes(3).toString('hex')}` }).returning('id');
  return row.id;
}

export async function makeContacts(
  db: Knex,
  account: TestAccount,
  typeId: number,
  rows: Array<Record<string, unknown> & { email: string }>,
): Promise<number[]> {
  const inserted = await db('contacts')
    .insert(rows.map((r) => ({ user_id: account.id, contact_type_id: typeId, ...r })))
    .returning('id');
  await db('contact_types').where({ id: typeId }).increment('contacts_version', 1);
  return inserted.map((r: { id: number }) => r.id);
}

/** A segment of the list: everyone whose email contains `@`. */
export async function makeSegment(db: Knex, account: TestAccount, typeId: number): Promise<number> {
  const email = await db('fields').whereNull('user_id').where({ field_name: 'email' }).first('id');
  const [row] = await db('segments')
    .insert({
      user_id: account.id,
      contact_type_id: typeId,
      segment_name: 'Everyone',
      select_field: JSON.stringify([String(email.id)]),
      select_operator: JSON.stringify(['contains']),
      value: JSON.stringify(['@']),
      query_type: 'and',
    })
    .returning('id');
  return row.id;
}

export async function makeSender(db: Knex, account: TestAccount, verified = true): Promise<number> {
  const gb = await db('countries').where({ iso_code: 'GB' }).first('id');
  const [row] = await db('senders')
    .insert({
      user_id: account.id,
      from_name: 'Acme News',
      from_email: 'news@acme.test',
      reply_to_email: 'reply@acme.test',
      country_id: gb.id,
      company_address: '1 High Street',
      nickname: 'acme',
      is_verified: verified ? 1 : 0,
      utr: randomBytes(8).toString('hex'),
    })
    .returning('id');
  return row.id;
}

export async function makeGroup(db: Knex, account: TestAccount, name = 'Newsletter', isDisplay = 1): Promise<number> {
  const [row] = await db('unsubscribe_groups')
    .insert({
      user_id: account.id,
      rand_id: String(Math.floor(Math.random() * 1e10)).padStart(10, '0'),
      group_name: name,
      description: `About ${name}`,
      is_display: isDisplay,
    })
    .returning('id');
  return row.id;
}

/** A single send row with its own sender and group, as the API would leave it (no recipients). */
export async function makeSendRow(
  db: Knex,
  account: TestAccount,
  opts: { name: string; status: SendStatus },
): Promise<{ id: number; utr: string }> {
  const sender = await makeSender(db, account);
  const group = await makeGroup(db, account);
  const utr = randomUUID();
  const [row] = await db('single_sends')
    .insert({
      user_id: account.id,
      utr,
      template_id: 1,
      sender_id: sender,
      unsubscribe_group_id: group,
      single_send_name: opts.name,
      subject: 'Hello',
      preheader: 'Hi',
      from_sender: 'news@acme.test',
      reply_to: 'reply@acme.test',
      status: opts.status,
      schedule_type: ScheduleType.Now,
    })
    .returning('id');
  return { id: row.id, utr };
}
