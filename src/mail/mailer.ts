import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Stream } from '../routes/types';
import { SmtpPool, type SmtpPoolOptions } from './smtp-pool';

/** One message on its way out: the SMTP envelope and the raw MIME bytes. */
export interface OutgoingMail {
  from: string;
  to: string;
  raw: string;
  /** The account it is sent for (none: Herald's own mail): its pinned routes (src/routes/pinning.ts), its `route.blocked` event. */
  userId?: number;
  /** `marketing` (a send's or an automation's, the default) or `system` (Herald's own mail): the routes that may carry it. */
  stream?: Stream;
}

/**
 * Why a message waits instead of going (src/routes/router.ts): no route may carry it, its routes
 * are at their quotas or warm-up cap, throttled, blocked by the recipient's provider, or down.
 */
export type DeferReason = 'no_route' | 'quota' | 'warmup' | 'throttled' | 'blocked' | 'down';

/**
 * Why a message was not accepted. `permanent` (a 5xx answer to this message's RCPT TO or DATA)
 * counts as a bounce and is never retried; anything else (4xx, refused connection, timeout, and a
 * 5xx about the session or the sender — a refused login, a server refusing service, MAIL FROM
 * refused) is retried with backoff: it says nothing about the recipient.
 */
export class MailError extends Error {
  /** The route that tried the message (src/routes/router.ts), for its event's `data.route`. */
  readonly route?: string;
  /**
   * A deferral: the message was not tried for a reason of the routes (none with room, throttled,
   * blocked, down). It waits until then, its attempt given back; never a bounce, never a suppression.
   */
  readonly deferUntil?: Date;
  readonly reason?: DeferReason;

  constructor(
    message: string,
    readonly permanent: boolean,
    readonly code?: number,
    more: { route?: string; deferUntil?: Date; reason?: DeferReason } = {},
  ) {
    super(message);
    this.route = more.route;
    this.deferUntil = more.deferUntil;
    this.reason = more.reason;
  }
}

export interface Mailer {
  /** Resolves once the server (or the outbox) accepted the message, with the route it went through; throws MailError otherwise. */
  send(mail: OutgoingMail): Promise<{ route?: string } | void>;
  /**
   * Whether some route carrying `stream` has room now (null), or the earliest time one will: the
   * Sender waits instead of claiming rows that could only be deferred. Absent: always room.
   */
  room?(stream: Stream): Promise<Date | null>;
  close(): Promise<void>;
  /** For logs: where mail goes. */
  readonly target: string;
  /** Mail is written to files, not sent (no SMTP_URL): nobody receives it, so Herald's own mail is logged too (system-mail.ts). */
  readonly local?: boolean;
}

interface SmtpErrorLike {
  responseCode?: number;
  code?: string;
  /** The SMTP command answered (nodemailer's `command`: 'MAIL FROM', 'RCPT TO', 'DATA', 'CONN', …). */
  command?: string;
  message?: string;
  response?: string;
}

/** nodemailer's codes for an answer to the message's envelope (MAIL FROM, RCPT TO) and to its DATA. */
const MESSAGE_REFUSED = new Set(['EENVELOPE', 'EMESSAGE']);

export function classifySmtpError(err: unknown): MailError {
  const e = (err ?? {}) as SmtpErrorLike;
  const code = typeof e.responseCode === 'number' ? e.responseCode : undefined;
  const text = (e.response ?? e.message ?? String(err)).slice(0, 500);
  // A refused MAIL FROM refuses the sender (a relay's policy), the same for every recipient.
  const permanent = code !== undefined && code >= 500 && code < 600 && MESSAGE_REFUSED.has(e.code ?? '') && e.command !== 'MAIL FROM';
  return new MailError(text, permanent, code);
}

export interface SmtpOptions {
  poolSize?: number;
  /** Socket inactivity timeout: a server that hangs mid-DATA fails the message after this. */
  socketTimeoutMs?: number;
}

/** The SMTP pool's settings for `smtp://user:pass@host:port` (or `smtps://`). */
export function smtpPoolOptions(smtpUrl: string, opts: SmtpOptions = {}): SmtpPoolOptions {
  const url = new URL(smtpUrl);
  const secure = url.protocol === 'smtps:';
  return {
    size: opts.poolSize ?? 5,
    // An IPv6 literal without its brackets (URL keeps them in hostname).
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : undefined,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: opts.socketTimeoutMs ?? 30_000,
  };
}

/**
 * Pooled SMTP from `smtp://user:pass@host:port` (or `smtps://`): nodemailer's SMTP connections,
 * handed each message's envelope and finished bytes (src/mail/smtp-pool.ts).
 */
export function smtpMailer(smtpUrl: string, opts: SmtpOptions = {}): Mailer {
  const url = new URL(smtpUrl);
  const pool = new SmtpPool(smtpPoolOptions(smtpUrl, opts));
  return {
    target: `${url.protocol}//${url.host}`,
    async send(mail) {
      try {
        await pool.send(mail.from, mail.to, mail.raw);
      } catch (err) {
        throw classifySmtpError(err);
      }
    },
    async close() {
      pool.close();
    },
  };
}

/**
 * Without SMTP_URL, mail is written as `.eml` files to DATA_DIR/outbox (written to a temporary
 * name and renamed, so a reader never sees half a message).
 */
export function outboxMailer(dir: string): Mailer {
  let ready: Promise<unknown> | undefined;
  return {
    target: dir,
    local: true,
    async send(mail) {
      ready ??= fs.mkdir(dir, { recursive: true });
      await ready;
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${crypto.randomBytes(6).toString('hex')}.eml`;
      const tmp = path.join(dir, `.${name}.tmp`);
      try {
        await fs.writeFile(tmp, mail.raw);
        await fs.rename(tmp, path.join(dir, name));
      } catch (err) {
        throw new MailError(`outbox write failed: ${(err as Error).message}`, false);
      }
    },
    async close() {},
  };
}
