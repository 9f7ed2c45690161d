import type { Readable } from 'node:stream';
import { isTransientError } from 'nodemailer/lib/errors';
import MimeNode from 'nodemailer/lib/mime-node';
import SMTPConnection from 'nodemailer/lib/smtp-connection';

/**
 * A pool of nodemailer SMTP connections for messages Herald has already composed (and signed).
 *
 * nodemailer's pooled transport (`createTransport({ pool: true })`) takes every message through
 * `sendMail`: a mail object normalised, plugins run, a MIME tree built around the raw bytes, its
 * envelope parsed from address strings, a readable stream made of it — per message, for bytes
 * that are final before they reach it. Dropping it took a quarter to a third of the sending
 * process's CPU on bench:send (docs/decisions.md, "Delivery"). This pool hands the same connections
 * (`SMTPConnection`, nodemailer's own client: EHLO, STARTTLS, AUTH, timeouts, dot-stuffing; see writeData) the
 * envelope and the bytes directly, and keeps the pooled transport's rules:
 *
 * - at most `size` connections, opened when messages wait and none is free, kept open between
 *   messages (no message limit); a message waits in order for the next free one;
 * - a refusal of the message itself (an SMTP answer to MAIL FROM, RCPT TO or DATA, not 421)
 *   leaves the connection in use after RSET; any other failure closes it;
 * - a connection the server closed while it was idle is dropped; if the server closes a reused
 *   connection before a byte of the message went out, the message is tried once more on another
 *   connection (it cannot have been delivered).
 */
export interface SmtpPoolOptions {
  host: string;
  port: number;
  secure: boolean;
  auth?: { user: string; pass: string };
  size: number;
  connectionTimeout: number;
  greetingTimeout: number;
  socketTimeout: number;
}

/** What nodemailer's send callback reports on failure (its NodemailerError fields Herald reads). */
export interface SmtpFailure extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
  /**
   * The connection failed after the message's body had started to go (the body was piped into
   * DATA): the server may have it, so it is no route failure to move elsewhere at once (src/routes/router.ts).
   */
  halfSent?: boolean;
}

/** One message handed to the pool, until the server accepted or refused it. */
interface Submission {
  /** The envelope's addresses (SMTPConnection writes its state into the envelope object it is given, so each try gets a new one). */
  from: string;
  to: string[];
  raw: string;
  resolve: () => void;
  reject: (err: SmtpFailure) => void;
  /** Already moved once off a connection the server had closed. */
  moved: boolean;
}

/** One connection of the pool. */
class Connection {
  /** Messages given to it so far. */
  sent = 0;
  /** Closed, by either side, or failed: never given another message. */
  dead = false;
  /** Still counted in the pool's open connections. */
  counted = true;
  /** A message is on it: its send callback decides what a failure means. */
  busy = false;
  constructor(readonly smtp: SMTPConnection) {}
}

/** A dot-atom local part at a lower-case ASCII domain: an address nodemailer sends as it stands. */
const PLAIN_ADDRESS = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[a-z0-9-]+(?:\.[a-z0-9-]+)*$/;

/**
 * The SMTP envelope for one recipient. Plain addresses go as they are; any other form through
 * nodemailer's own normalisation, as its transport did (an IDN domain as its A-label unless the
 * local part needs SMTPUTF8, a local part that is no dot-atom quoted, control characters removed).
 */
export function envelopeFor(from: string, to: string): { from: string; to: string[] } {
  if (PLAIN_ADDRESS.test(from) && PLAIN_ADDRESS.test(to)) return { from, to: [to] };
  const env = new MimeNode().setEnvelope({ from, to: [to] }).getEnvelope();
  return { from: env.from || '', to: env.to };
}

