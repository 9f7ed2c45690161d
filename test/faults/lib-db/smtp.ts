import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Mailer, OutgoingMail } from '../../../src/mail/mailer';

/** A message the server answered 250 to after DATA: the only thing that counts as delivered. */
export interface Accepted {
  to: string;
  messageId: string;
  at: number;
}

/** The server's answer to one RCPT TO. */
export type RcptVerdict = 'accept' | { code: number; message: string };
/** What the server does after the client sent the message body: answer 250, or never answer. */
export type DataVerdict = 'accept' | 'hang';

export interface FaultySmtpOptions {
  /** Listen on this port (e.g. one the worker was already failing to reach). Default: any. */
  port?: number;
  rcpt?: (address: string, seen: number) => RcptVerdict;
  data?: (recipients: string[], seen: number) => DataVerdict;
}

export interface FaultySmtp {
  url: string;
  port: number;
  /** Messages answered 250 after DATA, in order. */
  accepted: Accepted[];
  /** RCPT TO commands seen per address (lower case), accepted or not. */
  rcptSeen: Map<string, number>;
  /** Message bodies received but never answered, per recipient. */
  hung: Map<string, number>;
  rcpt: NonNullable<FaultySmtpOptions['rcpt']>;
  data: NonNullable<FaultySmtpOptions['data']>;
  /** Accepted messages per recipient. */
  acceptedBy(address: string): Accepted[];
  close(): Promise<void>;
}

function headerValue(raw: string, name: string): string {
  const head = raw.split(/\r?\n\r?\n/, 1)[0];
  const m = new RegExp(`^${name}:[ \\t]*(.*(?:\\r?\\n[ \\t].*)*)`, 'im').exec(head);
  return m ? m[1].replace(/\r?\n[ \t]+/g, ' ').trim() : '';
}

/**
 * An SMTP server (smtp-server) whose answers the test decides: per RCPT TO (accept, 4xx, 5xx)
 * and per message after DATA (accept, or swallow the body and never answer — a server that
 * hangs mid-transaction). It records only what it really accepted.
 */
export async function startFaultySmtp(opts: FaultySmtpOptions = {}): Promise<FaultySmtp> {
  const accepted: Accepted[] = [];
  const rcptSeen = new Map<string, number>();
  const hung = new Map<string, number>();
  const dataSeen = new Map<string, number>();
  const self = {
    accepted,
    rcptSeen,
    hung,
    rcpt: opts.rcpt ?? (() => 'accept'),
    data: opts.data ?? (() => 'accept'),
  } as FaultySmtp;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    // Hung connections are cut this long after close() is asked.
    closeTimeout: 300,
    onRcptTo(address, _session, callback) {
      const key = address.address.toLowerCase();
      const seen = (rcptSeen.get(key) ?? 0) + 1;
      rcptSeen.set(key, seen);
      const verdict = self.rcpt(key, seen);
      if (verdict === 'accept') return callback();
      const err = Object.assign(new Error(verdict.message), { responseCode: verdict.code });
      return callback(err);
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const to = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
      const key = to.join(',');
      const seen = (dataSeen.get(key) ?? 0) + 1;
      dataSeen.set(key, seen);
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (self.data(to, seen) === 'hang') {
          // The whole body arrived; the server never says 250 (nor anything else).
          for (const t of to) hung.set(t, (hung.get(t) ?? 0) + 1);
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const messageId = headerValue(raw, 'Message-ID');
        for (const t of to) accepted.push({ to: t, messageId, at: Date.now() });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return Object.assign(self, {
    url: `smtp://127.0.0.1:${port}`,
    port,
    acceptedBy: (address: string) => accepted.filter((a) => a.to === address.toLowerCase()),
    close() {
      closing ??= new Promise<void>((resolve) => server.close(() => resolve()));
      return closing;
    },
  });
}

/** One call of Mailer.send as the worker made it. */
export interface Attempt {
  to: string;
  start: number;
  end: number;
  ok: boolean;
  error?: string;
  permanent?: boolean;
}

export interface RecordingMailer extends Mailer {
  attempts: Attempt[];
  attemptsFor(address: string): Attempt[];
}

/** Wraps the real mailer and records every attempt (when, how long, what came of it). */
export function recordingMailer(inner: Mailer): RecordingMailer {
  const attempts: Attempt[] = [];
  return {
    target: inner.target,
    attempts,
    attemptsFor: (address) => attempts.filter((a) => a.to === address.toLowerCase()),
    async send(mail: OutgoingMail) {
      const start = Date.now();
      try {
        await inner.send(mail);
        attempts.push({ to: mail.to.toLowerCase(), start, end: Date.now(), ok: true });
      } catch (err) {
        const e = err as { message?: string; permanent?: boolean };
        attempts.push({ to: mail.to.toLowerCase(), start, end: Date.now(), ok: false, error: e.message, permanent: e.permanent });
        throw err;
      }
    },
    close: () => inner.close(),
  };
}
