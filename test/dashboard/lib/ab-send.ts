import type { Express } from 'express';
import type { Knex } from 'knex';
import { api, type TestAccount } from '../../helpers/app';
import type { World } from './world';

export interface AbSendText {
  name: string;
  /** The subjects of variations A, B and C. */
  subjects: [string, string, string];
}

/**
 * A subject test of 3 variations on the world's list, made through POST /single/send/create,
 * then left as the worker would leave it once the test group was sent and the test found
 * inconclusive with `wait`: each variation's counters, the test waiting, the rest of the
 * audience held.
 */
export async function makeWaitingAbSend(app: Express, db: Knex, a: TestAccount, w: World, text: AbSendText): Promise<{ utr: string; id: number }> {
  const res = await api(app, a).form('/single/send/create', {
    template_id: 1,
    template_html: '<html><body><p>Hello</p></body></html>',
    sender_id: w.senderId,
    unsubscribe_group_id: (await db('unsubscribe_groups').where({ user_id: a.id }).first('id')).id,
    single_send_name: text.name,
    subject: text.subjects[0],
    preheader: 'p',
    recipient_id: [`contacts_${w.typeId}`],
    schedule_type: 1,
    schedule_date: `${new Date().getUTCFullYear() + 1}-01-01`,
    schedule_time: '09:00',
    ab_test_type: 'subject',
    'ab_variations[0][subject]': text.subjects[1],
    'ab_variations[1][subject]': text.subjects[2],
    ab_if_inconclusive: 'wait',
  });
  expect(res.status).toBe(200);
  const utr = res.body.message.utr as string;
  const { id } = await db('single_sends').where({ utr, user_id: a.id }).first('id');
  await db('single_sends').where({ id, user_id: a.id }).update({ status: 2, sent_at: db.fn.now(), fanout_done_at: db.fn.now(), triggered: 12 });
  const counts = [
    { triggered: 2, delivered: 2, unique_opens: 1, unique_clicks: 0 },
    { triggered: 2, delivered: 2, unique_opens: 2, unique_clicks: 1 },
    { triggered: 1, delivered: 1, unique_opens: 0, unique_clicks: 0 },
  ];
  for (const [idx, c] of counts.entries()) await db('single_send_variations').where({ single_send_id: id, user_id: a.id, idx }).update(c);
  await db('ab_tests').where({ single_send_id: id, user_id: a.id }).update({ status: 'waiting', test_size: 5, test_done_at: db.fn.now() });
  await db('deliveries').insert(w.emails.slice(5).map((email) => ({ user_id: a.id, single_send_id: id, email, status: 'held' })));
  return { utr, id };
}
