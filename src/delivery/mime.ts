import crypto from 'node:crypto';

/**
 * A small MIME writer for what Herald sends: multipart/alternative with a text and an HTML
 * part, base64 bodies, RFC 2047 headers. Building the message ourselves (and handing the raw
 * bytes to nodemailer) costs microseconds per recipient where nodemailer's composer costs a
 * millisecond, which is what bounds a campaign's speed on a small machine.
 */
export interface Address {
  name?: string | null;
  email: string;
}

export interface MessageParts {
  from: Address;
  to: Address;
  replyTo?: string | null;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  /** Extra headers (List-Unsubscribe, …); values are single-line. */
  headers?: Record<string, string>;
  date?: Date;
}

/** Header values may never carry CR/LF (header injection): they become spaces. */
export function headerSafe(value: string): string {
  return value.replace(/[\r\n\u2028\u2029\0]+/g, ' ').trim();
}

const ASCII_PRINTABLE = /^[\x20-\x7e]*$/;

/** RFC 2047 encoded-word (UTF-8, base64) when needed, split so lines stay short. */
export function encodeWord(value: string): string {
  const v = headerSafe(value);
  if (ASCII_PRINTABLE.test(v)) return v;
  const words: string[] = [];
  let chunk = '';
  for (const ch of v) {
    // 45 bytes of UTF-8 → 60 base64 characters per encoded word.
    if (Buffer.byteLength(chunk + ch) > 45) {
      words.push(chunk);
      chunk = '';
    }
    chunk += ch;
  }
  if (chunk) words.push(chunk);
  return words.map((w) => `=?UTF-8?B?${Buffer.from(w).toString('base64')}?=`).join('\r\n ');
}

function quoteName(name: string): string {
  const n = headerSafe(name);
  if (!ASCII_PRINTABLE.test(n)) return encodeWord(n);
  return /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~ ]*$/.test(n) ? n : `"${n.replace(/(["\\])/g, '\\$1')}"`;
}

export function formatAddress(a: Address): string {
  const email = headerSafe(a.email);
  return a.name ? `${quoteName(a.name)} <${email}>` : email;
}

/** Base64 in 76-character lines (RFC 2045). */
export function base64Lines(content: string): string {
  const b64 = Buffer.from(content, 'utf8').toString('base64');
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 76) lines.push(b64.slice(i, i + 76));
  return lines.join('\r\n');
}

export function newMessageId(domain: string): string {
  return `<${crypto.randomUUID()}@${domain}>`;
}

export function buildMessage(m: MessageParts): string {
  const boundary = `herald-${crypto.randomBytes(12).toString('hex')}`;
  const headers: Array<[string, string]> = [
    ['From', formatAddress(m.from)],
    ['To', formatAddress(m.to)],
  ];
  if (m.replyTo) headers.push(['Reply-To', headerSafe(m.replyTo)]);
  headers.push(
    ['Subject', encodeWord(m.subject)],
    ['Date', (m.date ?? new Date()).toUTCString().replace('GMT', '+0000')],
    ['Message-ID', headerSafe(m.messageId)],
    ['MIME-Version', '1.0'],
  );
  for (const [k, v] of Object.entries(m.headers ?? {})) headers.push([headerSafe(k), headerSafe(v)]);
  headers.push(['Content-Type', `multipart/alternative; boundary="${boundary}"`]);
  return [
    headers.map(([k, v]) => `${k}: ${v}`).join('\r\n'),
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: base64',
    '',
    base64Lines(m.text),
    `--${boundary}`,
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: base64',
    '',
    base64Lines(m.html),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}
