import request from 'supertest';
import { readTotals } from '../../src/statistics';
import { api, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType } from '../helpers/fixtures';
import { createAutomation } from '../helpers/sends';
import type { SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { setupDelivery } from '../helpers/worker';

/**
 * Automations through the worker as production runs it (started once for the file); each
 * test waits for the mail the worker sends, and a test that expects nothing waits for a
 * canary sent after it instead of a fixed time.
 */
const { app, db, config } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50' }, 'automation');
const rig = setupDelivery({ config, db }, { group: 'Onboarding' });
let sink: SmtpSink;
let a: TestAccount;
let sender: number;
let group: number;
beforeAll(() => {
  ({ sink, account: a, sender, group } = rig);
});

async function automation(type: 'welcome' | 'custom', target: string, extra: Record<string, unknown> = {}): Promise<string> {
  return (await createAutomation(app, db, a, { group }, { type, automation_for: target, automation_name: `${type} flow`, ...extra })).utr;
}

async function addEmail(utr: string, subject: string, waiting_type: string, waiting_period: number) {
  const res = await api(app, a).form('/automations/schedule/create', {
    utr,
    sender_id: sender,
    subject,
    waiting_period,
    waiting_type,
    template_id: 3,
    preview_img: 'template-welcome.png',
    template_html: `<html><body><p>${subject} for ((first_name))</p><a href="((unsubscribe_preferences))">prefs</a></body></html>`,
  });
  expectSuccess(res, 'Schedule Added');
}

async function entered(utr: string) {
  const res = await api(app, a).get(`/automations/contacts?utr=${utr}`);
  expectSuccess(res);
  return res.body.message.contacts as Array<{ email: string; state: string; next_email_utr: string | null; next_due_at: string | null; exit_reason: string | null }>;
}

async function schedules(utr: string) {
  return (await api(app, a).get(`/automations/schedule?utr=${utr}`)).body.message.automation_schedules as Array<{ utr: string }>;
}

/** Makes every waiting step of the automation due now (instead of sleeping for hours). */
async function fastForward(utr: string) {
  const { id } = await db('automations').where({ utr }).first('id');
  await db('automation_contacts').where({ automation_id: id, state: 'active' }).update({ next_due_at: db.raw("now() - interval '1 second'") });
}

const received = (to: string) => sink.received.filter((m) => m.to[0] === to);

/** Waits until `to` has received `n` messages (and says what it has when it has not). */
const waitForMail = (to: string, n: number) =>
  waitFor(`${n} message(s) to ${to}`, () => received(to).length >= n, { describe: () => sink.received.map((m) => m.to[0]) });

/** No message is queued or being sent: whatever was queued before has been delivered. */
const queueEmpty = () =>
  waitFor('an empty queue', async () => !(await db('deliveries').whereIn('status', ['queued', 'sending']).first('id')));

let canaries = 0;

/**
 * A custom automation with an instant email to one new contact, set live and waited for:
 * once it is delivered and the queue is empty, the engine has been round since everything
 * done before this call, so what it did not send by then, it held back.
 */
async function canary(): Promise<void> {
  canaries += 1;
  const list = await makeContactType(db, a, 'Canary');
  const to = `canary${canaries}@example.com`;
  await makeContacts(db, a, list, [{ email: to }]);
  const utr = await automation('custom', `contacts_${list}`);
  await addEmail(utr, 'Canary', 'instantly', 1);
  expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
  await waitForMail(to, 1);
  await queueEmpty();
}

describe('a welcome automation', () => {
  let utr: string;
  let list: number;

  beforeAll(async () => {
    list = await makeContactType(db, a, 'Signups');
    await makeContacts(db, a, list, [{ email: 'old@example.com', first_name: 'Old' }]);
    utr = await automation('welcome', `contacts_${list}`);
    await addEmail(utr, 'Welcome', 'instantly', 1);
    await addEmail(utr, 'Day two', 'days', 1);
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`), 'Automation has been set live');
    // The first entry scan has run once the automation records it.
    await waitFor('the first entry scan', async () => (await db('automations').where({ utr }).first('entry_scanned_at')).entry_scanned_at);
    await canary();
  });

  it('does not take the contacts that were already on the list at go-live', async () => {
    expect(received('old@example.com')).toHaveLength(0);
    expect(await entered(utr)).toEqual([]);
  });

  it('sends the instant email to a contact added after go-live, and schedules the next a day later', async () => {
    const res = await api(app, a).form('/contacts/add', { contact_type_id: list, email: 'new@example.com', first_name: 'Nina', country: (await db('countries').first('id')).id });
    expectSuccess(res);
    // The entry scan runs at most every 2 s per automation: within a few seconds, then.
    await waitForMail('new@example.com', 1);
    await waitFor('the welcome email to be counted', async () =>
      (await api(app, a).get(`/automations/details?utr=${utr}`)).body.message.automation.total_delivered === 1,
    );
    const mails = received('new@example.com');
    expect(mails).toHaveLength(1);
    expect(mails[0].raw).toMatch(/Subject: Welcome/);
    const [c] = await entered(utr);
    const [, second] = await schedules(utr);
    expect(c).toMatchObject({ email: 'new@example.com', state: 'active', next_email_utr: second.utr });
    const due = new Date(c.next_due_at!).getTime();
    expect(due - Date.now()).toBeGreaterThan(86_400_000 - 60_000);
    expect(due - Date.now()).toBeLessThan(86_400_000 + 60_000);
    const details = (await api(app, a).get(`/automations/details?utr=${utr}`)).body.message.automation;
    expect(details).toMatchObject({ status: 1, total_triggered: 1, total_delivered: 1 });
  });

  it('pause holds a due email; set live releases it; then the contact is finished', async () => {
    expectSuccess(await api(app, a).get(`/automations/pause?utr=${utr}`), 'Automation Paused Successfully');
    await fastForward(utr);
    await canary();
    expect(received('new@example.com')).toHaveLength(1);
    expect((await api(app, a).get(`/automations/details?utr=${utr}`)).body.message.automation.status).toBe(2);
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    await waitForMail('new@example.com', 2);
    const mails = received('new@example.com');
    expect(mails[1].raw).toMatch(/Subject: Day two/);
    await waitFor('the contact to finish', async () => (await entered(utr))[0]?.state === 'finished');
    expect(await entered(utr)).toEqual([expect.objectContaining({ state: 'finished', next_email_utr: null, next_due_at: null })]);
    // Never the same step twice, whatever happens to the progress rows.
    await db('automation_contacts').where({ email: 'new@example.com' }).update({ state: 'active', next_schedule_id: db.raw('(SELECT min(id) FROM automation_schedules s WHERE s.automation_id = automation_contacts.automation_id AND s.user_id = automation_contacts.user_id)'), next_due_at: db.fn.now() });
    // The engine handles the replayed step (moving the contact on to the day-two email again)…
    await waitFor('the replayed step to be handled', async () => {
      const [c] = await entered(utr);
      return c?.next_due_at && new Date(c.next_due_at).getTime() > Date.now() + 3600_000;
    });
    // …without a second welcome: the recipient row of that email and address already exists.
    await canary();
    expect(received('new@example.com')).toHaveLength(2);
  });

  it('each email counts what the engine queued and what its messages did (GET /reports/automation)', async () => {
    const report = async () => (await api(app, a).get(`/reports/automation?utr=${utr}`)).body.message.emails as Array<{ subject: string; triggered: number; delivered: number }>;
    await waitFor('both emails counted delivered', async () => (await report()).every((e) => e.delivered === 1));
    // The replayed step queued nothing new, so nothing more is counted.
    expect((await report()).map((e) => [e.subject, e.triggered, e.delivered])).toEqual([
      ['Welcome', 1, 1],
      ['Day two', 1, 1],
    ]);
    const { id } = await db('automations').where({ utr }).first('id');
    // The automation's hours count the same (the rollup the overview adds up).
    expect(await readTotals(db, a.id, { owner: { kind: 'automation', id } })).toMatchObject({ triggered: 2, delivered: 2 });
  });
});

describe('a custom automation', () => {
  let utr: string;
  let list: number;

  beforeAll(async () => {
    list = await makeContactType(db, a, 'Customers');
    await makeContacts(db, a, list, [
      { email: 'c1@example.com', first_name: 'One' },
      { email: 'c2@example.com', first_name: 'Two' },
      { email: 'c3@example.com', first_name: 'Three' },
    ]);
    utr = await automation('custom', `contacts_${list}`, { exit_criteria: 1 });
    await addEmail(utr, 'First', 'instantly', 1);
    await addEmail(utr, 'Second', 'hours', 2);
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    for (const e of ['c1@example.com', 'c2@example.com', 'c3@example.com']) await waitForMail(e, 1);
  });

  it('takes every member at go-live', async () => {
    for (const e of ['c1@example.com', 'c2@example.com', 'c3@example.com']) expect(received(e)).toHaveLength(1);
    const list = await entered(utr);
    expect(list.map((c) => c.state)).toEqual(['active', 'active', 'active']);
    const due = new Date(list[0].next_due_at!).getTime() - Date.now();
    expect(due).toBeGreaterThan(2 * 3600_000 - 60_000);
  });

  it('stops for a contact who unsubscribed (through the email’s page) and one removed from the list', async () => {
    const mail = received('c1@example.com')[0];
    const token = /unsubscribe\/([a-f0-9]{56})/.exec(mail.raw)![1];
    expect((await request(app).post(`/unsubscribe/${token}`).type('form').send('List-Unsubscribe=One-Click')).status).toBe(200);
    const c2 = await db('contacts').where({ email: 'c2@example.com', contact_type_id: list }).first('id');
    expectSuccess(await api(app, a).delete(`/contacts/delete?contact_id=${c2.id}`));
    // c2 leaves at the next entry scan (at most every 2 s per automation), before its step is due.
    await waitFor('c2 to leave the automation', async () => (await entered(utr)).find((c) => c.email === 'c2@example.com')?.state === 'exited', {
      describe: () => entered(utr),
    });
    await fastForward(utr);
    await waitForMail('c3@example.com', 2);
    await canary();
    expect(received('c1@example.com')).toHaveLength(1);
    expect(received('c2@example.com')).toHaveLength(1);
    expect(received('c3@example.com')).toHaveLength(2);
    const states = Object.fromEntries((await entered(utr)).map((c) => [c.email, [c.state, c.exit_reason]]));
    expect(states).toEqual({
      'c1@example.com': ['exited', 'unsubscribed'],
      'c2@example.com': ['exited', 'removed from target'],
      'c3@example.com': ['finished', null],
    });
    const details = (await api(app, a).get(`/automations/details?utr=${utr}`)).body.message.automation;
    expect(details).toMatchObject({ total_triggered: 4, total_delivered: 4, total_unsubscribe: 1 });
  });

  it('delete stops entered contacts and cancels queued emails', async () => {
    const utr2 = await automation('custom', `contacts_${list}`);
    await addEmail(utr2, 'Only', 'hours', 5);
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr2}`));
    const { id } = await db('automations').where({ utr: utr2 }).first('id');
    await waitFor('the members to enter', async () => (await db('automation_contacts').where({ automation_id: id }).count('* as n'))[0].n === 2);
    expectSuccess(await api(app, a).delete(`/automations/delete?utr=${utr2}`));
    const states = await db('automation_contacts').where({ automation_id: id }).distinct().pluck('state');
    expect(states).toEqual(['exited']);
    await db('automation_contacts').where({ automation_id: id }).update({ next_due_at: db.fn.now() });
    const before = sink.received.filter((m) => !m.to[0].startsWith('canary')).length;
    await canary();
    expect(sink.received.filter((m) => !m.to[0].startsWith('canary')).length).toBe(before);
  });
});

