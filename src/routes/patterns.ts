/**
 * What a relay's refusal says about the route rather than the message (issue 36). Two tables, one
 * for throttling and one for blocks, each row a pattern, what it means and where the text comes
 * from, so an operator can check a diagnostic against them and a new provider text is one row.
 *
 * A block or a throttle is never the recipient's fault: the router defers the message (another
 * route, or later) and never bounces or suppresses the address. Everything else keeps today's
 * rules (src/mail/mailer.ts classifySmtpError).
 */

/** One row of a pattern table. */
export interface FailurePattern {
  pattern: RegExp;
  /** What the relay or the receiving provider means by it. */
  means: string;
  /** Where the text is seen (provider documentation or the bug report that showed it). */
  source: string;
  /** Only when the answer is temporary (4xx): a 5xx with the same words is about the message. */
  temporaryOnly?: boolean;
}

/**
 * Refusals naming the sending IP or domain: the receiving provider stops taking mail from this
 * route, whatever the recipient. Any reply code (some providers block with a 4xx).
 * Recipient-level wording ("user unknown", "mailbox full", "recipient blocked") stays out: only
 * texts naming the sender's IP, network, domain or a public block list are here.
 */
export const BLOCK_PATTERNS: readonly FailurePattern[] = [
  {
    pattern: /\bS3150\b|\bS3140\b/,
    means: 'Microsoft (Outlook.com, Hotmail, Office 365): part of the sending network is on its block list',
    source: 'Outlook.com postmaster, "550 5.7.1 Unfortunately, messages from [ip] weren\'t sent ... (S3150)"',
  },
  {
    pattern: /\b5\.7\.515\b/,
    means: 'Microsoft: the sending domain does not meet the required authentication level (SPF/DKIM/DMARC) for high-volume senders',
    source: 'Microsoft, "550 5.7.515 Access denied, sending domain ... does not meet the required authentication level"',
  },
  {
    pattern: /\b5\.7\.(?:511|606|607|608)\b|banned sending IP|banned sender/i,
    means: 'Microsoft (Exchange Online): the sending IP or sender is banned',
    source: 'Microsoft Learn, "Email non-delivery reports and SMTP errors in Exchange Online" (5.7.511, 5.7.606-608)',
  },
  {
    pattern: /\b(?:SC|DY|OU)-00[1-4]\b/,
    means: 'Outlook.com legacy codes: the sending IP or domain refused for its reputation, a dynamic IP range or policy',
    source: 'Outlook.com postmaster, "550 SC-001 ... Unfortunately, messages from [ip] weren\'t sent"',
  },
  {
    pattern: /\bTSS09\b/,
    means: 'Yahoo/AOL: all messages from the sending IP are permanently deferred (reputation)',
    source: 'Yahoo Sender Hub, "553 5.7.2 [TSS09] All messages from [ip] will be permanently deferred"',
  },
  {
    pattern: /\[BL2[0-9]\]/,
    means: 'Yahoo/AOL: the sending IP is on a block list (BL21: Spamhaus, BL23: other lists)',
    source: 'Yahoo Sender Hub, "553 5.7.1 [BL21] Connections will not be accepted from [ip], because the ip is in Spamhaus\'s list"',
  },
  {
    pattern: /spamhaus|spamcop|barracuda ?(?:central|reputation)|\bcsi\.cloudmark\b|\bsorbs\b/i,
    means: 'a public block list (Spamhaus, SpamCop, Barracuda, Cloudmark CSI, SORBS) lists the sending IP',
    source: 'Spamhaus, "554 5.7.1 Service unavailable; Client host [ip] blocked using zen.spamhaus.org"',
  },
  {
    pattern: /\bblocked using\b|\blisted (?:at|by)\b/i,
    means: 'a DNS block list named by the receiving server (Postfix reject_rbl_client wording)',
    source: 'Postfix, "Client host [ip] blocked using <list>"; Exim, "[ip] is listed at <list>"',
  },
  {
    pattern: /\b(?:block|black|deny) ?list(?:ed)?\b|\b(?:DNS)?RBLs?\b|\bDNSBLs?\b/i,
    means: 'the sender is on a block list (the receiver\'s own or a public one)',
    source: 'generic wording of Exim, Postfix, Comcast ("BL000010 ... listed on"), Proofpoint and others',
  },
  {
    pattern: /\bIP\b[^\n]{0,80}\b(?:has been |is |was )?blocked\b|\bblocked\b[^\n]{0,80}\bIP\b/i,
    means: 'the sending IP is blocked (Gmail "mail sent from your IP address has been blocked", Proofpoint "Blocked - see ipcheck")',
    source: 'Gmail SMTP errors (550 5.7.1), Proofpoint ("554 Blocked - see https://ipcheck.proofpoint.com/?ip=...")',
  },
];

/**
 * Answers asking the sender to slow down: the route's rate is cut for a while (ROUTE_THROTTLE_MINUTES)
 * and the message is deferred or moved, without using an attempt.
 */
