import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { classify, parseReport, type InboundReport, type ReportRecipient } from '../../src/bounces/parse';

/**
 * The parser of returned mail (src/bounces/parse.ts) over the fixture corpus in
 * test/fixtures/bounces (README.md there says what each one models): every fixture's kind,
 * recipients, classification, original Message-ID and envelope addresses, then robustness.
 */
const DIR = path.join(__dirname, '../fixtures/bounces');
const fixture = (name: string) => readFileSync(path.join(DIR, name));

/** Herald's recipient tokens in the fixtures: the Message-ID is `<token@herald.example>`, the VERP address `bounce+token@herald.example`. */
const TOKEN = {
  postfixHard: '0000000000000001000000027715c03b24ae7d5a807802615b6340cd',
  gmailHard: '0000000000000002000000032d77e165e1c211ff4e23d534c6ef17ac',
  gmailQuota: '0000000000000003000000017879abb918670c187dc12f18f5db04a3',
  microsoft365: '00000000000000040000000299eff5d300c80db93304da616b6bcbf0',
  outlookFull: '0000000000000005000000039dc26cf5dac7ec7a2384ff013f6631cf',
  exchange: '00000000000000060000000103ce893e96c931fd34fa5f4a8243c939',
  yahoo: '00000000000000070000000215ef562d12be53389593c4220be93384',
  postfixDelayed: '000000000000000800000003d2ef456e677a23f672d55eff33f1a131',
  postfixSoft: '000000000000000900000001df8b6f0185adb93ff50a22fe238909ab',
  exim: '000000000000000a0000000202b50001424b0fe7f4be8238f56267cd',
  eximDelayed: '000000000000000b00000003d5374471127b6980aa9746365171fa8f',
  sendmail: '000000000000000c000000016ccc3ed14cd6456175e9e86cd1b58f02',
  sendmailOld: '000000000000000d000000023b865b8334b2e4010c07f656731f5537',
  qmail: '000000000000000e0000000348c602530d895fdaa1ee4184a738abb0',
  ses: '000000000000000f000000010177f28b7e8a3ae742436131e38a7afe',
  arfYahoo: '0000000000000010000000024733d4515410dcf00dd3436e9b6c5914',
  jmrp: '0000000000000011000000035598827330628a93e67c49b880c8a35b',
  jmrpTo: '0000000000000012000000015f86bdb7427798a1d40a63698bd620d0',
  jmrpLegacy: '000000000000001300000002334d2a44e8485ee659ac3696061cd639',
  vacation: '000000000000001400000003296b6627a01f28e1379f144d1c88adfd',
  challenge: '00000000000000150000000141d767a0fa9ed3f03d3dfc28d7c572c0',
  receipt: '000000000000001600000002b2c869044eb229ce610ed68972235328',
  twoRecipients: '000000000000001700000003f36076c8d24f5891ecde70401c556b9b',
  exchangeText: '000000000000001800000001e32a64ed4cf11139e455b465fc570357',
  gmailDelayed: '000000000000001900000002bcb6717bf0f2089ee0640dbb584e8615',
  relayed: '000000000000001a00000003ed477495f10a37f9ed87d8ac9a073971',
  autoReplyHeaders: '000000000000001b000000017e8270b94b2c7e949ddcd6f52fa8e61b',
  arfSes: '000000000000001c00000002449743ebe24c5ba1f66a47281ac55f28',
} as const;
const mid = (token: string) => `${token}@herald.example`;
const verp = (token: string) => `bounce+${token}@herald.example`;

type Kind = ReturnType<typeof classify>;
interface Expected {
  type: InboundReport['type'];
  reason?: InboundReport['reason'];
  feedbackType?: string;
  recipients: Array<Pick<ReportRecipient, 'email' | 'action' | 'status'> & { kind: Kind; diagnostic?: string; originalRecipient?: string }>;
  originalMessageId: string | null;
  reportRecipients: string[];
}

const bounce = (token: string, recipients: Expected['recipients'], reportRecipients = [verp(token)]): Expected => ({
  type: 'bounce',
  recipients,
  originalMessageId: mid(token),
  reportRecipients,
});

