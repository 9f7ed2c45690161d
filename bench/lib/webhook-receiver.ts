/**
 * The pipeline benchmark's webhook receiver: a plain node:http server on 127.0.0.1 that
 * verifies every request's signature with the `standardwebhooks` package (as README.md,
 * "Webhooks", tells users to), answers 204 (400 on a bad signature), and keeps counters and,
 * per event id, when it first arrived. Runs as a child process of bench/send-pipeline.ts (its
 * CPU is not on the harness's event loop) and answers over the IPC channel:
 *
 *   → { type: 'reset', secret }           a new endpoint's secret; counters cleared
 *   → { type: 'stats', withIds?: true }   ← { type: 'stats', ...ReceiverStats }
 *   ← { type: 'listening', port }         once, at start
 */
import http from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface ReceiverStats {
  /** Requests with a valid signature. */
  requests: number;
  badSignatures: number;
  /** Distinct event ids received. */
  events: number;
  /** Events received again (a retried batch). */
  duplicateEvents: number;
  byType: Record<string, number>;
  /** Largest batch (events in one request). */
  largestBatch: number;
  firstAt: number | null;
  lastAt: number | null;
  /** [event id, first received at (ms)] of every event, when asked withIds. */
  received?: Array<[number, number]>;
  cpuMs: number;
}

interface Payload {
  type: string;
  data: { events: Array<{ id: number; type: string }> };
}

function startReceiver(): void {
  let wh: Webhook | null = null;
  let phase = fresh();
  let cpuAtReset = process.cpuUsage();

  function fresh() {
    return {
      requests: 0,
      badSignatures: 0,
      duplicateEvents: 0,
      byType: {} as Record<string, number>,
      largestBatch: 0,
      seen: new Map<number, number>(),
      firstAt: null as number | null,
      lastAt: null as number | null,
    };
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const p = phase;
      const body = Buffer.concat(chunks).toString('utf8');
      let payload: Payload;
      try {
        if (!wh) throw new Error('no secret yet');
        payload = wh.verify(body, req.headers as Record<string, string>) as Payload;
      } catch {
        p.badSignatures += 1;
        res.writeHead(400).end();
        return;
      }
      const now = Date.now();
      p.requests += 1;
      p.firstAt ??= now;
      p.lastAt = now;
      p.largestBatch = Math.max(p.largestBatch, payload.data.events.length);
      for (const e of payload.data.events) {
        if (p.seen.has(e.id)) {
          p.duplicateEvents += 1;
          continue;
        }
        p.seen.set(e.id, now);
        p.byType[e.type] = (p.byType[e.type] ?? 0) + 1;
      }
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 30_000;

  process.on('message', (msg: { type: string; secret?: string; withIds?: boolean }) => {
    if (msg.type === 'reset') {
      wh = msg.secret ? new Webhook(msg.secret) : null;
      phase = fresh();
      cpuAtReset = process.cpuUsage();
      process.send!({ type: 'reset' });
    } else if (msg.type === 'stats') {
      const cpu = process.cpuUsage(cpuAtReset);
      const stats: ReceiverStats = {
        requests: phase.requests,
        badSignatures: phase.badSignatures,
        events: phase.seen.size,
        duplicateEvents: phase.duplicateEvents,
        byType: phase.byType,
        largestBatch: phase.largestBatch,
        firstAt: phase.firstAt,
        lastAt: phase.lastAt,
        received: msg.withIds ? [...phase.seen] : undefined,
        cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      };
      process.send!({ type: 'stats', ...stats });
    }
  });
  process.on('disconnect', () => process.exit(0));

  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.send!({ type: 'listening', port: typeof address === 'object' && address ? address.port : 0 });
  });
}

if (require.main === module) startReceiver();
