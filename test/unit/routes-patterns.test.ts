import { BLOCK_PATTERNS, classifyFailure, THROTTLE_PATTERNS, type FailureLike } from '../../src/routes/patterns';

/**
 * classifyFailure (src/routes/patterns.ts) on the texts relays and providers really send: a block
 * or a throttle is the route's, never the recipient's; a refusal of the recipient stays `message`.
 */

/** A refusal as nodemailer reports an answer to RCPT TO or DATA: code, response, command. */
function refusal(response: string, command = 'RCPT TO'): FailureLike {
  const responseCode = Number(/^\d{3}/.exec(response)?.[0]);
  return { code: command === 'DATA' ? 'EMESSAGE' : 'EENVELOPE', responseCode, response, message: `Can't send mail: ${response}`, command };
}

describe('classifyFailure: blocks', () => {
  it.each([
    ['Microsoft S3150', '550 5.7.1 Unfortunately, messages from [203.0.113.5] weren\'t sent. Please contact your Internet service provider since part of their network is on our block list (S3150). You can also refer your provider to http://mail.live.com/mail/troubleshooting.aspx#errors.'],
    ['Microsoft 5.7.515', '550 5.7.515 Access denied, sending domain example.com does not meet the required authentication level. The sender\'s domain in the 5322.From address doesn\'t meet the authentication requirements defined for the sender.'],
    ['Microsoft banned sending IP', '550 5.7.606 Access denied, banned sending IP [203.0.113.5]. To request removal from this list please visit https://sender.office.com/'],
    ['Yahoo TSS09', '553 5.7.2 [TSS09] All messages from 203.0.113.5 will be permanently deferred; Retrying will NOT succeed. See https://postmaster.yahooinc.com/error-codes'],
    ['Yahoo BL21', '553 5.7.1 [BL21] Connections will not be accepted from 203.0.113.5, because the ip is in Spamhaus\'s list; see https://postmaster.yahooinc.com/error-codes'],
    ['Spamhaus via Postfix', '554 5.7.1 Service unavailable; Client host [203.0.113.5] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/203.0.113.5'],
    ['Exim listed at', '550 Rejected because 203.0.113.5 is listed at bl.spamcop.net'],
    ['Gmail IP blocked', '550-5.7.1 [203.0.113.5] Our system has detected an unusual rate of unsolicited mail originating from your IP address. To protect our users from spam, mail sent from your IP address has been blocked.'],
    ['Proofpoint', '554 Blocked - see https://ipcheck.proofpoint.com/?ip=203.0.113.5'],
    ['Comcast blocklist', '554 resimta-po-01v.sys.comcast.net resimta-po-01v.sys.comcast.net 203.0.113.5 found on one or more DNSBLs, see http://postmaster.comcast.net/smtp-error-codes.php#BL000001'],
    ['a 4xx block', '451 4.7.1 Client host 203.0.113.5 is on our blacklist, try again later'],
  ])('%s', (_name, response) => {
    expect(classifyFailure(refusal(response))).toBe('block');
  });

  it('is a block at DATA too, and on a connection that then broke', () => {
    const spamhaus = '554 5.7.1 Service unavailable; Client host [203.0.113.5] blocked using zen.spamhaus.org';
    expect(classifyFailure(refusal(spamhaus, 'DATA'))).toBe('block');
    expect(classifyFailure({ code: 'EPROTOCOL', response: spamhaus, message: `Invalid greeting. response=${spamhaus}`, command: 'CONN' })).toBe('block');
    expect(classifyFailure({ ...refusal(spamhaus, 'DATA'), halfSent: true })).toBe('block');
  });

  it('comes before throttling when a text reads as both', () => {
    expect(classifyFailure(refusal('421 4.7.0 [TSS04] too many messages; 203.0.113.5 is listed at bl.example.net'))).toBe('block');
  });
});

describe('classifyFailure: throttling', () => {
  it.each([
    ['SES rate', '454 Throttling failure: Maximum sending rate exceeded.', 'MAIL FROM'],
    ['SES daily quota', '454 Throttling failure: Daily message quota exceeded.', 'MAIL FROM'],
    ['Gmail 4.7.28', '421-4.7.28 [203.0.113.5      15] Our system has detected an unusual rate of unsolicited mail originating from your IP address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited.', 'DATA'],
    ['Yahoo TSS04', '421 4.7.0 [TSS04] Messages from 203.0.113.5 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes', 'RCPT TO'],
    ['Outlook 4.7.650', '451 4.7.650 The mail server [203.0.113.5] has been temporarily rate limited due to IP reputation. For e-mail delivery information, see https://postmaster.live.com (S775) [Name=Protocol Filter Agent]', 'RCPT TO'],
    ['Outlook 4.7.651', '451 4.7.651 The mail server [2001:db8::5] has been temporarily rate limited due to IPv6 reputation.', 'RCPT TO'],
    ['Outlook server busy', '451 4.7.500 Server busy. Please try again later from [203.0.113.5]. (S77714) [Hostname=EX.outlook.com]', 'RCPT TO'],
    ['a relay rate limit', '450 4.7.1 Rate limit exceeded for this account', 'MAIL FROM'],
    ['Postfix too many connections', '421 4.7.0 mx.example.net Error: too many connections from 203.0.113.5', 'CONN'],
    ['Gmail try again later', '421 4.7.0 Try again later, closing connection. (EHLO) d9443c01a7336-2a.13 - gsmtp', 'EHLO'],
    ['Gmail daily sending limit', '550 5.4.5 Daily user sending limit exceeded. For more information on Gmail sending limits go to https://support.google.com/a/answer/166852', 'MAIL FROM'],
  ])('%s', (_name, response, command) => {
    expect(classifyFailure(refusal(response, command))).toBe('throttle');
  });

  it('takes "try again later" as throttling only in a temporary answer that is not about the mailbox', () => {
    expect(classifyFailure(refusal('550 5.7.1 Message refused, do not try again later'))).toBe('message');
    expect(classifyFailure(refusal('450 4.3.2 Please try again later', 'MAIL FROM'))).toBe('throttle');
    // Gmail's per-recipient rate: that mailbox's, not the route's.
    expect(classifyFailure(refusal('450 4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages, try again later'))).toBe('message');
    expect(classifyFailure(refusal('450 4.2.1 Mailbox busy, try again later'))).toBe('message');
    expect(classifyFailure(refusal('450 4.7.1 <a@example.com>: Recipient address rejected: Greylisted, please try again later'))).toBe('message');
  });

  it('is not a mail loop ("too many hops")', () => {
    expect(classifyFailure(refusal('554 5.4.6 Too many hops', 'DATA'))).toBe('message');
  });
});