const EXPECTED: Record<string, Expected> = {
  'gmail-hard.eml': bounce(TOKEN.gmailHard, [
    { email: 'no.such.person@example.com', action: 'failed', status: '5.1.1', kind: 'hard', diagnostic: 'The email account that you tried to reach does not exist' },
  ]),
  'gmail-delayed.eml': bounce(TOKEN.gmailDelayed, [
    { email: 'slow.mx@example.org', action: 'delayed', status: '4.4.1', kind: 'deferred', diagnostic: 'did not accept our requests to connect' },
  ]),
  'gmail-over-quota.eml': bounce(TOKEN.gmailQuota, [
    // Mailbox full, but 5.2.2: the status class decides.
    { email: 'full.inbox@example.net', action: 'failed', status: '5.2.2', kind: 'hard', diagnostic: 'out of storage space' },
  ]),
  'microsoft365-ndr.eml': bounce(TOKEN.microsoft365, [
    {
      email: 'gone.away@example.net',
      action: 'failed',
      status: '5.1.10',
      kind: 'hard',
      diagnostic: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
    },
  ]),
  'outlook-mailbox-full.eml': bounce(TOKEN.outlookFull, [
    { email: 'packed.mailbox@example.com', action: 'failed', status: '5.2.2', kind: 'hard', diagnostic: 'QuotaExceededException' },
  ]),
  'exchange-onprem-ndr.eml': bounce(TOKEN.exchange, [
    { email: 'pat.former@corp.example.org', action: 'failed', status: '5.1.1', kind: 'hard', diagnostic: 'RESOLVER.ADR.RecipNotFound' },
  ]),
  'exchange-text-only.eml': bounce(TOKEN.exchangeText, [
    // No delivery-status part: the address from the list, the status from "Remote Server returned '550 5.4.1 …'".
    { email: 'ines.blocked@partner.example.com', action: 'failed', status: '5.4.1', kind: 'hard', diagnostic: 'Access denied. AS(201806281)' },
  ]),
  'yahoo-hard.eml': bounce(TOKEN.yahoo, [
    // Plain text, no enhanced code: 554 and "mailbox is disabled" make 5.2.1.
    { email: 'closed.account@example.net', action: 'failed', status: '5.2.1', kind: 'hard', diagnostic: 'This mailbox is disabled (554.30)' },
  ]),
  'postfix-hard.eml': bounce(TOKEN.postfixHard, [
    { email: 'nobody.here@example.com', action: 'failed', status: '5.1.1', kind: 'hard', diagnostic: 'User unknown in virtual mailbox table' },
  ]),
  'postfix-delayed.eml': bounce(TOKEN.postfixDelayed, [
    {
      email: 'slow.server@example.org',
      action: 'delayed',
      status: '4.4.1',
      kind: 'deferred',
      diagnostic: 'connect to mx.example.org[203.0.113.50]:25: Connection timed out',
    },
  ]),
  'postfix-soft-failed.eml': bounce(TOKEN.postfixSoft, [
    { email: 'stuffed@example.org', action: 'failed', status: '4.2.2', kind: 'soft', diagnostic: '452 4.2.2 <stuffed@example.org>: Mailbox full' },
  ]),
  'postfix-relayed.eml': bounce(TOKEN.relayed, [
    // A success notice is a delivery report too; nothing to do.
    { email: 'reader@example.net', action: 'relayed', status: '2.0.0', kind: 'none', diagnostic: '250 2.0.0 Ok' },
  ]),
  'postfix-two-recipients.eml': bounce(TOKEN.twoRecipients, [
    // Final-Recipient, not the alias's X-Actual-Recipient.
    { email: 'info@example.com', action: 'failed', status: '5.2.2', kind: 'hard', diagnostic: 'maildrop: maildir over quota.' },
    // A generic 5.0.0 takes the diagnostic's detail; the forward's original address is kept.
    { email: 'lee.forward@example.net', action: 'failed', status: '5.1.1', kind: 'hard', originalRecipient: 'lee@example.com' },
  ]),
  'exim-failed.eml': bounce(TOKEN.exim, [
    { email: 'no.such.user@example.net', action: 'failed', status: '5.1.1', kind: 'hard', diagnostic: 'SMTP error from remote mail server after RCPT TO' },
  ]),
  'exim-delayed.eml': bounce(TOKEN.eximDelayed, [
    { email: 'greylisted@example.org', action: 'delayed', status: '4.7.1', kind: 'deferred', diagnostic: 'Greylisted, please try again later' },
  ]),
  'sendmail-dsn.eml': bounce(TOKEN.sendmail, [
    { email: 'ex.employee@corp.example.com', action: 'failed', status: '5.1.1', kind: 'hard', diagnostic: '550 5.1.1 <ex.employee@corp.example.com>... User unknown' },
  ]),
  'sendmail-old.eml': bounce(TOKEN.sendmailOld, [
    // No enhanced code: 550 "User unknown" makes 5.1.1.
    { email: 'old.friend@legacy.example.org', action: 'failed', status: '5.1.1', kind: 'hard', diagnostic: '550 <old.friend@legacy.example.org>... User unknown' },
  ]),
  'qmail.eml': bounce(TOKEN.qmail, [
    { email: 'nobody@mail.example.org', action: 'failed', status: '5.1.1', kind: 'hard', diagnostic: 'Sorry, no mailbox here by that name. (#5.1.1)' },
  ]),
  'amazon-ses.eml': bounce(TOKEN.ses, [
    { email: 'absent.reader@example.com', action: 'failed', status: '5.1.1', kind: 'hard', diagnostic: 'User unknown in virtual mailbox table' },
  ]),
  'arf-yahoo.eml': {
    type: 'complaint',
    feedbackType: 'abuse',
    recipients: [{ email: 'unhappy.reader@example.net', action: 'delivered', status: null, kind: 'none' }],
    originalMessageId: mid(TOKEN.arfYahoo),
    reportRecipients: ['fbl@herald.example'],
  },
  'arf-amazon-ses.eml': {
    type: 'complaint',
    feedbackType: 'abuse',
    recipients: [{ email: 'annoyed.reader@example.com', action: 'delivered', status: null, kind: 'none' }],
    originalMessageId: mid(TOKEN.arfSes),
    reportRecipients: ['fbl@herald.example'],
  },
  'arf-microsoft-jmrp.eml': {
    // The recipient is redacted: only the Message-ID (or the VERP Original-Mail-From) says who it was.
    type: 'complaint',
    feedbackType: 'abuse',
    recipients: [],
    originalMessageId: mid(TOKEN.jmrp),
    reportRecipients: ['jmrp@herald.example'],
  },
  'arf-microsoft-jmrp-to.eml': {
    type: 'complaint',
    feedbackType: 'abuse',
    recipients: [{ email: 'morgan.reader@example.com', action: 'delivered', status: null, kind: 'none' }],
    originalMessageId: mid(TOKEN.jmrpTo),
    reportRecipients: ['jmrp@herald.example'],
  },
  'hotmail-jmrp-legacy.eml': {
    type: 'complaint',
    feedbackType: 'abuse',
    recipients: [{ email: 'sam.reader@example.org', action: 'delivered', status: null, kind: 'none' }],
    originalMessageId: mid(TOKEN.jmrpLegacy),
    reportRecipients: ['jmrp@herald.example'],
  },
  'auto-reply-vacation.eml': { type: 'other', reason: 'auto-reply', recipients: [], originalMessageId: null, reportRecipients: [verp(TOKEN.vacation)] },
  'auto-reply-headers.eml': { type: 'other', reason: 'auto-reply', recipients: [], originalMessageId: null, reportRecipients: [verp(TOKEN.autoReplyHeaders)] },
  'challenge-response.eml': { type: 'other', reason: 'challenge', recipients: [], originalMessageId: null, reportRecipients: [verp(TOKEN.challenge)] },
  'read-receipt.eml': { type: 'other', reason: 'auto-reply', recipients: [], originalMessageId: null, reportRecipients: [verp(TOKEN.receipt)] },
  'ordinary-message.eml': { type: 'other', reason: 'not-a-report', recipients: [], originalMessageId: null, reportRecipients: ['postmaster@herald.example'] },
};

