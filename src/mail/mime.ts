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
 * ASCII written into one reused buffer and read back as one flat string: a message body built
 * this way is one copy, where joining its lines as strings made a tree of hundreds of pieces that
 * the signing's first search then had to flatten (≈ 6 µs a message, `perf`, bench/README.md "Send").
 * One at a time: the buffer is reused by the next message.
 */
export class AsciiBuilder {
  private buf: Buffer = Buffer.allocUnsafe(32 * 1024);
  private n = 0;

  reset(): this {
    this.n = 0;
    return this;
  }

  private room(extra: number): void {
    if (this.n + extra > this.buf.length) this.buf = grown(this.buf, this.n, extra);
  }

  /** ASCII text (a string with any other character would be written wrong: callers write base64 and headers they made). */
  text(s: string): this {
    this.room(s.length);
    this.n += this.buf.write(s, this.n, 'latin1');
    return this;
  }

  bytes(b: Buffer): this {
    this.room(b.length);
    this.n += b.copy(this.buf, this.n);
    return this;
  }

  /** Base64 in lines of at most 76 characters, the first starting on a new line unless nothing was written. */
  base64Lines(b64: string): this {
    for (let i = 0; i < b64.length; i += 76) this.lineBreak().text(i === 0 && b64.length <= 76 ? b64 : b64.slice(i, i + 76));
    return this;
  }

  /** CRLF, unless the builder is empty or already at the start of a line. */
  lineBreak(): this {
    if (this.n > 0 && this.buf[this.n - 1] !== 10) this.text('\r\n');
    return this;
  }

  string(): string {
    return this.buf.toString('latin1', 0, this.n);
  }
}

/** A literal piece of a template, encoded ahead in three forms (see base64Template). */
interface Literal {
  bytes: Buffer;
  /** By `skip` (0, 1, 2): the lines of bytes[skip … skip + 3k], k as large as the piece allows, as ASCII; none for a short literal. */
  lines?: [Buffer, Buffer, Buffer];
  /** By `skip`: the 0–2 bytes after those, which go on with what follows. */
  tails?: [Buffer, Buffer, Buffer];
}

/** Literals shorter than this are copied with the values around them rather than encoded ahead. */
const MIN_ENCODED_LITERAL = 48;

let pending: Buffer = Buffer.allocUnsafe(4 * 1024);

/**
 * A body part made of literal pieces and values (`null` slots, filled in order), in base64,
 * written for many recipients: each literal is encoded once, in three forms — starting 0, 1 or 2
 * bytes in — so that whatever the byte length of the values before it, one form carries on the
 * base64 where they end; a recipient's part then costs the encoding of its own values and up to
 * two bytes either side of each, and the copying of lines, where encoding the whole part would
 * cost all of its bytes again (its HTML is kilobytes, its values tens of bytes).
 *
 * The lines are those of RFC 2045 §6.8: at most 76 characters, and each holds whole groups of four
 * (three bytes), so a decoder that reads line by line reads the same bytes as one that joins
 * them. Unlike a whole part's lines they are not all 76 long: a value's bytes, with the ones either side,
 * make a line (or lines) of their own, and the next literal's lines start after it. The part is
 * written into `out`, starting on a line of its own.
 */
export function base64Template(pieces: ReadonlyArray<string | null>): (values: readonly string[], out: AsciiBuilder) => void {
  const parts: Array<Literal | null> = pieces.map((p) => {
    if (p === null) return null;
    const bytes = Buffer.from(p, 'utf8');
    if (bytes.length < MIN_ENCODED_LITERAL) return { bytes };
    const form = (skip: number): [Buffer, Buffer] => {
      const end = skip + Math.floor((bytes.length - skip) / 3) * 3;
      return [Buffer.from(new AsciiBuilder().base64Lines(bytes.toString('base64', skip, end)).string(), 'latin1'), bytes.subarray(end)];
    };
    const [f0, f1, f2] = [form(0), form(1), form(2)];
    return { bytes, lines: [f0[0], f1[0], f2[0]], tails: [f0[1], f1[1], f2[1]] };
  });

  return (values, out) => {
    let n = 0;
    let next = 0;
    for (const part of parts) {
      if (part === null) {
        const value = values[next++] ?? '';
        // At most 3 bytes of UTF-8 per UTF-16 code unit.
        if (n + value.length * 3 > pending.length) pending = grown(pending, n, value.length * 3);
        n += pending.write(value, n, 'utf8');
      } else if (!part.lines || !part.tails) {
        if (n + part.bytes.length > pending.length) pending = grown(pending, n, part.bytes.length);
        n += part.bytes.copy(pending, n);
      } else {
        // The bytes that complete the pending group come from the literal; its form then starts after them.
        const skip = (3 - (n % 3)) % 3;
        if (n + skip > pending.length) pending = grown(pending, n, skip);
        for (let i = 0; i < skip; i++) pending[n++] = part.bytes[i];
        if (n) out.base64Lines(pending.toString('base64', 0, n));
        if (part.lines[skip].length) out.lineBreak().bytes(part.lines[skip]);
        const tail = part.tails[skip];
        for (n = 0; n < tail.length; n++) pending[n] = tail[n];
      }
    }
    if (n) out.base64Lines(pending.toString('base64', 0, n));
  };
}

