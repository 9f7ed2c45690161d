import type { AddressObject, ParsedMail } from 'mailparser';
import { simpleParser } from 'mailparser';
import { smtpMailer, type Mailer } from '../../src/mail/mailer';
import { Worker } from '../../src/worker/worker';
import { createLogger } from '../../src/logger';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { startSmtpSink, type Received, type SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { holdDatabaseLock, type HeldLock } from './lib/db-lock';

/**
 * CR/LF in any value that reaches a mail header — a single send's subject, a sender's name,
 * its reply-to address, a contact's first name or custom value in a subject placeholder, an
 * automation email's subject, a notification recipient's name — is refused at validation or
 * stripped: real messages go through the delivery worker to a real SMTP server, and their
 * raw bytes carry no injected header and no extra recipient.
 *
 * The worker claims every due message of its database, so this file runs on the isolated
 * `fuzz` database while holding its lock (the fuzzer never runs at the same time), and first
 * sets aside whatever other accounts left due there.
 */
const { app, db, config, mailer: systemMailer } = setupApp({ RETRY_BASE_MS: '0', MAX_ATTEMPTS: '2', WORKER_POLL_MS: '50' }, 'fuzz');

const INJECT = '\r\nBcc: bcc-victim@evil.test\r\nX-Injected: yes';
/** Every other line break a client could try: bare LF, bare CR, Unicode separators, NEL, NUL. */
const VARIANTS = ['\nX-Injected: lf', '\rX-Injected: cr', '\u2028X-Injected: ls', '\u2029X-Injected: ps', '\u0085X-Injected: nel', '\r\n\tX-Injected: folded', '\r\n\r\nbody-injected'];
// Every message Herald sends is DKIM-signed (docs/decisions.md, "DKIM and sender DNS").
const EXPECTED_HEADERS = ['dkim-signature', 'from', 'to', 'reply-to', 'subject', 'date', 'message-id', 'mime-version', 'list-unsubscribe', 'list-unsubscribe-post', 'content-type'];
/** Herald's own mail (verification, notifications). */
const SYSTEM_HEADERS = ['dkim-signature', 'from', 'to', 'subject', 'date', 'message-id', 'mime-version', 'auto-submitted', 'content-type'];
const OWNER = 'owner@example.com';
/**
 * The campaign messages, by envelope sender: the worker also mails the notices other test files
 * of this database queued (their accounts' notification recipients), which are not this file's.
 */
const campaign = (m: { from: string }) => m.from === 'news@acme.test';

let lock: HeldLock;
let sink: SmtpSink;
let mailer: Mailer;
let worker: Worker;
let a: TestAccount;
/** What the SMTP server received: the campaign messages, and the notifications to the owner. */
let mails: Array<{ raw: Received; parsed: ParsedMail }>;
let notices: Array<{ raw: Received; parsed: ParsedMail }>;
const refusals: Record<string, { field: string; status: number; errors: Record<string, unknown> }> = {};

/** Every address of a parsed header (mailparser gives one object or a list of them). */
function addresses(h: AddressObject | AddressObject[] | undefined) {
  return (Array.isArray(h) ? h : h ? [h] : []).flatMap((o) => o.value);
}

/** The header block of a raw message, unfolded, as [name, value] pairs. */
function headersOf(raw: string): Array<[string, string]> {
  const head = raw.split(/\r\n\r\n/)[0];
  const lines: string[] = [];
  for (const line of head.split('\r\n')) {
    if (/^[ \t]/.test(line) && lines.length) lines[lines.length - 1] += line;
    else lines.push(line);
  }
  return lines.map((l) => {
    const i = l.indexOf(':');
    return [l.slice(0, i).toLowerCase(), l.slice(i + 1).trim()];
  });
}

/** No header (anywhere in the raw message) was smuggled in, and nothing but CRLF ends a line. */
function expectClean(raw: string, expectedNames: string[]): void {
  const names = headersOf(raw).map(([n]) => n);
  expect(names.sort()).toEqual([...expectedNames].sort());
  expect(raw).not.toMatch(/^(bcc|cc|x-injected|body-injected)\b/im);
  // Bare CR or LF could end a header line for a lenient server.
  expect(raw.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
  // Every line of the header block is a header or a folded continuation.
  for (const line of raw.split(/\r\n\r\n/)[0].split('\r\n')) expect(line).toMatch(/^([A-Za-z0-9-]+: |[ \t])/);
}

beforeAll(async () => {
  lock = await holdDatabaseLock(config.databaseUrl!, 'fuzz-database');
  // What other files left due in this database is not ours to send.
  await db('single_sends').whereNull('deleted_at').whereIn('status', [0, 1]).update({ deleted_at: db.fn.now() });
  await db('automations').where({ status: 1 }).update({ status: 2 });
  await db('deliveries').where({ status: 'queued' }).update({ status: 'cancelled' });

  sink = await startSmtpSink();
  mailer = smtpMailer(sink.url, { poolSize: 1 });
  worker = new Worker({ config, db, logger: createLogger('silent'), mailer });
  a = await makeAccount(db, 'Headers');
  const http = api(app, a);
  const gb = (await db('countries').where({ iso_code: 'GB' }).first('id')) as { id: number };
  const ok = (res: { status: number; body: { status: string } }, what: string) => {
    if (res.status !== 200) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  };

  // Refused at validation: addresses with a line break.
  const senderFields = {
    from_name: 'Acme',
    from_email: 'news@acme.test',
    reply_to_email: 'reply@acme.test',
    country_id: gb.id,
    company_address: '1 High Street',
    nickname: 'acme',
  };
  for (const [field, value] of [
    ['reply_to_email', `reply@acme.test${INJECT}`],
    ['reply_to_email', 'reply@acme.test\nBcc: x@evil.test'],
    ['from_email', `news@acme.test${INJECT}`],
    ['from_email', 'news@acme.test\r\nX-Injected: yes'],
  ]) {
    const res = await http.form('/sender/save', { ...senderFields, [field]: value });
    refusals[`sender ${field} ${JSON.stringify(value)}`] = { field, status: res.status, errors: res.body.errors };
  }
  const badContact = await http.form('/contacts/add', { contact_type_id: 1, email: `eve@example.com${INJECT}`, country: gb.id });
  refusals['contact email'] = { field: 'email', status: badContact.status, errors: badContact.body.errors };
  const badOwner = await http.form('/notification-recipient/save', { email_address: `n@example.com${INJECT}`, email_owner: 'N' });
  refusals['notification address'] = { field: 'email_address', status: badOwner.status, errors: badOwner.body.errors };

  // Accepted, and must be stripped when written into a header.
  ok(await http.form('/notification-recipient/save', { email_address: OWNER, email_owner: `Owner${INJECT}` }), 'notification recipient');
  systemMailer.clear();
  ok(await http.form('/sender/save', { ...senderFields, from_name: `Acme News${INJECT}${VARIANTS.join('')}` }), 'sender');
  const sender = (await db('senders').where({ user_id: a.id }).orderBy('id', 'desc').first('id')).id as number;
  await db('senders').where({ id: sender }).update({ is_verified: 1 });

  ok(await http.form('/custom-fields/save', { field_name: 'plan', field_type: 'text' }), 'custom field');
  ok(await http.form('/contacts-type/add', { name: 'Header list' }), 'contact type');
  const list = (await db('contact_types').where({ user_id: a.id }).first('id')).id as number;
  ok(await http.form('/contacts/add', { contact_type_id: list, email: 'clean@example.com', first_name: 'Clean', country: gb.id, 'custom_field[plan]': 'gold' }), 'clean contact');
  ok(
    await http.form('/contacts/add', {
      contact_type_id: list,
      email: 'eve@example.com',
      first_name: `Eve${INJECT}`,
      last_name: VARIANTS.join(''),
      country: gb.id,
      'custom_field[plan]': `gold${VARIANTS.join('')}${INJECT}`,
    }),
    'hostile contact',
  );
  ok(await http.form('/unsubscribes-groups/save', { group_name: 'News', description: 'News', is_display: 1 }), 'group');
  const group = (await db('unsubscribe_groups').where({ user_id: a.id }).first('id')).id as number;

  ok(
    await http.form('/single/send/create', {
      template_id: 1,
      template_html: '<html><body><p>Hi ((first_name)) ((last_name)), plan ((plan))</p></body></html>',
      sender_id: sender,
      unsubscribe_group_id: group,
      single_send_name: `Campaign${INJECT}`,
      subject: `News for ((first_name)) ((last_name)) on ((plan))${INJECT}${VARIANTS.join('')} end`,
      preheader: `Pre${INJECT}`,
      recipient_id: [`contacts_${list}`],
      schedule_type: 0,
    }),
    'single send',
  );

  const auto = await http.form('/automations/create', {
    type: 'custom',
    automation_for: `contacts_${list}`,
    automation_name: `Drip${INJECT}`,
    unsubscribe_group_id: group,
  });
  ok(auto, 'automation');
  ok(
    await http.form('/automations/schedule/create', {
      utr: auto.body.message.utr,
      sender_id: sender,
      subject: `Step for ((first_name))${INJECT}`,
      waiting_period: 1,
      waiting_type: 'instantly',
      template_id: 1,
      preview_img: 'custom.png',
      template_html: '<html><body><p>Step ((first_name))</p></body></html>',
    }),
    'automation email',
  );
  ok(await http.get(`/automations/set-live?utr=${auto.body.message.utr}`), 'set live');

  // The worker as production runs it, until the send, the automation email and the three
  // notices are out (four campaign messages; to the owner: send started and completed, automation live)
  // and nothing is left queued.
  worker.start();
  try {
    await waitFor(
      'the campaign messages and notices',
      async () =>
        sink.received.filter(campaign).length >= 4 &&
        sink.received.filter((m) => m.to[0] === OWNER).length >= 3 &&
        !(await db('deliveries').where({ user_id: a.id }).whereIn('status', ['queued', 'sending']).first('id')),
      { timeoutMs: 60_000, describe: () => sink.received.map((m) => m.to) },
    );
  } finally {
    await worker.stop();
  }
  const all = await Promise.all(sink.received.map(async (raw) => ({ raw, parsed: await simpleParser(raw.raw) })));
  mails = all.filter((m) => campaign(m.raw));
  notices = all.filter((m) => m.raw.to[0] === OWNER);
}, 180_000);

afterAll(async () => {
  await mailer?.close();
  await sink?.close();
  await lock?.release();
});

describe('values with line breaks in addresses are refused at validation', () => {
  it('sender from/reply-to, contact email, notification address: VAL, nothing saved', async () => {
    for (const [what, r] of Object.entries(refusals)) {
      expect({ what, status: r.status, field: r.errors[r.field] }).toEqual({ what, status: 422, field: [expect.stringMatching(/must be a valid email address/)] });
    }
    expect(await db('senders').where({ user_id: a.id }).count<{ n: number }[]>({ n: '*' }).first()).toEqual({ n: 1 });
  });
});

describe('values with line breaks that reach headers are stripped', () => {
  it('every message went out: the single send and the automation email, to both contacts, to no one else', () => {
    const to = mails.map((m) => m.raw.to.join(',')).sort();
    expect(to).toEqual(['clean@example.com', 'clean@example.com', 'eve@example.com', 'eve@example.com']);
    for (const m of [...mails, ...notices]) expect(m.raw.to).toHaveLength(1);
    // The single send's start and end and the automation going live were notified to the owner, by the worker.
    expect(notices.map((n) => String(n.parsed.subject)).sort()).toEqual([
      expect.stringMatching(/^\[Herald\] Automation “Drip Bcc: bcc-victim@evil\.test X-Injected: yes” is live/),
      expect.stringMatching(/^\[Herald\] Single send “Campaign Bcc: bcc-victim@evil\.test X-Injected: yes” completed/),
      expect.stringMatching(/^\[Herald\] Single send “Campaign Bcc: bcc-victim@evil\.test X-Injected: yes” started/),
    ]);
  });

  it('no message carries an injected header, a bare CR/LF, or a header line that is not a header', () => {
    for (const m of mails) expectClean(m.raw.raw, EXPECTED_HEADERS);
    for (const m of notices) expectClean(m.raw.raw, SYSTEM_HEADERS);
    for (const m of notices) expect(addresses(m.parsed.to)[0].name).toMatch(/^Owner Bcc: bcc-victim@evil\.test X-Injected: yes$/);
  });

  it('the values are still there, on one line', () => {
    const eve = mails.filter((m) => m.raw.to[0] === 'eve@example.com');
    const subjects = eve.map((m) => String(m.parsed.subject)).sort();
    expect(subjects[0]).toMatch(/^News for Eve Bcc: bcc-victim@evil\.test X-Injected: yes/);
    expect(subjects[0]).toMatch(/ end$/);
    expect(subjects[1]).toMatch(/^Step for Eve Bcc: bcc-victim@evil\.test X-Injected: yes/);
    for (const m of mails) {
      expect(String(m.parsed.subject)).not.toMatch(/[\r\n\u2028\u2029]/);
      expect(m.parsed.from!.value).toHaveLength(1);
      expect(m.parsed.from!.value[0].address).toBe('news@acme.test');
      expect(m.parsed.from!.value[0].name).toMatch(/^Acme News Bcc: bcc-victim@evil\.test X-Injected: yes/);
      expect(addresses(m.parsed.replyTo).map((v) => v.address)).toEqual(['reply@acme.test']);
      expect(addresses(m.parsed.to)).toHaveLength(1);
      expect(m.parsed.cc).toBeUndefined();
      expect(m.parsed.bcc).toBeUndefined();
    }
    // The clean contact's message is the control: same headers, its own values.
    const clean = mails.find((m) => m.raw.to[0] === 'clean@example.com' && String(m.parsed.subject).startsWith('News'))!;
    expect(String(clean.parsed.subject)).toMatch(/^News for Clean {2}on gold Bcc: /);
  });

  it('Herald’s own mail too: the sender verification and the notification of the automation going live', async () => {
    const system = await Promise.all(systemMailer.sent.map(async (m) => ({ m, parsed: await simpleParser(m.raw) })));
    const verify = system.find((s) => s.m.to === 'news@acme.test');
    // The notice is mailed by the worker (through the SMTP server), not in the set-live request.
    const live = notices.find((n) => /live/.test(String(n.parsed.subject)));
    const notice = live && { m: live.raw, parsed: live.parsed };
    expect(verify).toBeDefined();
    expect(notice).toBeDefined();
    for (const { m, parsed } of [verify!, notice!]) {
      expectClean(m.raw, SYSTEM_HEADERS);
      expect(addresses(parsed.to)).toHaveLength(1);
      expect(String(parsed.subject)).not.toMatch(/[\r\n]/);
    }
    expect(addresses(notice!.parsed.to)[0].name).toMatch(/^Owner Bcc: /);
    expect(String(notice!.parsed.subject)).toMatch(/Drip Bcc: bcc-victim@evil\.test X-Injected: yes/);
    expect(addresses(verify!.parsed.to)[0].name).toMatch(/^Acme News Bcc: /);
  });
});