const FIXTURES = readdirSync(DIR).filter((f) => f.endsWith('.eml')).sort();

function check(report: InboundReport, expected: Expected): void {
  expect(report.type).toBe(expected.type);
  expect(report.reason).toBe(expected.reason);
  expect(report.feedbackType).toBe(expected.feedbackType);
  expect(report.originalMessageId).toBe(expected.originalMessageId);
  expect(report.reportRecipients).toEqual(expected.reportRecipients);
  expect(report.recipients.map((r) => ({ email: r.email, action: r.action, status: r.status, kind: classify(r) }))).toEqual(
    expected.recipients.map(({ email, action, status, kind }) => ({ email, action, status, kind })),
  );
  expected.recipients.forEach((e, i) => {
    const r = report.recipients[i];
    if (e.diagnostic) expect(r.diagnostic).toContain(e.diagnostic);
    expect(r.originalRecipient).toBe(e.originalRecipient);
    expect(r.diagnostic.length).toBeLessThanOrEqual(1000);
    expect(r.diagnostic).toBe(r.diagnostic.trim());
  });
}

describe('parseReport over the fixture corpus', () => {
  it('has an expectation for every fixture and a fixture for every expectation', () => {
    expect(FIXTURES).toEqual(Object.keys(EXPECTED).sort());
    expect(FIXTURES.length).toBeGreaterThanOrEqual(18);
  });

  it.each(Object.keys(EXPECTED))('%s', async (name) => {
    check(await parseReport(fixture(name)), EXPECTED[name]);
  });

  it.each(Object.keys(EXPECTED))('%s with CRLF line ends, given as a string', async (name) => {
    const crlf = fixture(name).toString('utf8').replace(/\r?\n/g, '\r\n');
    check(await parseReport(crlf), EXPECTED[name]);
  });

  it('reads a report whose returned message is far past the 256 KB it parses', async () => {
    const padded = Buffer.concat([fixture('postfix-hard.eml').subarray(0, -60), Buffer.alloc(3 * 1024 * 1024, 'QUJDRA==\n')]);
    check(await parseReport(padded), EXPECTED['postfix-hard.eml']);
  });
});

