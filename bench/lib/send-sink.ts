/**
 * The send benchmark's SMTP sink: smtp-server on 127.0.0.1 that accepts every message and
 * discards it, keeping only counters and the set of recipient addresses (to prove every
 * address got exactly one message). Runs as a child process of bench/send.ts — its CPU is
 * not on the sender's event loop — and answers over the IPC channel:
 *
 *   → { type: 'reset', keep?: number }   start a new phase (counters and address set cleared;
 *                                        the first `keep` raw messages are kept for checks)
 *   → { type: 'stats', prefix?: string, seconds?: true } ← { type: 'stats', ...SinkStats } (`withPrefix`:
 *                                        addresses received that start with `prefix`; `bySecond` with `seconds`)
 *   ← { type: 'listening', port }        once, at start
 */
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';

export interface SinkStats {
  /** Messages accepted in this phase (one per RCPT, i.e. per recipient). */
  received: number;
  /** Distinct recipient addresses (case-insensitive). */
  unique: number;
  duplicates: number;
  duplicateExamples: string[];
  /** Message bytes as received (after SMTP dot-unstuffing). */
  bytes: number;
  /** SMTP sessions opened in this phase. */
  connections: number;
  firstAt: number | null;
  lastAt: number | null;
  /** The sink's own CPU time in this phase (ms), user + system. */
  cpuMs: number;
  /** The first few raw messages of the phase. */
  samples: string[];
  /** Distinct addresses received that start with the prefix asked about. */
  withPrefix: number;
  /** Asked with `seconds`: messages received in each second of the phase, as [Unix second, count], in order. */
  bySecond?: Array<[number, number]>;
}

function startSink(): void {
  let phase = fresh(0);
  let cpuAtReset = process.cpuUsage();

  function fresh(keep: number) {
    return {
      keep,
      received: 0,
      bytes: 0,
      connections: 0,
      seen: new Set<string>(),
      duplicates: 0,
      duplicateExamples: [] as string[],
      firstAt: null as number | null,
      lastAt: null as number | null,
      samples: [] as string[],
      bySecond: new Map<number, number>(),
    };
  }

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    maxClients: 1000,
    size: 50 * 1024 * 1024,
    onConnect(_session, callback) {
      phase.connections += 1;
      callback();
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const p = phase;
      const keep = p.samples.length < p.keep;
      const chunks: Buffer[] = [];
      let bytes = 0;
      stream.on('data', (c: Buffer) => {
        bytes += c.length;
        if (keep) chunks.push(c);
      });
      stream.on('end', () => {
        const now = Date.now();
        p.firstAt ??= now;
        p.lastAt = now;
        const second = Math.floor(now / 1000);
        p.bySecond.set(second, (p.bySecond.get(second) ?? 0) + session.envelope.rcptTo.length);
        for (const r of session.envelope.rcptTo) {
          const address = r.address.toLowerCase();
          p.received += 1;
          p.bytes += bytes;
          if (p.seen.has(address)) {
            p.duplicates += 1;
            if (p.duplicateExamples.length < 10) p.duplicateExamples.push(address);
          } else p.seen.add(address);
        }
        if (keep) p.samples.push(Buffer.concat(chunks).toString('utf8'));
        callback();
      });
    },
  });
  server.on('error', (err) => process.stderr.write(`sink: ${err.message}\n`));

  process.on('message', (msg: { type: string; keep?: number; prefix?: string; seconds?: boolean }) => {
    if (msg.type === 'reset') {
      phase = fresh(msg.keep ?? 0);
      cpuAtReset = process.cpuUsage();
      process.send!({ type: 'reset' });
    } else if (msg.type === 'stats') {
      const cpu = process.cpuUsage(cpuAtReset);
      const stats: SinkStats = {
        received: phase.received,
        unique: phase.seen.size,
        duplicates: phase.duplicates,
        duplicateExamples: phase.duplicateExamples,
        bytes: phase.bytes,
        connections: phase.connections,
        firstAt: phase.firstAt,
        lastAt: phase.lastAt,
        cpuMs: Math.round((cpu.user + cpu.system) / 1000),
        samples: phase.samples,
        withPrefix: msg.prefix ? [...phase.seen].filter((a) => a.startsWith(msg.prefix!)).length : 0,
        ...(msg.seconds ? { bySecond: [...phase.bySecond].sort((a, b) => a[0] - b[0]) } : {}),
      };
      process.send!({ type: 'stats', ...stats });
    }
  });
  // The parent went away (crashed or killed): do not linger.
  process.on('disconnect', () => process.exit(0));

  server.listen(0, '127.0.0.1', () => {
    const address = server.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    process.send!({ type: 'listening', port });
  });
}

if (require.main === module) startSink();
