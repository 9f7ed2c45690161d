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

/**
 * UTF-8 bytes of a part are written into one reused buffer rather than a new one per part:
 * a campaign's parts are tens of kilobytes each, and allocating (and later collecting) that
 * much outside the JS heap for every message showed as a saw-tooth of resident memory.
 */
let scratch = Buffer.allocUnsafe(64 * 1024);

/** Base64 in 76-character lines (RFC 2045). Appending slices beat an array join by half. */
export function base64Lines(content: string): string {
  // At most 3 bytes of UTF-8 per UTF-16 code unit.
  if (content.length * 3 > scratch.length) scratch = Buffer.allocUnsafe(content.length * 3);
  const n = scratch.write(content, 0, 'utf8');
  const b64 = scratch.toString('base64', 0, n);
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

/** What stays the same for every recipient of a design: written once into the header block. */
export interface FixedParts {
  from: Address;
  replyTo?: string | null;
  /** Headers after the per-message ones (List-Unsubscribe-Post, Auto-Submitted, …). */
  headers?: Record<string, string>;
  /** See MessageParts.boundary. */
  boundary?: string;
}

/** What each recipient's message has of its own (`headers` go right after MIME-Version). */
export type VariableParts = Pick<MessageParts, 'to' | 'subject' | 'text' | 'html' | 'messageId' | 'headers' | 'date'>;

const headerLines = (headers: Record<string, string> | undefined) => {
  let out = '';
  for (const [k, v] of Object.entries(headers ?? {})) out += `${headerSafe(k)}: ${headerSafe(v)}\r\n`;
  return out;
};

let dateSecond = -1;
let dateText = '';

/** RFC 5322 date; the text changes once a second, so it is made once a second. */
function rfc5322Date(date?: Date): string {
  if (date) return date.toUTCString().replace('GMT', '+0000');
  const second = Math.floor(Date.now() / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(second * 1000).toUTCString().replace('GMT', '+0000');
  }
  return dateText;
}

/**
 * A writer for many messages that share sender, boundary and fixed headers: those are
 * formatted once, so a recipient's message costs its own headers, two base64 passes and one
 * concatenation. Headers in this order: From, To, Reply-To, Subject, Date, Message-ID,
 * MIME-Version, the per-message headers, the fixed ones, Content-Type.
 */
export function messageWriter(fixed: FixedParts): (v: VariableParts) => string {
  const boundary = fixed.boundary ?? newBoundary();
  const from = `From: ${formatAddress(fixed.from)}\r\n`;
  const replyTo = fixed.replyTo ? `Reply-To: ${headerSafe(fixed.replyTo)}\r\n` : '';
  const fixedTail = `${headerLines(fixed.headers)}Content-Type: multipart/alternative; boundary="${boundary}"\r\n\r\n`;
  const part = (type: string) => `--${boundary}\r\nContent-Type: ${type}; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n`;
  const textOpen = part('text/plain');
  const htmlOpen = `\r\n${part('text/html')}`;
  const close = `\r\n--${boundary}--\r\n`;
  return (v) =>
    `${from}To: ${formatAddress(v.to)}\r\n${replyTo}Subject: ${encodeWord(v.subject)}\r\nDate: ${rfc5322Date(v.date)}\r\n` +
    `Message-ID: ${headerSafe(v.messageId)}\r\nMIME-Version: 1.0\r\n${headerLines(v.headers)}${fixedTail}` +
    `${textOpen}${base64Lines(v.text)}${htmlOpen}${base64Lines(v.html)}${close}`;
}

export function buildMessage(m: MessageParts): string {
  return messageWriter({ from: m.from, replyTo: m.replyTo, boundary: m.boundary })(m);
}