describe('recognising reports before auto-replies', () => {
  it('never takes Auto-Submitted: auto-replied alone for an auto-reply when the message is a report', async () => {
    const withHeader = FIXTURES.filter((f) => /^Auto-Submitted: auto-replied/im.test(fixture(f).toString('latin1')));
    const reports = withHeader.filter((f) => EXPECTED[f].type !== 'other');
    expect(reports.length).toBeGreaterThanOrEqual(8);
    for (const f of reports) expect((await parseReport(fixture(f))).type).toBe(EXPECTED[f].type);
  });

  it('takes a message with only Auto-Submitted and no report for an auto-reply', async () => {
    const raw = 'From: a@example.com\r\nTo: bounce+abc@herald.example\r\nSubject: Re: hello\r\nAuto-Submitted: auto-replied\r\n\r\nThanks for your message.\r\n';
    expect(await parseReport(raw)).toEqual({
      type: 'other',
      reason: 'auto-reply',
      recipients: [],
      originalMessageId: null,
      reportRecipients: ['bounce+abc@herald.example'],
    });
  });

  it('keeps a bounce whose returned message talks about verifying and vacations a bounce', async () => {
    const raw = fixture('qmail.eml')
      .toString('utf8')
      .replace('Hello, here is the November news.', 'I am out of the office. Please verify that you are a human: click the link below to verify.');
    check(await parseReport(raw), EXPECTED['qmail.eml']);
  });
});

