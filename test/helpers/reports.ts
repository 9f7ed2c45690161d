import { randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';

/**
 * What a remote MTA, a feedback loop and an away-message robot send back, written as they
 * write them (RFC 3464 DSN, RFC 5965 ARF, RFC 3834 auto-reply), and an SMTP client that
 * delivers them to Herald's inbound port with a null envelope sender, as bounces travel.
 */
const CRLF = '\r\n';

function headers(lines: Record<string, string>): string {
  return Object.entries(lines)
    .map(([k, v]) => `${k}: ${v}`)
    .join(CRLF);
}

function boundary(): string {
  return `=_${randomBytes(8).toString('hex')}`;
}

export interface DsnOptions {
  /** Where the DSN goes: the original message's envelope sender (a VERP address). */
  to: string;
  recipient: string;
  /** The address the message was first sent to, when a forward or alias changed it (Original-Recipient). */
  originalRecipient?: string;
  action?: 'failed' | 'delayed' | 'delivered';
  status?: string;
  diagnostic?: string;
  /** The returned message's headers (text/rfc822-headers part); omitted when absent. */
  originalHeaders?: string;
}

export function dsn(o: DsnOptions): string {
  const b = boundary();
  const action = o.action ?? 'failed';
  const status = o.status ?? '5.1.1';
  const parts = [
    `--${b}`,
    'Content-Type: text/plain; charset=us-ascii',
    '',
    action === 'delayed' ? 'Delivery to the following recipient has been delayed.' : 'This is the mail system at host mx.remote.test. Your message could not be delivered.',
    '',
    `--${b}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.remote.test',
    `Arrival-Date: ${new Date().toUTCString()}`,
    '',
    `Final-Recipient: rfc822; ${o.recipient}`,
    `Original-Recipient: rfc822; ${o.originalRecipient ?? o.recipient}`,
    `Action: ${action}`,
    `Status: ${status}`,
    `Remote-MTA: dns; mail.remote.test`,
    `Diagnostic-Code: smtp; ${o.diagnostic ?? '550 5.1.1 <' + o.recipient + '>: Recipient address rejected: User unknown'}`,
    '',
  ];
  if (o.originalHeaders) parts.push(`--${b}`, 'Content-Type: text/rfc822-headers', '', o.originalHeaders.trimEnd(), '');
  parts.push(`--${b}--`, '');
  return (
    headers({
      From: 'MAILER-DAEMON@mx.remote.test (Mail Delivery System)',
      To: o.to,
      Subject: action === 'delayed' ? 'Delayed Mail (still being retried)' : 'Undelivered Mail Returned to Sender',
      Date: new Date().toUTCString(),
      'Message-ID': `<${randomBytes(8).toString('hex')}@mx.remote.test>`,
      'Auto-Submitted': 'auto-replied',
      'MIME-Version': '1.0',
      'Content-Type': `multipart/report; report-type=delivery-status; boundary="${b}"`,
    }) +
    CRLF +
    CRLF +
    parts.join(CRLF)
  );
}

/** An ARF complaint report carrying the original message (as feedback loops send it). */
export function arf(o: { to: string; recipient: string; original: string; feedbackType?: string }): string {
  const b = boundary();
  return (
    headers({
      From: 'feedback@fbl.remote.test',
      To: o.to,
      Subject: 'FW: Abuse report',
      Date: new Date().toUTCString(),
      'Message-ID': `<${randomBytes(8).toString('hex')}@fbl.remote.test>`,
      'MIME-Version': '1.0',
      'Content-Type': `multipart/report; report-type=feedback-report; boundary="${b}"`,
    }) +
    CRLF +
    CRLF +
    [
      `--${b}`,
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'This is an email abuse report for an email message received from IP 192.0.2.1.',
      '',
      `--${b}`,
      'Content-Type: message/feedback-report',
      '',
      `Feedback-Type: ${o.feedbackType ?? 'abuse'}`,
      'User-Agent: RemoteFBL/1.0',
      'Version: 1',
      `Original-Rcpt-To: ${o.recipient}`,
      'Source-IP: 192.0.2.1',
      '',
      `--${b}`,
      'Content-Type: message/rfc822',
      'Content-Disposition: inline',
      '',
      o.original.trimEnd(),
      '',
      `--${b}--`,
      '',
    ].join(CRLF)
  );
}

/** An out-of-office reply (RFC 3834) to a message. */
export function vacation(o: { to: string; from: string; inReplyTo?: string }): string {
  return (
    headers({
      From: o.from,
      To: o.to,
      Subject: 'Out of office: News',
      Date: new Date().toUTCString(),
      'Message-ID': `<${randomBytes(8).toString('hex')}@remote.test>`,
      ...(o.inReplyTo ? { 'In-Reply-To': o.inReplyTo, References: o.inReplyTo } : {}),
      'Auto-Submitted': 'auto-replied',
      'MIME-Version': '1.0',
      'Content-Type': 'text/plain; charset=us-ascii',
    }) +
    CRLF +
    CRLF +
    'I am away until Monday and will read your message when I am back.' +
    CRLF
  );
}

/** The headers of a message as received (what a DSN returns in its text/rfc822-headers part). */
export function headersOf(raw: string): string {
  const end = raw.search(/\r?\n\r?\n/);
  return end < 0 ? raw : raw.slice(0, end);
}

export interface RemoteMta {
  /** Delivers a raw message with a null envelope sender; resolves with the server's answer, rejects with its refusal. */
  deliver(to: string | string[], raw: string, from?: string): Promise<string>;
  close(): void;
}

/** An SMTP client to Herald's inbound port (pooled connections, like a busy MTA). */
export function remoteMta(port: number, opts: { poolSize?: number } = {}): RemoteMta {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    pool: true,
    maxConnections: opts.poolSize ?? 1,
    maxMessages: Infinity,
  });
  return {
    async deliver(to, raw, from = '') {
      const info = await transport.sendMail({ envelope: { from, to: Array.isArray(to) ? to : [to] }, raw });
      return info.response;
    },
    close: () => transport.close(),
  };
}
