import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';

/**
 * The tests' SMTP server: a real one in-process (smtp-server) whose answers the test decides — per
 * RCPT TO (accept, a 4xx or a 5xx) and per message after DATA (accept, later, or never: a server that
 * hangs mid-transaction) — and that records only what it really accepted. The delivery tests read
 * the messages; the fault tests count what was accepted, when, and what was refused or held. The
 * fault tests' 10,000-message sink runs the same server in a child process (test/faults/lib/sink-child.ts).
 */

/** A message as the sink accepted it. */
export interface Received {
  from: string;
  to: string[];
  raw: string;
}

/** One recipient of a message the sink answered 250 to after DATA: the only thing that counts as delivered. */
export interface Accepted {
  to: string;
  messageId: string;
  at: number;
}

/** The answer to one RCPT TO: accept, or an SMTP error with this code. A promise holds the answer until it settles. */
export type Verdict = 'accept' | { code: number; message: string };
/** What the sink does once the message's body is in: answer 250, an SMTP error with this code, or never answer. A promise holds the answer. */
export type DataVerdict = 'accept' | 'hang' | { code: number; message: string };

export interface SmtpSinkOptions {
  /** Listen on this port (e.g. one a worker was already failing to reach). Default: any. */
  port?: number;
  /** Keep each accepted message's text in `received` (default); off for a sink that takes thousands. */
  keepMessages?: boolean;
  /** Called as each message is accepted (after its 250). */
  onAccepted?: (to: string[], at: number) => void;
  rcpt?: SmtpSink['rcpt'];
  data?: SmtpSink['data'];
}

export interface SmtpSink {
  url: string;
  port: number;
  /** Messages accepted, whole, in order (unless `keepMessages` is off). */
  received: Received[];
  /** Recipients of accepted messages, in order. */
  accepted: Accepted[];
  /** RCPT TO commands seen per address (lower case), accepted or not. */
  rcptSeen: Map<string, number>;
  /** Message bodies received but never answered, per recipient. */
  hung: Map<string, number>;
  /** Decides each RCPT TO (`address` lower-cased; `seen`: how many times it was asked, this one included). Default: accept. */
  rcpt: (address: string, seen: number) => Verdict | Promise<Verdict>;
  /** Decides each message after its body (`seen`: times these recipients sent one; `raw`: the message as received). Default: accept. */
  data: (recipients: string[], seen: number, raw: string) => DataVerdict | Promise<DataVerdict>;
  /** Accepted messages per recipient. */
  acceptedBy(address: string): Accepted[];
  parsed(): Promise<ParsedMail[]>;
  byRecipient(): Promise<Map<string, ParsedMail[]>>;
  close(): Promise<void>;
}

function headerValue(raw: string, name: string): string {
  const head = raw.split(/\r?\n\r?\n/, 1)[0];
  const m = new RegExp(`^${name}:[ \\t]*(.*(?:\\r?\\n[ \\t].*)*)`, 'im').exec(head);
  return m ? m[1].replace(/\r?\n[ \t]+/g, ' ').trim() : '';
}

function bump(map: Map<string, number>, key: string): number {
  const n = (map.get(key) ?? 0) + 1;
  map.set(key, n);
  return n;
}

export async function startSmtpSink(opts: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const received: Received[] = [];
  const accepted: Accepted[] = [];
  const rcptSeen = new Map<string, number>();
  const hung = new Map<string, number>();
  const dataSeen = new Map<string, number>();
  const closed = new Set<string>();
  const sink = {
    received,
    accepted,
    rcptSeen,
    hung,
    rcpt: opts.rcpt ?? (() => 'accept'),
    data: opts.data ?? (() => 'accept'),
  } as Partial<SmtpSink> as SmtpSink;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    maxClients: 1000,
    // Hung connections are cut this long after close() is asked.
    closeTimeout: 300,
    onClose(session) {
      closed.add(session.id);
    },
    onRcptTo(address, _session, callback) {
      const key = address.address.toLowerCase();
      void Promise.resolve(sink.rcpt(key, bump(rcptSeen, key))).then((verdict) => {
        if (verdict === 'accept') return callback();
        return callback(Object.assign(new Error(verdict.message), { responseCode: verdict.code }));
      });
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const to = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
      const seen = bump(dataSeen, to.join(','));
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        void Promise.resolve(sink.data(to, seen, raw)).then((verdict) => {
          if (verdict === 'hang') {
            // The whole body arrived; the server never says 250 (nor anything else).
            for (const t of to) bump(hung, t);
            return;
          }
          if (verdict !== 'accept') return callback(Object.assign(new Error(verdict.message), { responseCode: verdict.code }));
          // A sender gone while its message was held never saw a 250: not accepted.
          if (closed.has(session.id)) return;
          const at = Date.now();
          const messageId = headerValue(raw, 'Message-ID');
          for (const t of to) accepted.push({ to: t, messageId, at });
          if (opts.keepMessages !== false) {
            received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), raw });
          }
          callback();
          opts.onAccepted?.(to, at);
        });
      });
    },
  });
  server.on('error', () => undefined); // a client cut off mid-command; the test sees what was accepted
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return Object.assign(sink, {
    url: `smtp://127.0.0.1:${port}`,
    port,
    acceptedBy: (address: string) => accepted.filter((a) => a.to === address.toLowerCase()),
    parsed: () => Promise.all(received.map((m) => simpleParser(m.raw))),
    async byRecipient() {
      const map = new Map<string, ParsedMail[]>();
      for (const m of received) {
        const parsed = await simpleParser(m.raw);
        for (const to of m.to) map.set(to.toLowerCase(), [...(map.get(to.toLowerCase()) ?? []), parsed]);
      }
      return map;
    },
    close() {
      closing ??= new Promise<void>((resolve) => server.close(() => resolve()));
      return closing;
    },
  });
}
