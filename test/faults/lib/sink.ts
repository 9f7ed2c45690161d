import path from 'node:path';
import { spawnNode, type Proc } from './processes';

/** One accepted message, as the sink reported it. */
export interface Accepted {
  /** Recipient address, lower-cased. */
  to: string;
  /** Which of the sink's listeners (ports) took it: tells workers apart. */
  listener: number;
  /** When the sink answered 250 (ms since the epoch, the sink's clock = ours). */
  at: number;
}

export interface Sink {
  /** `smtp://127.0.0.1:<port>` of each listener. */
  urls: string[];
  /** Every accepted message reported so far (see `sync`). */
  accepted: Accepted[];
  /** Waits until every message the sink accepted before this call is in `accepted`. */
  sync(): Promise<void>;
  /**
   * The sink accepts `after` more messages at once, then waits `ms` before accepting each
   * (keeps a worker's messages in flight: a SIGKILL then lands mid-batch). `ms` 0 = no delay.
   */
  setDelay(ms: number, after?: number): Promise<void>;
  /** Messages per recipient. */
  counts(filter?: (a: Accepted) => boolean): Map<string, number>;
  proc: Proc;
}

/** Starts the child-process SMTP sink (sink-child.ts) with `listeners` ports. */
export async function startSink(listeners = 1, delayMs = 0): Promise<Sink> {
  const proc = spawnNode('smtp-sink', path.join(__dirname, 'sink-child.ts'), [String(listeners), String(delayMs)], { ipc: true, ts: true });
  const accepted: Accepted[] = [];
  let seq = 0;
  const waiting = new Map<number, () => void>();
  const ports = await new Promise<number[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the SMTP sink did not start within 15 s:\n${proc.output()}`)), 15_000);
    proc.child.on('message', (m: { type: string; ports?: number[]; items?: Array<[string, number, number]>; id?: number }) => {
      if (m.type === 'ready') {
        clearTimeout(timer);
        resolve(m.ports!);
      } else if (m.type === 'got') {
        for (const [to, listener, at] of m.items!) accepted.push({ to, listener, at });
      } else if (m.type === 'synced' || m.type === 'delayed') {
        waiting.get(m.id!)?.();
        waiting.delete(m.id!);
      }
    });
    void proc.exited.then(() => reject(new Error(`the SMTP sink exited:\n${proc.output()}`)));
  });
  const ask = (msg: Record<string, unknown>) =>
    new Promise<void>((resolve, reject) => {
      if (!proc.alive()) return reject(new Error(`the SMTP sink is gone:\n${proc.output()}`));
      const id = ++seq;
      const timer = setTimeout(() => reject(new Error('the SMTP sink did not answer within 10 s')), 10_000);
      waiting.set(id, () => {
        clearTimeout(timer);
        resolve();
      });
      proc.child.send({ ...msg, id });
    });
  return {
    urls: ports.map((p) => `smtp://127.0.0.1:${p}`),
    accepted,
    proc,
    sync: () => ask({ type: 'sync' }),
    setDelay: (ms, after = 0) => ask({ type: 'delay', ms, after }),
    counts(filter) {
      const map = new Map<string, number>();
      for (const a of accepted) if (!filter || filter(a)) map.set(a.to, (map.get(a.to) ?? 0) + 1);
      return map;
    },
  };
}
