import { simpleParser, type ParsedMail } from 'mailparser';
import type { Mailer, OutgoingMail } from '../../src/mail/mailer';

/** A mailer that keeps what it is given, for tests that read what a recipient would get. */
export interface MemoryMailer extends Mailer {
  sent: OutgoingMail[];
  parsed(): Promise<ParsedMail[]>;
  clear(): void;
}

export function memoryMailer(): MemoryMailer {
  const sent: OutgoingMail[] = [];
  return {
    target: 'memory',
    sent,
    async send(mail) {
      sent.push(mail);
    },
    async close() {},
    parsed: () => Promise.all(sent.map((m) => simpleParser(m.raw))),
    clear: () => void sent.splice(0, sent.length),
  };
}