describe('classifyFailure: the relay failed', () => {
  it.each<[string, FailureLike]>([
    ['connection refused', { code: 'ESOCKET', message: 'connect ECONNREFUSED 127.0.0.1:2525', command: 'CONN' }],
    ['connection reset', { code: 'ECONNRESET', message: 'read ECONNRESET' }],
    ['timeout at connect', { code: 'ETIMEDOUT', message: 'Connection timeout', command: 'CONN' }],
    ['timeout at greeting', { code: 'ETIMEDOUT', message: 'Greeting never received', command: 'CONN' }],
    ['TLS', { code: 'ETLS', message: 'Error initiating TLS - self-signed certificate', command: 'CONN' }],
    ['authentication refused', { code: 'EAUTH', responseCode: 535, response: '535 5.7.8 Authentication credentials invalid', message: 'Invalid login: 535 5.7.8 Authentication credentials invalid', command: 'AUTH PLAIN' }],
    ['421 at greeting', { code: 'EPROTOCOL', responseCode: 421, response: '421 mx.example.net Service not available', message: 'Invalid greeting', command: 'CONN' }],
    ['421 to EHLO', { code: 'ECONNECTION', responseCode: 421, response: '421 4.3.2 Shutting down', message: 'Server terminates connection', command: 'EHLO' }],
    ['421 to MAIL FROM', refusal('421 4.3.0 Service shutting down', 'MAIL FROM')],
    ['closed before DATA', { code: 'ECONNECTION', message: 'Connection closed unexpectedly', command: 'CONN' }],
    ['the pool closed', { code: 'ECONNECTION', message: 'the SMTP pool is closed' }],
  ])('%s', (_name, failure) => {
    expect(classifyFailure(failure)).toBe('route');
  });

  it('is half-sent when the connection broke after the body started', () => {
    expect(classifyFailure({ code: 'ECONNECTION', message: 'Connection closed unexpectedly', command: 'CONN', halfSent: true })).toBe('half_sent');
    expect(classifyFailure({ code: 'ETIMEDOUT', message: 'Timeout', command: 'CONN', halfSent: true })).toBe('half_sent');
  });
});

describe('classifyFailure: the message or the recipient', () => {
  it.each([
    ['user unknown', '550 5.1.1 <a@example.com>: Recipient address rejected: User unknown in local recipient table', 'RCPT TO'],
    ['short user unknown', '550 5.1.1 user unknown', 'RCPT TO'],
    ['mailbox full', '452 4.2.2 mailbox full', 'RCPT TO'],
    ['Gmail over quota', '452-4.2.2 The recipient\'s inbox is out of storage space. Please direct the recipient to https://support.google.com/mail/?p=OverQuotaTemp', 'RCPT TO'],
    ['content refused', '550 5.7.1 Message rejected as spam by Content Filtering.', 'DATA'],
    ['Domino directory', '550 5.1.1 User not listed in public Name & Address Book', 'RCPT TO'],
    ['recipient blocked by user', '550 5.7.1 Recipient blocked this sender', 'RCPT TO'],
    ['temporary local problem', '451 4.3.0 Temporary local problem', 'DATA'],
  ])('%s', (_name, response, command) => {
    expect(classifyFailure(refusal(response, command))).toBe('message');
  });

  it('reads a bare message when nodemailer gave no response', () => {
    expect(classifyFailure({ code: 'EENVELOPE', message: 'Invalid recipient "x"', command: 'API' })).toBe('message');
    expect(classifyFailure({})).toBe('message');
  });
});

describe('the pattern tables', () => {
  it('document every row: what it means and where the text is seen', () => {
    for (const row of [...BLOCK_PATTERNS, ...THROTTLE_PATTERNS]) {
      expect(row.means.length).toBeGreaterThan(10);
      expect(row.source.length).toBeGreaterThan(5);
      // A global or sticky regex would keep lastIndex between tests and miss every other match.
      expect(row.pattern.global || row.pattern.sticky).toBe(false);
    }
  });
});
