import fs from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import { ROOT } from './herald';
import { cpuMs } from './send-procs';

/** kB fields of /proc/<pid>/status (VmRSS, VmHWM, …). */
export function procStatus(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(\w+):\s+(\d+) kB/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

/**
 * Resets the kernel's peak-RSS mark of a process we own (Linux ≥ 4.0), so VmHWM read later
 * covers only what follows (and not, say, the start-up seeding).
 */
export function resetPeakRss(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10;

/** Samples a process's resident memory every `everyMs` until stopped; `peakAtMs`: when the sampled peak was seen, from the start. */
export function sampleRss(pid: number, everyMs = 100) {
  let peakKb = 0;
  let peakAtMs = 0;
  let samples = 0;
  /** [ms, MB] once a second: where in the run memory grew. */
  const timeline: Array<[number, number]> = [];
  const t0 = Date.now();
  const timer = setInterval(() => {
    try {
      const rss = procStatus(pid).VmRSS ?? 0;
      if (samples % Math.max(1, Math.round(1000 / everyMs)) === 0) timeline.push([Date.now() - t0, mb(rss)]);
      samples += 1;
      if (rss > peakKb) {
        peakKb = rss;
        peakAtMs = Date.now() - t0;
      }
    } catch {
      // the process is gone
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      let hwm = 0;
      try {
        hwm = procStatus(pid).VmHWM ?? 0;
      } catch {
        // gone
      }
      return { peakSampledMb: mb(peakKb), peakAtMs, vmHwmMb: mb(hwm), samples, timeline };
    },
  };
}

/**
 * Which statement Herald's sessions are running, every `everyMs`, named by `classify`: a
 * phase breakdown without instrumenting the server. Returns the first and last time each
 * phase was seen, relative to `t0`.
 */
export function samplePhases(c: Client, database: string, t0: number, classify: (query: string) => string | undefined, everyMs = 100) {
  const phases: Record<string, { firstMs: number; lastMs: number; samples: number }> = {};
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const { rows } = await c.query<{ query: string }>(
        `SELECT query FROM pg_stat_activity WHERE datname = $1 AND application_name = 'herald' AND state = 'active'`,
        [database],
      );
      const now = Date.now() - t0;
      for (const r of rows) {
        const name = classify(r.query);
        if (!name) continue;
        const p = (phases[name] ??= { firstMs: now, lastMs: now, samples: 0 });
        p.lastMs = now;
        p.samples += 1;
      }
    } catch {
      // sampling is best effort
    } finally {
      busy = false;
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return phases;
    },
  };
}

/** Writes bench/out/<name>.json and returns its path. */
export function writeResult(name: string, result: unknown): string {
  const dir = path.join(ROOT, 'bench', 'out');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  return file;
}

export const seconds = (ms: number) => Math.round(ms) / 1000;

/** Busy share of all CPUs over `ms`, from /proc/stat (0–1). */
export async function cpuBusy(ms = 1000): Promise<number> {
  const read = () => {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3] + (f[4] ?? 0);
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  };
  const a = read();
  await new Promise((r) => setTimeout(r, ms));
  const b = read();
  return b.total === a.total ? 0 : 1 - (b.idle - a.idle) / (b.total - a.total);
}

/**
 * On a shared machine, waits (up to `maxWaitMs`) until the CPUs are mostly idle before a
 * timed run, so other people's work does not end up in the figures; returns the busy share
 * seen last (it is recorded with the result).
 */
export async function waitForQuiet(maxWaitMs = 180_000, threshold = 0.2): Promise<number> {
  const deadline = Date.now() + maxWaitMs;
  let busy = await cpuBusy();
  while (busy > threshold && Date.now() < deadline) busy = await cpuBusy(2000);
  return Math.round(busy * 1000) / 1000;
}

/** The middle run (the lower middle of an even count): what every target is judged on. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

/** Best (lowest, or highest with `lowIsBest` false), median and every run of a figure. */
export const bestMedian = (xs: number[], lowIsBest = true) => ({ best: lowIsBest ? Math.min(...xs) : Math.max(...xs), median: median(xs), runs: xs });

/** utime + stime of a process, in seconds (0 when it is gone). */
export function processCpu(pid: number): number {
  const ms = cpuMs(pid);
  return Number.isNaN(ms) ? 0 : ms / 1000;
}

const USER_HZ = 100;

/**
 * CPU seconds so far of the whole PostgreSQL server on this machine: the postmaster, its live
 * children (backends, autovacuum, checkpointer, …) and the children it has reaped (cutime +
 * cstime), so a backend that came and went in between is counted too. The difference of two
 * readings is what the server did in between (for every database on it: keep the machine quiet).
 */
export function postgresCpu(): number {
  const procs = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  const stats = new Map<number, { comm: string; ppid: number; fields: string[] }>();
  for (const d of procs) {
    try {
      const text = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const comm = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const fields = text.slice(text.lastIndexOf(') ') + 2).split(' ');
      stats.set(Number(d), { comm, ppid: Number(fields[1]), fields });
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  for (const [pid, s] of stats) {
    if (s.comm !== 'postgres' || stats.get(s.ppid)?.comm === 'postgres') continue;
    // A postmaster: itself, what it reaped, and its live children.
    total += (Number(s.fields[11]) + Number(s.fields[12]) + Number(s.fields[13]) + Number(s.fields[14])) / USER_HZ;
    for (const c of stats.values()) if (c.ppid === pid) total += (Number(c.fields[11]) + Number(c.fields[12])) / USER_HZ;
  }
  return total;
}

/** CPU seconds of Herald's process and of the PostgreSQL server since `start()`: call `read()` for the figures so far. */
export function cpuMeter(pid: number) {
  const at = { herald: processCpu(pid), postgres: postgresCpu() };
  return { read: () => ({ heraldS: Math.round((processCpu(pid) - at.herald) * 100) / 100, postgresS: Math.round((postgresCpu() - at.postgres) * 100) / 100 }) };
}
