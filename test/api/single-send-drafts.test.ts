import { randomUUID } from 'node:crypto';
import { singleSendRecord } from '../../src/resources/single-sends/single-sends.schemas';
import { SendStatus } from '../../src/states';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF2, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType, makeContacts, makeGroup, makeSender, makeSendRow } from '../helpers/fixtures';

/**
 * Drafts of single sends (create/update with draft=1), scheduling and unscheduling them, and the
 * preview (issue 34). No worker here: every ready send made is scheduled in the future, and the
 * file's sends are soft-deleted at its end, so the worker databases cloned from this one never
 * start them.
 */
afterAll(async () => {
  await db('single_sends').whereIn('user_id', [a.id, b.id]).update({ deleted_at: db.fn.now() });
});
const { app, db } = setupApp();

const HTML = '<html><body><h1>Hello ((first_name))</h1><p><a href="https://example.com/offer">Offer</a></p></body></html>';

interface Refs {
  sender: number;
  unverified: number;
  group: number;
  list: number;
  contact: number;
}

let a: TestAccount;
let b: TestAccount;
const A = {} as Refs;
const B = {} as Refs;

async function refsFor(account: TestAccount, into: Refs): Promise<void> {
  into.sender = await makeSender(db, account);
  into.unverified = await makeSender(db, account, false);
  into.group = await makeGroup(db, account, 'Newsletter');
  into.list = await makeContactType(db, account);
  [into.contact] = await makeContacts(db, account, into.list, [{ email: `ada${account.id}@example.com`, first_name: 'Ada', last_name: 'Lovelace' }]);
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  await refsFor(a, A);
  await refsFor(b, B);
});

/** A date and time `days` from now, as the spec's schedule fields take it. */
function ahead(days: number): { date: string; time: string; sendAt: string } {
  const iso = new Date(Date.now() + days * 86400_000).toISOString();
  return { date: iso.slice(0, 10), time: iso.slice(11, 19), sendAt: `${iso.slice(0, 10)} ${iso.slice(11, 19)}` };
}

/** Every field a send needs, scheduled a week ahead (never due while this file runs). */
function complete(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const at = ahead(7);
  return {
    template_id: 1,
    template_html: HTML,
    sender_id: A.sender,
    unsubscribe_group_id: A.group,
    single_send_name: 'Launch',
    subject: 'News for ((first_name))',
    preheader: 'This month',
    recipient_id: [`contacts_${A.list}`],
    schedule_type: 1,
    schedule_date: at.date,
    schedule_time: at.time,
    ...overrides,
  };
}

async function draft(fields: Record<string, unknown> = {}, account: TestAccount = a): Promise<string> {
  const res = await api(app, account).form('/single/send/create', { single_send_name: 'Draft', draft: 1, ...fields });
  expectSuccess(res);
  return res.body.message.utr as string;
}

async function details(utr: string, account: TestAccount = a) {
  const res = await api(app, account).get(`/single-send/details?utr=${utr}`);
  expectSuccess(res);
  return expectShape(singleSendRecord, res.body.message.singleSend[0]);
}