/** A copy of the first `n` bytes of `buffer` in one with room for `extra` more. */
function grown(buffer: Buffer, n: number, extra: number): Buffer {
  const bigger = Buffer.allocUnsafe(Math.max(buffer.length * 2, n + extra));
  buffer.copy(bigger, 0, 0, n);
  return bigger;
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

/** What each recipient's header block has of its own (`headers` go right after MIME-Version). */
export type HeadParts = Omit<VariableParts, 'text' | 'html'>;

/**
 * A message in two pieces, as the sender signs it: the header block (each line ending in CRLF)
 * and the body; the message is `${head}\r\n${body}`.
 */
export interface MessagePieces {
  head: string;
  body: string;
}

/** Writes a part's base64 lines into the body being built. */
export type PartWriter = (out: AsciiBuilder) => void;

/** The builder every body is written into (one at a time: see AsciiBuilder). */
const bodies = new AsciiBuilder();

/**
 * A writer for many messages that share sender, boundary and fixed headers: those are
 * formatted once, so a recipient's message costs its own headers, and its body the writing of
 * its parts' lines (given as writers: base64Template's, or base64Lines of a whole text). Headers
 * in this order: From, To, Reply-To, Subject, Date, Message-ID, MIME-Version, the per-message
 * headers, the fixed ones, Content-Type.
 */
export function messagePiecesWriter(fixed: FixedParts): (v: HeadParts, text: PartWriter, html: PartWriter) => MessagePieces {
  const boundary = fixed.boundary ?? newBoundary();
  const from = `From: ${formatAddress(fixed.from)}\r\n`;
  const replyTo = fixed.replyTo ? `Reply-To: ${headerSafe(fixed.replyTo)}\r\n` : '';
  const fixedTail = `${headerLines(fixed.headers)}Content-Type: multipart/alternative; boundary="${boundary}"\r\n`;
  const part = (type: string) => `--${boundary}\r\nContent-Type: ${type}; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n`;
  const textOpen = part('text/plain');
  const htmlOpen = `\r\n${part('text/html')}`;
  const close = `\r\n--${boundary}--\r\n`;
  return (v, text, html) => {
    const head =
      `${from}To: ${formatAddress(v.to)}\r\n${replyTo}Subject: ${encodeWord(v.subject)}\r\nDate: ${rfc5322Date(v.date)}\r\n` +
      `Message-ID: ${headerSafe(v.messageId)}\r\nMIME-Version: 1.0\r\n${headerLines(v.headers)}${fixedTail}`;
    bodies.reset().text(textOpen);
    text(bodies);
    bodies.text(htmlOpen);
    html(bodies);
    return { head, body: bodies.text(close).string() };
  };
}

/** A whole text's part writer: its UTF-8 in base64 lines of 76 characters. */
const wholePart =
  (content: string): PartWriter =>
  (out) => {
    out.base64Lines(Buffer.from(content, 'utf8').toString('base64'));
  };

/** As messagePiecesWriter, for parts given as text, and the message as one string. */
export function messageWriter(fixed: FixedParts): (v: VariableParts) => string {
  const write = messagePiecesWriter(fixed);
  return ({ text, html, ...v }) => {
    const { head, body } = write(v, wholePart(text), wholePart(html));
    return `${head}\r\n${body}`;
  };
}

export function buildMessage(m: MessageParts): string {
  return messageWriter({ from: m.from, replyTo: m.replyTo, boundary: m.boundary })(m);
}
