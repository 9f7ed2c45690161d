import type { Mailer, OutgoingMail } from '../../../src/mail/mailer';

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