describe('POST /single/send/create with draft=1', () => {
  it('stores a draft (status 0) with only its name; the record shows what is missing as null or empty', async () => {
    const utr = await draft({ single_send_name: 'Only a name' });
    const record = await details(utr);
    expect(record).toMatchObject({
      single_send_name: 'Only a name',
      status: SendStatus.Draft,
      template_id: null,
      sender_id: null,
      unsubscribe_group_id: null,
      subject: '',
      preheader: '',
      recipient_id: [],
      schedule_type: 0,
      schedule_date: '0000-00-00',
      sent_at: null,
    });
    // Never due: the worker's claim cannot start it.
    expect((await db('single_sends').where({ utr }).first('due_at')).due_at).toBeNull();
  });

  it('keeps every field given, the sender’s details copied (an unverified sender is fine for a draft)', async () => {
    const utr = await draft({ subject: 'Hi ((first_name))', sender_id: A.unverified, recipient_id: [`contacts_${A.list}`], template_id: 1, template_html: HTML });
    expect(await details(utr)).toMatchObject({
      status: 0,
      subject: 'Hi ((first_name))',
      sender_id: A.unverified,
      from_sender: 'news@acme.test',
      template_html: HTML,
      recipient_id: [{ id: String(A.list), table: 'contacts_' }],
    });
  });

  it('still requires the name and checks every field that is given, saving nothing', async () => {
    const before = await db('single_sends').where({ user_id: a.id }).count<{ count: string }[]>('* as count');
    expectVal(await api(app, a).form('/single/send/create', { draft: 1 }), { single_send_name: ['The single send name field is required.'] });
    const res = await api(app, a).form('/single/send/create', {
      draft: 1,
      single_send_name: 'x',
      template_id: 'abc',
      subject: 'y'.repeat(256),
      recipient_id: ['lists_1'],
      schedule_type: 1,
      schedule_date: '2026-13-45',
      schedule_time: '10:00',
    });
    expectVal(res, {
      template_id: ['The template id must be an integer.'],
      subject: ['The subject must not be greater than 255 characters.'],
    });
    expect(Object.keys(res.body.errors).sort()).toEqual(['subject', 'template_id']);
    expectVal(await api(app, a).form('/single/send/create', { draft: 1, single_send_name: 'x', recipient_id: ['lists_1'], schedule_type: 1, schedule_date: '2026-02-30', schedule_time: '10:00' }), {
      'recipient_id.0': ['The recipient id.0 must be contacts_<id> or segments_<id>.'],
      schedule_date: ['The schedule date is not a valid date.'],
    });
    // References must name the account's records (another account's sender, group; an unknown template).
    expectVal(await api(app, a).form('/single/send/create', { draft: 1, single_send_name: 'x', template_id: 999_999, sender_id: B.sender, unsubscribe_group_id: B.group }), {
      template_id: ['The selected template id is invalid.'],
      sender_id: ['The selected sender id is invalid.'],
      unsubscribe_group_id: ['The selected unsubscribe group id is invalid.'],
    });
    // A body that is no object is a validation failure like any other, never a 500.
    for (const body of [[1, 2], 'draft', null]) {
      const r = await api(app, a).json('/single/send/create', body);
      expect({ status: r.status, failed: r.body.status }).toEqual({ status: 422, failed: 'failed' });
    }
    expect(await db('single_sends').where({ user_id: a.id }).count<{ count: string }[]>('* as count')).toEqual(before);
  });

  it('without draft=1 requires every field, as the spec’s create does (draft=0 alike)', async () => {
    for (const extra of [{}, { draft: 0 }]) {
      expectVal(await api(app, a).form('/single/send/create', { single_send_name: 'x', ...extra }), {
        template_id: ['The template id field is required.'],
        sender_id: ['The sender id field is required.'],
        unsubscribe_group_id: ['The unsubscribe group id field is required.'],
        subject: ['The subject field is required.'],
        preheader: ['The preheader field is required.'],
        recipient_id: ['The recipient id field is required.'],
        schedule_type: ['The schedule type field is required.'],
      });
    }
    // A field's type error and the missing fields are reported together.
    const res = await api(app, a).form('/single/send/create', { template_id: 'abc' });
    expect(res.body.errors.template_id).toEqual(['The template id must be an integer.']);
    expect(res.body.errors.single_send_name).toEqual(['The single send name field is required.']);
  });
});

describe('POST /single/send/update with draft=1', () => {
  it('keeps a draft a draft, checking only the name', async () => {
    const utr = await draft();
    expectSuccess(await api(app, a).form('/single/send/update', { utr, draft: 1, single_send_name: 'Renamed', subject: 'Later' }), { utr });
    expect(await details(utr)).toMatchObject({ status: 0, single_send_name: 'Renamed', subject: 'Later' });
  });

  it('takes a ready send that has not started back to a draft; refused once it has started', async () => {
    const res = await api(app, a).form('/single/send/create', complete());
    expectSuccess(res);
    const utr = res.body.message.utr as string;
    expect((await details(utr)).status).toBe(1);
    expectSuccess(await api(app, a).form('/single/send/update', { utr, draft: 1, single_send_name: 'On hold' }));
    expect(await details(utr)).toMatchObject({ status: 0, single_send_name: 'On hold' });
    const running = await makeSendRow(db, a, { name: 'Running', status: SendStatus.Running });
    const r = await api(app, a).form('/single/send/update', { utr: running.utr, draft: 1, single_send_name: 'x' });
    expect({ status: r.status, body: r.body }).toEqual({ status: 422, body: { status: 'failed', errors: 'Single send can not be updated once sending has started' } });
  });

  it('without draft=1 makes a draft ready, as the spec’s update does', async () => {
    const utr = await draft();
    expectSuccess(await api(app, a).form('/single/send/update', { utr, ...complete() }));
    expect((await details(utr)).status).toBe(1);
  });
});

