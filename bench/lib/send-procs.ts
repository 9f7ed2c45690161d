import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './herald';

/**
 * Child processes of the send benchmark (sink, baseline, Herald's worker), optionally pinned
 * to a CPU with taskset (which execs, so the pid is node's), every one registered so the
 * benchmark can kill what is left on any exit.
 */
export interface Child {
  name: string;
  pid: number;
  child: ChildProcess;
  exited: Promise<number | null>;
  /** The last 20 kB the process wrote. */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code and how long it took. */
  stop(graceMs?: number): Promise<{ code: number | null; ms: number }>;
}

const live = new Set<Child>();

/**
 * On Ctrl-C or SIGTERM, `cleanup` (children, connections, the bench database) and exit 130; on
 * any exit, the children are killed.
 */
export function cleanUpOnStop(cleanup: () => Promise<void>): void {
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  process.once('SIGTERM', () => void cleanup().finally(() => process.exit(130)));
  process.once('exit', killAll);
}

export function killAll(): void {
  for (const c of live) {
    try {
      c.child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

const hasTaskset = (() => {
  try {
    return fs.existsSync('/usr/bin/taskset') || fs.existsSync('/bin/taskset');
  } catch {
    return false;
  }
})();

export interface SpawnOptions {
  /** CPU list for taskset (e.g. "0" or "1"); undefined = unpinned. */
  cpu?: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
  ipc?: boolean;
  /** Run a .ts file through tsx's loader. */
  ts?: boolean;
  /** A command node runs under (e.g. valgrind and its options), after taskset; the pid stays node's when it does not fork. */
  wrap?: string[];
}

export function spawnNode(name: string, script: string, args: string[], opts: SpawnOptions = {}): Child {
  const nodeArgs = [...(opts.ts ? ['--import', 'tsx'] : []), ...(opts.nodeArgs ?? [])];
  const argv = [...nodeArgs, script, ...args];
  const pinned = opts.cpu !== undefined && hasTaskset && os.cpus().length > 1;
  const run = [...(opts.wrap ?? []), process.execPath, ...argv];
  const [cmd, cmdArgs] = pinned ? ['taskset', ['-c', opts.cpu!, ...run]] : [run[0], run.slice(1)];
  const stdio: StdioOptions = opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'];
  const child = spawn(cmd, cmdArgs as string[], { cwd: ROOT, env: { ...process.env, ...opts.env }, stdio });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const c: Child = {
    name,
    pid: child.pid!,
    child,
    exited,
    output: () => output,
    async stop(graceMs = 60_000) {
      const started = Date.now();
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      live.delete(c);
      return { code: child.exitCode, ms: Date.now() - started };
    },
  };
  live.add(c);
  void exited.then(() => live.delete(c));
  return c;
}

/** The next IPC message of `type` from a child (rejects if it exits first or after `timeoutMs`). */
export function nextMessage<T>(c: Child, type: string, timeoutMs = 600_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type?: string }) => {
      if (m?.type !== type) return;
      cleanup();
      resolve(m as T);
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`${c.name} exited (${code}) before sending "${type}":\n${c.output()}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${c.name}: no "${type}" within ${timeoutMs} ms`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      c.child.off('message', onMessage);
      c.child.off('exit', onExit);
    };
    c.child.on('message', onMessage);
    c.child.once('exit', onExit);
  });
}

/** Asks a child over IPC and waits for the answer of the same type. */
export async function ask<T>(c: Child, msg: { type: string } & Record<string, unknown>, timeoutMs = 30_000): Promise<T> {
  const answer = nextMessage<T>(c, msg.type, timeoutMs);
  c.child.send(msg);
  return answer;
}

const TICK_MS = 1000 / 100; // USER_HZ is 100 on Linux

/** CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat. */
export function cpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): utime is field 14, stime field 15.
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return NaN;
  }
}

/** Busy CPU time of the whole machine (ms, all cores), from /proc/stat. */
export function machineBusyMs(): number {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return (user + nice + system + irq + softirq + steal) * TICK_MS;
}

export const BENCH_LIB = path.join(ROOT, 'bench', 'lib');
