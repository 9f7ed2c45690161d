import { simpleParser } from 'mailparser';
import request from 'supertest';
import { secret } from '../../src/db/secrets';
import { formPublicId } from '../../src/forms/public-id';
import { api, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType } from '../helpers/fixtures';
import { createAutomation, createSend } from '../helpers/sends';
import type { SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { setupDelivery, waitForSend } from '../helpers/worker';

/**
 * Double opt-in through the worker as production runs it (issue 35): the confirmation mail
 * reaches an SMTP server from the form's sender; confirming starts the list's welcome
 * automation; a pending subscription is mailed by neither a send nor an automation.
 */
const { app, db, config } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50', SUBSCRIBE_LIMIT_PER_HOUR: '0' }, 'optin');
const rig = setupDelivery({ config, db }, { group: 'Signups' });
let sink: SmtpSink;
let a: TestAccount;

beforeAll(() => {
  ({ sink, account: a } = rig);
});

const received = (to: string) => sink.received.filter((m) => m.to[0] === to);
const waitForMail = (to: string, n: number) =>
  waitFor(`${n} message(s) to ${to}`, () => received(to).length >= n, { describe: () => sink.received.map((m) => m.to[0]) });

async function subjects(to: string): Promise<string[]> {
  return Promise.all(received(to).map(async (m) => (await simpleParser(m.raw)).subject ?? ''));
}

describe('double opt-in with the worker', () => {
  it('mails the confirmation; confirming starts the welcome automation; the pending address gets no send or automation mail', async () => {
    const list = await makeContactType(db, a, 'Newsletter');
    await makeContacts(db, a, list, [{ email: 'member@example.com', first_name: 'Mem' }]);
    const utr = (await createAutomation(app, db, a, { group: rig.group }, { type: 'welcome', automation_for: `contacts_${list}`, automation_name: 'Welcome flow' })).utr;
    expectSuccess(
      await api(app, a).form('/automations/schedule/create', {
        utr,
        sender_id: rig.sender,
        subject: 'Welcome aboard',
        waiting_period: 1,
        waiting_type: 'instantly',
        template_id: 3,
        preview_img: 'template-welcome.png',
        template_html: '<html><body><p>Welcome ((first_name))</p><a href="((unsubscribe_preferences))">prefs</a></body></html>',
      }),
      'Schedule Added',
    );
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));

    const email = (await db('reserved_fields').where({ field_name: 'email' }).first('id')).id;
    const first = (await db('reserved_fields').where({ field_name: 'first_name' }).first('id')).id;
    const [form] = await db('forms')
      .insert({
        user_id: a.id,
        name: 'Newsletter signup',
        contact_type_ids: [list],
        fields: JSON.stringify([
          { field_id: email, required: 1, label: 'Email' },
          { field_id: first, required: 0, label: 'First name' },
        ]),
        double_opt_in: 1,
        consent_text: 'Yes, send me the newsletter.',
        confirm_url: 'http://site.test/confirmed',
        confirmation_subject: 'Please confirm',
        confirmation_sender_id: rig.sender,
      })
      .returning('id');
    const publicId = formPublicId(await secret(db, 'tracking'), { userId: a.id, formId: form.id });

    for (const [to, name] of [['ann@example.com', 'Ann'], ['bob@example.com', 'Bob']]) {
      const res = await request(app).post(`/subscribe/${publicId}`).type('form').send({ email: to, first_name: name, consent: '1' });
      expect(res.status).toBe(200);
    }
    await waitForMail('ann@example.com', 1);
    await waitForMail('bob@example.com', 1);
    const confirmation = await simpleParser(received('ann@example.com')[0].raw);
    expect(confirmation.subject).toBe('Please confirm');
    expect(confirmation.from?.value[0].address).toBe('news@acme.test');
    expect(received('ann@example.com')[0].raw).toMatch(/^DKIM-Signature:[^]*\bd=acme\.test;/);
    const link = /http:\/\/herald\.test(\/subscribe\/confirm\/[0-9a-f]{72})/.exec(String(confirmation.html))![1];

    // A send to the list now reaches its member, not the pending addresses.
    const send = await createSend(app, db, a, { list, sender: rig.sender, group: rig.group });
    await waitForSend(db, send.utr);
    await waitForMail('member@example.com', 1);
    expect(await subjects('bob@example.com')).toEqual(['Please confirm']);
    expect(await subjects('ann@example.com')).toEqual(['Please confirm']);

    // A scanner's GET confirms nothing; the person's POST does.
    expect((await request(app).get(link)).status).toBe(200);
    const confirmed = await request(app).post(link);
    expect(confirmed.status).toBe(303);
    expect(confirmed.headers.location).toBe('http://site.test/confirmed');

    await waitForMail('ann@example.com', 2);
    expect(await subjects('ann@example.com')).toEqual(['Please confirm', 'Welcome aboard']);
    // The engine has been round since: the pending address got nothing more.
    await waitFor('the welcome email recorded', async () => db('deliveries').where({ user_id: a.id, email: 'ann@example.com' }).whereNotNull('automation_id').first('id'));
    expect(await subjects('bob@example.com')).toEqual(['Please confirm']);
    expect(await db('deliveries').where({ user_id: a.id, email: 'bob@example.com' }).first('id')).toBeUndefined();
    expect(await db('automation_contacts').where({ user_id: a.id, email: 'bob@example.com' }).first('id')).toBeUndefined();
  });
});
