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
  /**
   * The multipart boundary; a fresh random one when not given. Any value is safe for many
   * messages: both parts are base64, whose alphabet has no `-`, so no content line can ever
   * read as a boundary line (`--…`). A compiled design draws one and uses it for every
   * recipient, sparing a random draw per message.
   */
  boundary?: string;
}

/** Header values may never carry CR/LF (header injection): they become spaces. */
export function headerSafe(value: string): string {
  return value.replace(/[\r\n\u2028\u2029\0]+/g, ' ').trim();
}

const ASCII_PRINTABLE = /^[\x20-\x7e]*$/;

/**
 * RFC 2047 encoded-word (UTF-8, base64) when needed, split so lines stay short and no
 * character's bytes are split between two words.
 */
export function encodeWord(value: string): string {
  const v = headerSafe(value);
  if (ASCII_PRINTABLE.test(v)) return v;
  const words: string[] = [];
  let chunk = '';
  let bytes = 0;
  for (const ch of v) {
    const n = Buffer.byteLength(ch);
    // 45 bytes of UTF-8 → 60 base64 characters per encoded word.
    if (bytes + n > 45) {
      words.push(chunk);
      chunk = '';
      bytes = 0;
    }
    chunk += ch;
    bytes += n;
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

/** Base64 in 76-character lines (RFC 2045). Appending slices beat an array join by half. */
export function base64Lines(content: string): string {
  const b64 = Buffer.from(content, 'utf8').toString('base64');
  let out = '';
  for (let i = 0; i < b64.length; i += 76) {
    if (i) out += '\r\n';
    out += b64.slice(i, i + 76);
  }
  return out;
}

export function newBoundary(): string {
  return `herald-${crypto.randomBytes(12).toString('hex')}`;
}

export function newMessageId(domain: string): string {
  return `<${crypto.randomUUID()}@${domain}>`;
}

export function buildMessage(m: MessageParts): string {
  const boundary = m.boundary ?? newBoundary();
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
