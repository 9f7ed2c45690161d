import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';

export interface Received {
  from: string;
  to: string[];
  raw: string;
}

/** What the sink answers for a recipient: accept, or an SMTP error with this code. */
export type Verdict = 'accept' | { code: number; message: string };

export interface SmtpSink {
  url: string;
  port: number;
  received: Received[];
  /** Decide per RCPT TO (default: accept everything); a promise holds the answer until it settles. */
  rcpt: (address: string) => Verdict | Promise<Verdict>;
  parsed(): Promise<ParsedMail[]>;
  byRecipient(): Promise<Map<string, ParsedMail[]>>;
  close(): Promise<void>;
}

/** A real SMTP server in-process (smtp-server), keeping every message it accepted. */
export async function startSmtpSink(): Promise<SmtpSink> {
  const received: Received[] = [];
  const sink: Partial<SmtpSink> = { received, rcpt: () => 'accept' };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      void Promise.resolve(sink.rcpt!(address.address)).then((verdict) => {
        if (verdict === 'accept') return callback();
        const err = new Error(verdict.message) as Error & { responseCode: number };
        err.responseCode = verdict.code;
        return callback(err);
      });
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return Object.assign(sink, {
    url: `smtp://127.0.0.1:${port}`,
    port,
    parsed: () => Promise.all(received.map((m) => simpleParser(m.raw))),
    async byRecipient() {
      const map = new Map<string, ParsedMail[]>();
      for (const m of received) {
        const parsed = await simpleParser(m.raw);
        for (const to of m.to) map.set(to.toLowerCase(), [...(map.get(to.toLowerCase()) ?? []), parsed]);
      }
      return map;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }) as SmtpSink;
}