describe('a segment target', () => {
  it('enters contacts as they start to match the rules', async () => {
    const list = await makeContactType(db, a, 'Leads');
    await makeContacts(db, a, list, [{ email: 'vip@example.com', city: 'Paris' }, { email: 'other@example.com', city: 'Rome' }]);
    const city = await db('fields').whereNull('user_id').where({ field_name: 'city' }).first('id');
    expectSuccess(
      await api(app, a).form('/segment/save', { segment_name: 'Parisians', contact_type_id: list, select_field: [city.id], select_operator: ['is'], value: ['Paris'] }),
    );
    const seg = await db('segments').where({ user_id: a.id, segment_name: 'Parisians' }).first('id');
    const utr = await automation('custom', `segments_${seg.id}`);
    await addEmail(utr, 'Bonjour', 'instantly', 1);
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    await waitForMail('vip@example.com', 1);
    await canary();
    expect(received('vip@example.com').filter((m) => /Bonjour/.test(m.raw))).toHaveLength(1);
    expect(received('other@example.com')).toHaveLength(0);
    const other = await db('contacts').where({ email: 'other@example.com' }).first('id');
    const gb = await db('countries').first('id');
    expectSuccess(await api(app, a).form('/contacts/update', { contact_id: other.id, contact_type_id: list, email: 'other@example.com', country: gb.id, city: 'Paris' }));
    await waitForMail('other@example.com', 1);
    expect(received('other@example.com').filter((m) => /Bonjour/.test(m.raw))).toHaveLength(1);
  });
});