describe('POST /single/send/schedule', () => {
  it('answers create’s own messages for what a draft lacks, and leaves it a draft', async () => {
    const utr = await draft({ subject: 'Only a subject' });
    expectVal(await api(app, a).form('/single/send/schedule', { utr }), {
      template_id: ['The template id field is required.'],
      sender_id: ['The sender id field is required.'],
      unsubscribe_group_id: ['The unsubscribe group id field is required.'],
      preheader: ['The preheader field is required.'],
      recipient_id: ['The recipient id field is required.'],
    });
    expect((await details(utr)).status).toBe(0);
    // The database checks too: an unverified sender is refused as create refuses it.
    const unverified = await draft(complete({ draft: 1, sender_id: A.unverified }));
    expectVal(await api(app, a).form('/single/send/schedule', { utr: unverified }), { sender_id: ['The selected sender id is not verified.'] });
    expect((await details(unverified)).status).toBe(0);
  });

  it('moves a complete draft to ready at its own schedule, or at send_at', async () => {
    const fields = complete({ draft: 1 });
    const utr = await draft(fields);
    expectSuccess(await api(app, a).form('/single/send/schedule', { utr }), { utr });
    const ready = await details(utr);
    expect(ready).toMatchObject({ status: 1, schedule_type: 1, schedule_date: fields.schedule_date, schedule_time: fields.schedule_time, from_sender: 'news@acme.test' });
    const due = (await db('single_sends').where({ utr }).first('due_at')).due_at;
    expect(new Date(due).toISOString().slice(0, 19)).toBe(`${fields.schedule_date}T${fields.schedule_time}`);

    const other = await draft(complete({ draft: 1, schedule_type: 0, schedule_date: undefined, schedule_time: undefined }));
    const at = ahead(3);
    expectSuccess(await api(app, a).form('/single/send/schedule', { utr: other, send_at: at.sendAt }), { utr: other });
    expect(await details(other)).toMatchObject({ status: 1, schedule_type: 1, schedule_date: at.date, schedule_time: at.time });
    // A ready send that has not started may be moved.
    const later = ahead(5);
    expectSuccess(await api(app, a).form('/single/send/schedule', { utr: other, send_at: later.sendAt }));
    expect(await details(other)).toMatchObject({ status: 1, schedule_date: later.date });
  });

  it('answers VAL for a send_at that is malformed or not ahead, and for a send that has started', async () => {
    const utr = await draft(complete({ draft: 1 }));
    expectVal(await api(app, a).form('/single/send/schedule', { utr, send_at: 'tomorrow' }), { send_at: ['The send at does not match the format Y-m-d H:i:s.'] });
    expectVal(await api(app, a).form('/single/send/schedule', { utr, send_at: '2020-01-01 10:00:00' }), { send_at: ['The send at must be a date after now.'] });
    expect((await details(utr)).status).toBe(0);
    for (const status of [SendStatus.Running, SendStatus.Completed]) {
      const row = await makeSendRow(db, a, { name: 'Started', status });
      expectVal(await api(app, a).form('/single/send/schedule', { utr: row.utr }), { utr: ['The single send has already started sending and can not be scheduled again.'] });
    }
  });

  it('answers VAL without utr, NF2 for another account’s or an unknown one, AUTH without keys', async () => {
    const utr = await draft(complete({ draft: 1 }));
    expectVal(await api(app, a).form('/single/send/schedule', {}), { utr: ['The utr field is required.'] });
    expectNF2(await api(app, b).form('/single/send/schedule', { utr }));
    expectNF2(await api(app, a).form('/single/send/schedule', { utr: randomUUID() }));
    expectNF2(await api(app, a).form('/single/send/schedule', { utr: 'garbage' }));
    expectAuthMissing(await api(app).form('/single/send/schedule', { utr }));
    expect((await details(utr)).status).toBe(0);
  });
});

describe('POST /single/send/unschedule', () => {
  it('takes a ready send that has not started back to a draft, never due', async () => {
    const res = await api(app, a).form('/single/send/create', complete());
    const utr = res.body.message.utr as string;
    expectSuccess(await api(app, a).form('/single/send/unschedule', { utr }), { utr });
    expect(await details(utr)).toMatchObject({ status: 0, single_send_name: 'Launch' });
    expect((await db('single_sends').where({ utr }).first('due_at')).due_at).toBeNull();
    // And it can be scheduled again.
    expectSuccess(await api(app, a).form('/single/send/schedule', { utr }));
    expect((await details(utr)).status).toBe(1);
  });

  it('answers VAL for a draft and for a send that has started', async () => {
    expectVal(await api(app, a).form('/single/send/unschedule', { utr: await draft() }), { utr: ['The single send is not scheduled.'] });
    for (const status of [SendStatus.Running, SendStatus.Completed]) {
      const row = await makeSendRow(db, a, { name: 'Started', status });
      expectVal(await api(app, a).form('/single/send/unschedule', { utr: row.utr }), { utr: ['The single send has already started sending and can not be unscheduled.'] });
      expect((await db('single_sends').where({ id: row.id }).first('status')).status).toBe(status);
    }
  });

  it('answers VAL without utr, NF2 for another account’s or an unknown one, AUTH without keys', async () => {
    const res = await api(app, a).form('/single/send/create', complete());
    const utr = res.body.message.utr as string;
    expectVal(await api(app, a).form('/single/send/unschedule', {}), { utr: ['The utr field is required.'] });
    expectNF2(await api(app, b).form('/single/send/unschedule', { utr }));
    expectNF2(await api(app, a).form('/single/send/unschedule', { utr: randomUUID() }));
    expectAuthMissing(await api(app).form('/single/send/unschedule', { utr }));
    expect((await details(utr)).status).toBe(1);
  });
});