/**
 * True when nodemailer's DATA stream would send `raw` byte for byte as it stands: every LF follows
 * a CR, every CR is followed by an LF, and no line starts with a dot (so nothing is doubled or
 * added). Herald's messages are such (header values cleaned of line breaks, bodies in base64 lines:
 * src/mail/mime.ts, src/dkim/sign.ts); the string's own search finds each line end.
 */
export function sendsAsItStands(raw: string): boolean {
  const first = raw.charCodeAt(0);
  if (raw.length === 0 || first === 0x2e || first === 0x0a) return false;
  for (let p = raw.indexOf('\n'); p !== -1; p = raw.indexOf('\n', p + 1)) {
    if (raw.charCodeAt(p - 1) !== 0x0d || raw.charCodeAt(p + 1) === 0x2e) return false;
  }
  for (let p = raw.indexOf('\r'); p !== -1; p = raw.indexOf('\r', p + 1)) {
    if (raw.charCodeAt(p + 1) !== 0x0a) return false;
  }
  return true;
}

/** What this pool reads and writes of nodemailer's DATA stream (smtp-connection/data-stream.js). */
interface DataStreamState {
  _transform: (chunk: Buffer, encoding: string, done: () => void) => void;
  push(chunk: Buffer): boolean;
  inByteCount: number;
  outByteCount: number;
  lastByte: number | false;
}

/** The DATA stream's transform for a message that `sendsAsItStands`: its chunks go on unchanged, counted, their last byte kept for the end-of-data line. */
function passAsItStands(this: DataStreamState, chunk: Buffer, _encoding: string, done: () => void): void {
  if (chunk.length) {
    this.inByteCount += chunk.length;
    this.outByteCount += chunk.length;
    this.lastByte = chunk[chunk.length - 1];
    this.push(chunk);
  }
  done();
}

/**
 * Writes `raw` into the DATA stream and ends it. nodemailer's stream escapes a message byte by byte
 * in JavaScript (a dot that starts a line doubled, a bare CR or LF made CRLF): on a 12 KB message
 * that stream took 75–166 µs, and 11–19 µs passing it through (bench/README.md, log entry of
 * 2026-11-29 15:11). A message it would leave unchanged skips the loop; the bytes and counts on
 * the wire are the same (test/unit/smtp-pool.test.ts). Any other is escaped as before.
 */
export function writeData(stream: NodeJS.WritableStream, raw: string): void {
  const data = stream as unknown as Partial<DataStreamState>;
  if (typeof data._transform === 'function' && typeof data.inByteCount === 'number' && typeof data.outByteCount === 'number' && sendsAsItStands(raw)) {
    data._transform = passAsItStands;
  }
  stream.write(raw);
  stream.end();
}

export class SmtpPool {
  private readonly idle: Connection[] = [];
  private readonly waiting: Submission[] = [];
  private open = 0;
  private closed = false;

  constructor(private readonly options: SmtpPoolOptions) {}

  /** Resolves once the server accepted the message; rejects with nodemailer's error otherwise. */
  send(from: string, to: string, raw: string): Promise<void> {
    const envelope = envelopeFor(from, to);
    return new Promise((resolve, reject) => this.dispatch({ from: envelope.from, to: envelope.to, raw, resolve, reject, moved: false }));
  }

  /** Closes the free connections now and the others as their message ends; messages still waiting fail. */
  close(): void {
    this.closed = true;
    for (const submission of this.waiting.splice(0)) submission.reject(closedError());
    for (const c of this.idle.splice(0)) this.retire(c);
  }

  private dispatch(submission: Submission): void {
    if (this.closed) return submission.reject(closedError());
    let c: Connection | undefined;
    while ((c = this.idle.pop())) if (!c.dead) return this.transmit(c, submission);
    if (this.open < this.options.size) {
      this.open += 1;
      this.connect(submission);
    } else {
      this.waiting.push(submission);
    }
  }

