import type { Express } from 'express';
import type { Knex } from 'knex';
import { api, type TestAccount } from './app';
import { expectSuccess } from './expect';

/**
 * Single sends and automations created through the API, as a client would: a test states only
 * what its case needs (a list, a design, a subject) and gets the utr and id back.
 */

/** What every send or automation needs: the account's records it names. */
export interface SendRefs {
  sender: number;
  group: number;
  /** The contact type sent to (`contacts_<list>`). */
  list: number;
}

/**
 * POST /single/send/create to `contacts_<list>`, due now, with a plain design; `fields` replace any
 * form field (`template_html`, `subject`, `recipient_id`, …). Fails the test with the API's answer
 * unless the send was created.
 */
export async function createSend(
  app: Express,
  db: Knex,
  account: TestAccount,
  refs: SendRefs,
  fields: Record<string, unknown> = {},
): Promise<{ utr: string; id: number }> {
  const res = await api(app, account).form('/single/send/create', {
    template_id: 1,
    template_html: '<html><body><p>Hello ((first_name))</p></body></html>',
    sender_id: refs.sender,
    unsubscribe_group_id: refs.group,
    single_send_name: 'News',
    subject: 'News',
    preheader: 'This month',
    recipient_id: [`contacts_${refs.list}`],
    schedule_type: 0,
    ...fields,
  });
  expectSuccess(res);
  const utr = res.body.message.utr as string;
  const { id } = await db('single_sends').where({ utr }).first('id');
  return { utr, id };
}

/**
 * POST /automations/create: a custom automation on `contacts_<list>` (a draft, no email yet);
 * `fields` replace any form field (`type`, `automation_for` — then no list is needed —,
 * `automation_name`, …).
 */
export async function createAutomation(
  app: Express,
  db: Knex,
  account: TestAccount,
  refs: Pick<SendRefs, 'group'> & Partial<Pick<SendRefs, 'list'>>,
  fields: Record<string, unknown> = {},
): Promise<{ utr: string; id: number }> {
  const res = await api(app, account).form('/automations/create', {
    type: 'custom',
    automation_for: `contacts_${refs.list}`,
    automation_name: 'Drip',
    unsubscribe_group_id: refs.group,
    ...fields,
  });
  expectSuccess(res);
  const utr = res.body.message.utr as string;
  const { id } = await db('automations').where({ utr }).first('id');
  return { utr, id };
}