describe('GET /single/send/preview', () => {
  const TOKEN = /^[0-9a-f]{56}$/;

  it('shows what a contact gets: placeholders filled, the preheader, tracked links, the unsubscribe link and pixel', async () => {
    const utr = await draft(complete({ draft: 1 }));
    const trackedBefore = await db('tracked_links').where({ user_id: a.id }).count<{ count: string }[]>('* as count');
    const res = await api(app, a).get(`/single/send/preview?utr=${utr}&contact_id=${A.contact}`);
    expectSuccess(res);
    const { subject, html, text } = res.body.message;
    expect(Object.keys(res.body.message)).toEqual(['subject', 'html', 'text']);
    expect(subject).toBe('News for Ada');
    expect(html).toContain('<h1>Hello Ada</h1>');
    expect(html).toContain('This month');
    expect(html).toMatch(/href="http:\/\/herald\.test\/t\/click\/[0-9a-f]{68}"/);
    const unsubscribe = /http:\/\/herald\.test\/unsubscribe\/([0-9a-f]+)/.exec(html);
    expect(unsubscribe?.[1]).toMatch(TOKEN);
    expect(html).toMatch(/src="http:\/\/herald\.test\/t\/open\/[0-9a-f]{56}\.gif"/);
    expect(html).toContain('Acme News');
    expect(text).toContain('Hello Ada');
    // Looking at a draft writes nothing: its links are registered when it is sent.
    expect(await db('tracked_links').where({ user_id: a.id }).count<{ count: string }[]>('* as count')).toEqual(trackedBefore);
  });

  it('fills sample values without contact_id', async () => {
    const utr = await draft(complete({ draft: 1 }));
    const res = await api(app, a).get(`/single/send/preview?utr=${utr}`);
    expectSuccess(res);
    expect(res.body.message.subject).toBe('News for Jane');
    expect(res.body.message.html).toContain('<h1>Hello Jane</h1>');
  });

  it('answers each variation of an A/B send, A first', async () => {
    const res = await api(app, a).form(
      '/single/send/create',
      complete({ draft: 1, ab_test_type: 'subject', ab_variations: undefined, 'ab_variations[0][subject]': 'Other for ((first_name))' }),
    );
    expectSuccess(res);
    const preview = await api(app, a).get(`/single/send/preview?utr=${res.body.message.utr}&contact_id=${A.contact}`);
    expectSuccess(preview);
    const { subject, variations } = preview.body.message;
    expect(subject).toBe('News for Ada');
    expect(variations.map((v: { variation: string; subject: string }) => [v.variation, v.subject])).toEqual([
      ['A', 'News for Ada'],
      ['B', 'Other for Ada'],
    ]);
  });

  it('answers VAL for a draft without a design yet', async () => {
    expectVal(await api(app, a).get(`/single/send/preview?utr=${await draft()}`), { template_id: ['The template id field is required.'] });
  });

  it('answers NF2 for another account’s or an unknown contact and for another account’s send, VAL for a malformed contact_id, AUTH without keys', async () => {
    const utr = await draft(complete({ draft: 1 }));
    expectNF2(await api(app, a).get(`/single/send/preview?utr=${utr}&contact_id=${B.contact}`));
    expectNF2(await api(app, a).get(`/single/send/preview?utr=${utr}&contact_id=2147483647`));
    expectVal(await api(app, a).get(`/single/send/preview?utr=${utr}&contact_id=abc`), { contact_id: ['The contact id must be an integer.'] });
    expectNF2(await api(app, b).get(`/single/send/preview?utr=${utr}`));
    expectNF2(await api(app, a).get('/single/send/preview'));
    expectAuthMissing(await api(app).get(`/single/send/preview?utr=${utr}`));
  });
});