describe('delivery-status quirks', () => {
  const dsn = (body: string) =>
    [
      'From: MAILER-DAEMON@mx.example.com',
      'To: bounce+abc@herald.example',
      'Subject: Undelivered Mail Returned to Sender',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'Delivery failed.',
      '--b',
      'Content-Type: message/delivery-status',
      '',
      body,
      '--b--',
      '',
    ].join('\r\n');

  it('splits recipients that lack the blank line between them, and reads folded fields and type prefixes', async () => {
    const report = await parseReport(
      dsn(
        [
          'Reporting-MTA: dns; mx.example.com',
          '',
          'Final-Recipient: RFC822; <A@Example.com>',
          'Action: failed',
          'Status: 5.1.1',
          'Diagnostic-Code: smtp; 550 5.1.1 no such',
          '   user here',
          'Final-Recipient: b@example.com',
          'Action: delayed',
          'Status: 4.4.7',
          'Final-Recipient: rfc822;c@example.com',
          'Action: delivered',
          'Status: 2.0.0',
        ].join('\r\n'),
      ),
    );
    expect(report.type).toBe('bounce');
    expect(report.recipients).toEqual([
      { email: 'a@example.com', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 no such user here' },
      { email: 'b@example.com', action: 'delayed', status: '4.4.7', diagnostic: expect.any(String) },
      { email: 'c@example.com', action: 'delivered', status: '2.0.0', diagnostic: '' },
    ]);
    expect(report.recipients.map(classify)).toEqual(['hard', 'deferred', 'none']);
  });

  it('infers a missing Status from the diagnostic, and a missing Action from the status', async () => {
    const report = await parseReport(dsn(['Final-Recipient: rfc822; d@example.com', 'Diagnostic-Code: smtp; 552 mailbox full'].join('\r\n')));
    expect(report.recipients).toEqual([{ email: 'd@example.com', action: 'failed', status: '5.2.2', diagnostic: '552 mailbox full' }]);
  });

  it('falls back to the text and X-Failed-Recipients when the delivery-status part is empty', async () => {
    const raw = dsn('').replace('Subject:', 'X-Failed-Recipients: e@example.com\r\nSubject:');
    const report = await parseReport(raw);
    expect(report.type).toBe('bounce');
    expect(report.recipients.map((r) => [r.email, r.action])).toEqual([['e@example.com', 'failed']]);
  });
});

describe('classify', () => {
  const r = (action: ReportRecipient['action'], status: string | null, diagnostic = ''): ReportRecipient => ({ email: 'x@example.com', action, status, diagnostic });

  it.each([
    [r('delayed', '4.4.1'), 'deferred'],
    [r('delayed', '5.1.1'), 'deferred'],
    [r('failed', '5.1.1'), 'hard'],
    [r('failed', '5.2.2', 'mailbox full'), 'hard'],
    [r('failed', '4.2.2', 'mailbox full'), 'soft'],
    [r('failed', '4.4.7'), 'soft'],
    [r('failed', null, 'user unknown'), 'hard'],
    [r('failed', null, ''), 'hard'],
    [r('failed', null, 'Mailbox full'), 'soft'],
    [r('failed', null, 'The recipient is over quota'), 'soft'],
    [r('failed', null, 'Service unavailable, try again later'), 'soft'],
    [r('delivered', '2.0.0'), 'none'],
    [r('relayed', null), 'none'],
    [r('expanded', '2.0.0'), 'none'],
  ] as Array<[ReportRecipient, Kind]>)('%j → %s', (recipient, kind) => {
    expect(classify(recipient)).toBe(kind);
  });
});

describe('robustness', () => {
  const KINDS = new Set(['bounce', 'complaint', 'other']);
  const valid = (report: InboundReport) => {
    expect(KINDS.has(report.type)).toBe(true);
    expect(Array.isArray(report.recipients)).toBe(true);
    expect(Array.isArray(report.reportRecipients)).toBe(true);
    for (const rec of report.recipients) {
      expect(rec.email).toBe(rec.email.toLowerCase());
      expect(rec.diagnostic.length).toBeLessThanOrEqual(1000);
      expect(['hard', 'soft', 'deferred', 'none']).toContain(classify(rec));
    }
  };

  it('never throws on arbitrary strings and bytes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 2000 }), fc.string({ unit: 'binary', maxLength: 2000 }), fc.uint8Array({ maxLength: 4000 }).map((a) => Buffer.from(a))), async (input) => {
        valid(await parseReport(input));
      }),
      { numRuns: 300 },
    );
  });

  it('never throws on MIME-shaped noise', async () => {
    const fragments = [
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n',
      'Content-Type: multipart/report; report-type=feedback-report; boundary=b\r\n',
      'Content-Type: message/delivery-status\r\n',
      'Content-Type: message/feedback-report\r\n',
      'Content-Type: message/rfc822\r\n',
      'Content-Type: text/rfc822-headers\r\n',
      'Content-Transfer-Encoding: base64\r\n',
      'Content-Transfer-Encoding: quoted-printable\r\n',
      '--b\r\n',
      '--b--\r\n',
      '\r\n',
      'Final-Recipient: rfc822; a@example.com\r\n',
      'Original-Recipient: rfc822;\r\n',
      'Action: failed\r\n',
      'Action: delayed\r\n',
      'Status: 5.1.1\r\n',
      'Status: 4.\r\n',
      'Diagnostic-Code: smtp; 550 5.1.1 <a@example.com>... User unknown\r\n',
      'Feedback-Type: abuse\r\n',
      'Original-Rcpt-To: <b@example.com>\r\n',
      'Message-ID: <x@herald.example>\r\n',
      'From: MAILER-DAEMON@example.com\r\n',
      'Subject: Undelivered Mail Returned to Sender\r\n',
      'X-Failed-Recipients: c@example.com\r\n',
      '<d@example.com>:\r\nSorry, no mailbox here by that name. (#5.1.1)\r\n',
      'The following address(es) failed:\r\n\r\n  e@example.com\r\n    550 no\r\n',
      '--- Below this line is a copy of the message.\r\n',
      '   folded continuation\r\n',
      '@@@@@@@@',
      '=?utf-8?B?w6k=?=',
    ];
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...fragments), { maxLength: 60 }), fc.string({ maxLength: 50 }), async (parts, salt) => {
        valid(await parseReport(parts.join('') + salt));
      }),
      { numRuns: 300 },
    );
  });

  it('never throws on fixtures cut short or with a stretch of their bytes overwritten', async () => {
    const raws = FIXTURES.map(fixture);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: raws.length - 1 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.option(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.uint8Array({ minLength: 1, maxLength: 64 }))),
        async (i, cut, damage) => {
          const raw = Buffer.from(raws[i].subarray(0, Math.floor(raws[i].length * cut)));
          if (damage) raw.set(damage[1].subarray(0, Math.max(0, raw.length - Math.floor(raw.length * damage[0]))), Math.floor(raw.length * damage[0]));
          valid(await parseReport(raw));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('answers other/not-a-report for what is no message at all', async () => {
    for (const input of ['', '\r\n\r\n', 'garbage', null, undefined, 42, {}] as unknown[]) {
      const report = await parseReport(input as string);
      expect(report).toMatchObject({ type: 'other', reason: 'not-a-report', recipients: [], originalMessageId: null });
    }
  });

  it('stays fast on long runs without structure', async () => {
    for (const input of ['a'.repeat(400_000), `${'a'.repeat(200_000)}@`, '@'.repeat(300_000), `From: x\r\n\r\n${'<a@b.c>:\r\n'.repeat(30_000)}`, `${'5.5.5.'.repeat(50_000)}`]) {
      const started = Date.now();
      valid(await parseReport(input));
      expect(Date.now() - started).toBeLessThan(5000);
    }
  });

  it('stays fast on floods of recipients, and yields at most 100 of them', async () => {
    const n = Array.from({ length: 20_000 }, (_, i) => i);
    const bounceHead = 'From: MAILER-DAEMON@mx.example.com\r\nSubject: Undelivered Mail Returned to Sender\r\n';
    const dsnHead = `${bounceHead}Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\n`;
    const floods = [
      `${bounceHead}\r\n${n.map((i) => `<u${i}@example.com>:\r\nSorry, no mailbox here by that name.\r\n`).join('')}`,
      `${bounceHead}\r\n${n.map((i) => `550 <u${i}@example.com>... User unknown\r\n`).join('')}`,
      `${bounceHead}\r\n${n.slice(0, 5000).map((i) => `The following address(es) failed:\r\n  u${i}@example.com\r\n`).join('')}`,
      `${dsnHead}${n.slice(0, 6000).map((i) => `Final-Recipient: rfc822; u${i}@example.com\r\nAction: failed\r\n\r\n`).join('')}--b--\r\n`,
      `${n.map((i) => `To: u${i}@example.com\r\n`).join('')}\r\nbody`,
    ];
    for (const input of floods) {
      const started = Date.now();
      const report = await parseReport(input);
      valid(report);
      expect(report.recipients.length).toBeLessThanOrEqual(100);
      expect(report.reportRecipients.length).toBeLessThanOrEqual(100);
      expect(Date.now() - started).toBeLessThan(5000);
    }
  });
});
