import { randomUUID } from 'node:crypto';
import { scheduleRecord } from '../../src/resources/automations/automations.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF2, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';

/**
 * POST /automations/schedule/update (Herald extension, issue 34): an automation email changed
 * in place, with the rules of create, for the account's own emails only.
 */
// Registered before setupApp's hook that closes the pool: nothing left live for a later clone's worker.
afterAll(async () => {
  await db('automations').whereIn('user_id', [a.id, b.id]).update({ deleted_at: db.fn.now(), status: 0 });
});
const { app, db } = setupApp();

let a: TestAccount;
let b: TestAccount;
let sender: number;
let otherSender: number;
let unverified: number;
let bSender: number;

beforeAll(async () => {
  [a, b] = await Promise.all([makeAccount(db), makeAccount(db)]);
  [sender, otherSender, unverified, bSender] = await Promise.all([makeSender(db, a), makeSender(db, a), makeSender(db, a, false), makeSender(db, b)]);
});

async function automationWithEmails(account: TestAccount, senderId: number, subjects: string[]): Promise<{ utr: string; emails: Array<Record<string, unknown> & { utr: string; id: number }> }> {
  const list = await makeContactType(db, account);
  const group = await makeGroup(db, account);
  const created = await api(app, account).form('/automations/create', { type: 'custom', automation_for: `contacts_${list}`, automation_name: 'Steps', unsubscribe_group_id: group });
  expectSuccess(created);
  const utr = created.body.message.utr as string;
  for (const subject of subjects) {
    expectSuccess(
      await api(app, account).form('/automations/schedule/create', { utr, sender_id: senderId, subject, waiting_period: 1, waiting_type: 'instantly', template_id: 3, preview_img: 'template-welcome.png' }),
      'Schedule Added',
    );
  }
  return { utr, emails: await emailsOf(account, utr) };
}

async function emailsOf(account: TestAccount, utr: string) {
  const res = await api(app, account).get(`/automations/schedule?utr=${utr}`);
  expectSuccess(res);
  return res.body.message.automation_schedules as Array<Record<string, unknown> & { utr: string; id: number }>;
}

const changes = (over: Record<string, unknown> = {}) => ({
  sender_id: otherSender,
  subject: 'Changed subject',
  waiting_period: 3,
  waiting_type: 'days',
  template_id: 1,
  preview_img: 'custom.png',
  template_html: '<html><body><p>New ((first_name))</p></body></html>',
  ...over,
});

describe('POST /automations/schedule/update', () => {
  it('changes the email in place: its place, utr and id stay, the others are untouched', async () => {
    const { utr, emails } = await automationWithEmails(a, sender, ['First', 'Second', 'Third']);
    const res = await api(app, a).form('/automations/schedule/update', { utr: emails[1].utr, ...changes() });
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Updated Successfully' } });
    const after = await emailsOf(a, utr);
    expect(after.map((e) => e.utr)).toEqual(emails.map((e) => e.utr));
    expect(after[0]).toEqual(emails[0]);
    expect(after[2]).toEqual(emails[2]);
    expectShape(scheduleRecord, after[1]);
    expect(after[1]).toMatchObject({ id: emails[1].id, ...changes(), template_json: null });
    // The utr may come in the query too (as the other utr routes take it).
    expectSuccess(await api(app, a).form(`/automations/schedule/update?utr=${emails[1].utr}`, changes({ subject: 'Again', template_html: undefined })), 'Updated Successfully');
    expect((await emailsOf(a, utr))[1]).toMatchObject({ subject: 'Again', template_html: null });
  });

  it('refuses with create’s words (VAL) and changes nothing', async () => {
    const { utr, emails } = await automationWithEmails(a, sender, ['Only']);
    const cases: Array<[Record<string, unknown>, Record<string, string[]>]> = [
      [changes({ sender_id: unverified }), { sender_id: ['The selected sender id is not verified.'] }],
      [changes({ sender_id: bSender }), { sender_id: ['The selected sender id is invalid.'] }],
      [changes({ template_id: 999999 }), { template_id: ['The selected template id is invalid.'] }],
      [changes({ waiting_period: 0 }), { waiting_period: ['The waiting period must be at least 1.'] }],
      [changes({ template_json: '{"version":1}' }), { template_html: ['The template html field is prohibited when template json is present.'] }],
      [changes({ subject: undefined, waiting_type: 'weeks' }), { subject: ['The subject field is required.'], waiting_type: ['The selected waiting type is invalid.'] }],
    ];
    for (const [body, errors] of cases) expectVal(await api(app, a).form('/automations/schedule/update', { utr: emails[0].utr, ...body }), errors);
    expect(await emailsOf(a, utr)).toEqual(emails);
  });

  it('answers NF2 for unknown, malformed, removed and another account’s emails, and for an automation’s utr', async () => {
    const mine = await automationWithEmails(a, sender, ['Mine', 'Removed']);
    expectSuccess(await api(app, a).delete(`/automations/schedule/delete?utr=${mine.emails[1].utr}`));
    const theirs = await automationWithEmails(b, bSender, ['Theirs']);
    for (const utr of [randomUUID(), 'not-a-utr', mine.emails[1].utr, theirs.emails[0].utr, mine.utr]) {
      expectNF2(await api(app, a).form('/automations/schedule/update', { utr, ...changes() }));
    }
    expectNF2(await api(app, a).form('/automations/schedule/update', changes()));
    // An email of a deleted automation.
    const gone = await automationWithEmails(a, sender, ['Gone']);
    expectSuccess(await api(app, a).delete(`/automations/delete?utr=${gone.utr}`));
    expectNF2(await api(app, a).form('/automations/schedule/update', { utr: gone.emails[0].utr, ...changes() }));
    expect(await emailsOf(b, theirs.utr)).toEqual(theirs.emails);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/automations/schedule/update', { utr: randomUUID(), ...changes() }));
  });
});