describe('click tracking in automation emails', () => {
  it('tracks the links of every email; one URL in two emails is one link of the automation', async () => {
    const list = await makeContactType(db, a, 'Readers');
    await makeContacts(db, a, list, [{ email: 'reader@example.com' }]);
    const utr = await automation('custom', `contacts_${list}`);
    for (const [subject, waiting_type, links] of [
      ['Start', 'instantly', ['https://docs.example/start']],
      ['Next', 'hours', ['https://docs.example/start', 'https://docs.example/next']],
    ] as const) {
      const res = await api(app, a).form('/automations/schedule/create', {
        utr,
        sender_id: sender,
        subject,
        waiting_period: 1,
        waiting_type,
        template_id: 3,
        preview_img: 'template-welcome.png',
        template_html: `<html><body>${links.map((l) => `<a href="${l}">${l}</a>`).join(' ')}</body></html>`,
      });
      expectSuccess(res, 'Schedule Added');
    }
    expectSuccess(await api(app, a).get(`/automations/set-live?utr=${utr}`));
    await waitForMail('reader@example.com', 1);
    await fastForward(utr);
    await waitForMail('reader@example.com', 2);
    const mails = (await sink.byRecipient()).get('reader@example.com')!;
    mails.sort((x, y) => String(x.subject).localeCompare(String(y.subject)) * -1);
    const clickLinks = mails.map((m) => [...String(m.html).matchAll(/http:\/\/herald\.test(\/t\/click\/[0-9a-f]{68})/g)].map((x) => x[1]));
    expect(clickLinks.map((l) => new Set(l).size)).toEqual([1, 2]);
    config.clickBotWindowSeconds = 0;
    try {
      for (const path of [clickLinks[0][0], ...new Set(clickLinks[1])]) expect((await request(app).get(path)).status).toBe(302);
    } finally {
      config.clickBotWindowSeconds = 10;
    }
    const stats = (await api(app, a).get(`/automations/stats?utr=${utr}`)).body.message;
    // Unique as unique opens are: per message (each email of the automation is one).
    expect(stats).toMatchObject({ total_clicks: 3, unique_clicks: 2, total_delivered: 2 });
    expect(stats.links).toEqual([
      { url: 'https://docs.example/start', unique_clicks: 2, total_clicks: 2 },
      { url: 'https://docs.example/next', unique_clicks: 1, total_clicks: 1 },
    ]);
  });
});