  /** Opens a connection (greeting, EHLO, STARTTLS when offered, AUTH when configured) for `submission`. */
  private connect(submission: Submission): void {
    const o = this.options;
    const c = new Connection(
      new SMTPConnection({
        host: o.host,
        port: o.port,
        secure: o.secure,
        connectionTimeout: o.connectionTimeout,
        greetingTimeout: o.greetingTimeout,
        socketTimeout: o.socketTimeout,
      }),
    );
    let settled = false;
    const fail = (err: SmtpFailure) => {
      if (settled) return;
      settled = true;
      submission.reject(err);
      this.drop(c);
    };
    const ready = () => {
      settled = true;
      this.transmit(c, submission);
    };
    // A failure while a message is on the connection also reaches its send callback, which
    // decides. Otherwise (a free connection the server closed or that timed out, or one lost
    // during RSET) the connection is dropped here.
    const lost = (err: SmtpFailure) => {
      c.dead = true;
      if (!settled) return fail(err);
      if (c.busy || !c.counted) return;
      const i = this.idle.indexOf(c);
      if (i >= 0) this.idle.splice(i, 1);
      this.drop(c);
    };
    c.smtp.on('error', lost);
    c.smtp.once('end', () => lost(Object.assign(new Error('Connection closed unexpectedly'), { code: 'ECONNECTION' })));
    c.smtp.connect((err) => {
      if (settled) return;
      if (err) return fail(err as SmtpFailure);
      if (!o.auth || !c.smtp.allowsAuth) return ready();
      c.smtp.login({ user: o.auth.user, pass: o.auth.pass }, (loginErr) => (loginErr ? fail(loginErr as SmtpFailure) : ready()));
    });
  }

  /** Sends one message on connection `c` (MAIL FROM, RCPT TO, DATA). */
  private transmit(c: Connection, submission: Submission): void {
    const reused = c.sent > 0;
    c.sent += 1;
    let started = false;
    c.busy = true;
    // SMTPConnection pipes a message that has `pipe` into its DATA stream once the envelope is
    // accepted: this one writes the string there and says that it was asked to.
    const body = {
      pipe(stream: NodeJS.WritableStream) {
        started = true;
        writeData(stream, submission.raw);
      },
    };
    c.smtp.send({ from: submission.from, to: submission.to.slice() }, body as unknown as Readable, (err) => {
      c.busy = false;
      if (!err) {
        submission.resolve();
        return this.release(c);
      }
      const e = err as SmtpFailure;
      // Only a failure of the connection, not an answer (an SMTP reply to DATA came after the whole body).
      if (started && e.responseCode === undefined) e.halfSent = true;
      // Failures of the connection rather than answers about the message (421, closed, socket error, timeout).
      if (reused && !started && !submission.moved && isTransientError(e)) {
        submission.moved = true;
        this.retire(c);
        return this.dispatch(submission);
      }
      submission.reject(e);
      if ((e.code === 'EENVELOPE' || e.code === 'EMESSAGE') && e.responseCode !== 421 && !c.dead) {
        return c.smtp.reset((resetErr) => (resetErr ? this.drop(c) : this.release(c)));
      }
      this.drop(c);
    });
  }

  /** A connection is free again: the next waiting message, or the free list. */
  private release(c: Connection): void {
    if (c.dead || this.closed) return this.drop(c);
    const next = this.waiting.shift();
    if (next) return this.transmit(c, next);
    this.idle.push(c);
  }

  /** Closes a connection that is not on the free list and lets a waiting message open another. */
  private drop(c: Connection): void {
    if (!c.counted) return;
    this.retire(c);
    const next = this.waiting.shift();
    if (next) this.dispatch(next);
  }

  private retire(c: Connection): void {
    c.dead = true;
    c.smtp.close();
    this.forget(c);
  }

  private forget(c: Connection): void {
    if (!c.counted) return;
    c.counted = false;
    this.open -= 1;
  }
}

function closedError(): SmtpFailure {
  return Object.assign(new Error('the SMTP pool is closed'), { code: 'ECONNECTION' });
}