export const THROTTLE_PATTERNS: readonly FailurePattern[] = [
  {
    pattern: /throttl/i,
    means: 'Amazon SES and others: the account\'s sending rate or daily quota is exceeded',
    source: 'Amazon SES, "454 Throttling failure: Maximum sending rate exceeded." / "Daily message quota exceeded." (listmonk #2273)',
  },
  {
    pattern: /\b4\.7\.28\b/,
    means: 'Gmail: an unusual rate of unsolicited mail from the sending IP or domain; slow down',
    source: 'Gmail SMTP errors, "421 4.7.28 ... unusual rate of unsolicited mail"',
  },
  {
    pattern: /\bTSS?0[1-4]\b/,
    means: 'Yahoo/AOL: messages from the sending IP are temporarily deferred (volume or complaints)',
    source: 'Yahoo Sender Hub, "421 4.7.0 [TSS04] Messages from [ip] temporarily deferred" (Postal #1415)',
  },
  {
    pattern: /\b4\.7\.65[01]\b|\bRP-00[1-3]\b/,
    means: 'Microsoft: the sending IP (IPv4: 4.7.650, IPv6: 4.7.651) is rate limited for its reputation',
    source: 'Microsoft, "451 4.7.650 The mail server [ip] has been temporarily rate limited due to IP reputation"',
  },
  {
    pattern: /\b4\.7\.500\b|server busy/i,
    means: 'Microsoft: the server is busy, try again later from the same IP',
    source: 'Microsoft, "451 4.7.500 Server busy. Please try again later from [ip]. (S77714)"',
  },
  {
    pattern: /\brate[- ]?limit|\bunusual rate\b|\bsending (?:rate|limit|quota)\b|\brate exceeded\b/i,
    means: 'a rate or sending limit of the relay or the receiver is reached',
    source: 'Postmark, Mailgun, SendGrid relays; Gmail "550 5.4.5 Daily user sending limit exceeded"',
  },
  {
    // Not "too many hops": a mail loop, the message's own fault.
    pattern: /\btoo many\b(?! hops)/i,
    means: 'too many connections, messages or sessions from the sender at once (Comcast RL000001, Exim, Postfix)',
    source: 'Comcast, "421 ... RL000001 Too many sessions"; Postfix "421 4.7.0 Error: too many connections"',
  },
  {
    pattern: /\btry (?:again )?later\b/i,
    means: 'the receiver asks for a later retry of everything from this sender (Gmail "421 4.7.0 Try again later, closing connection")',
    source: 'Gmail SMTP errors; generic 4xx wording',
    temporaryOnly: true,
  },
];

export type FailureKind = 'block' | 'throttle' | 'route' | 'half_sent' | 'message';

/** What the SMTP pool (nodemailer) reports on a failure, plus the router's half-sent flag. */
export interface FailureLike {
  code?: string;
  responseCode?: number;
  response?: string;
  message?: string;
  command?: string;
  /** The connection failed after the message's body started: it may have been delivered. */
  halfSent?: boolean;
}

/**
 * Failures of the relay itself (nodemailer's codes and the socket's): nothing was said about the
 * message, another route may take it at once.
 */
const ROUTE_CODES = new Set([
  'ECONNECTION',
  'ESOCKET',
  'ETIMEDOUT',
  'ETLS',
  'EAUTH',
  'EDNS',
  'EPROTOCOL',
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * An enhanced status code about the recipient's address or mailbox (X.1.x, X.2.x), or greylisting:
 * a generic "try again later" with one of these is about that recipient, not the route.
 */
const RECIPIENT_SCOPED = /\b[45]\.[12]\.\d{1,3}\b|greylist/i;

function replyCode(e: FailureLike, text: string): number | undefined {
  if (typeof e.responseCode === 'number') return e.responseCode;
  const m = /^\s*([2-5]\d\d)\b/.exec(text);
  return m ? Number(m[1]) : undefined;
}

function matches(table: readonly FailurePattern[], text: string, code: number | undefined): boolean {
  return table.some((row) => {
    if (!row.pattern.test(text)) return false;
    if (!row.temporaryOnly) return true;
    return code !== undefined && code >= 400 && code < 500 && !RECIPIENT_SCOPED.test(text);
  });
}

/**
 * Sorts a failed delivery: `block` (the provider refuses this route), `throttle` (slow down),
 * `route` (the relay failed before the message started), `half_sent` (the connection broke after
 * the body started: it may have arrived, retried as today), `message` (an answer about this
 * recipient or message: today's rules). Block is checked before throttle, throttle before the rest,
 * so a block text on a dropped connection is still a block.
 */
export function classifyFailure(e: FailureLike): FailureKind {
  // nodemailer's message ends with the response already; both are read in case one is missing.
  const text = [e.response, e.message].filter((s): s is string => typeof s === 'string' && s !== '').join('\n');
  const code = replyCode(e, e.response ?? text);
  if (matches(BLOCK_PATTERNS, text, code)) return 'block';
  if (matches(THROTTLE_PATTERNS, text, code)) return 'throttle';
  if (e.halfSent) return 'half_sent';
  // 421: "service not available, closing transmission channel", whatever command it answers.
  if (code === 421) return 'route';
  if (e.code !== undefined && ROUTE_CODES.has(e.code)) return 'route';
  return 'message';
}
