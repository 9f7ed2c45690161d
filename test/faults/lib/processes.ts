import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { staleReason } from '../../../scripts/build';
import { patient, sleep } from '../../helpers/wait';
import { TEST_MASTER_KEY } from '../../helpers/master-key';

/**
 * Herald as an operator runs it, for the fault tests: the compiled CLI (`node bin/herald.js
 * worker|serve`) in child processes that the test can SIGKILL or SIGTERM. Every child is
 * registered; `killChildren()` (wired into afterAll by `useChildren()`) SIGKILLs whatever is
 * still alive, so a failing test never leaves a worker sending into the next file's sink.
 */
export const ROOT = path.resolve(__dirname, '..', '..', '..');
/**
 * The package whose build the children run: this checkout, or HERALD_FAULTS_BUILD (a copy of
 * the package with its own dist/, e.g. one broken on purpose to see a test fail).
 */
const BUILD = process.env.HERALD_FAULTS_BUILD ? path.resolve(process.env.HERALD_FAULTS_BUILD) : ROOT;
const BIN = path.join(BUILD, 'bin', 'herald.js');
const CLI = path.join(BUILD, 'dist', 'src', 'cli.js');

/**
 * Fails with an explanation when the CLI has not been compiled (`npm ci` builds it via prepare),
 * or, for this checkout, was compiled from other sources than the ones here (scripts/build.js's
 * stamp): the fault tests would otherwise test yesterday's code after an edit.
 */
export function requireBuilt(): void {
  if (!fs.existsSync(CLI)) {
    throw new Error(
      `The fault tests run the compiled CLI, but ${CLI} does not exist. ` +
        'Run `npm run build` first (`npm ci` / `npm install` build it through the prepare script).',
    );
  }
  if (BUILD !== ROOT) return;
  const stale = staleReason(ROOT);
  if (stale) throw new Error(`The fault tests run the compiled CLI, but ${stale}. Run \`npm run build\` first.`);
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Proc {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Resolves when the process has exited. */
  exited: Promise<Exit>;
  alive(): boolean;
  /** The last 20 kB the process wrote on stdout and stderr (for failure messages). */
  output(): string;
  /** Resolves with the first output line that matches, rejects on exit or after `timeoutMs`. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<string>;
  /** Sends a signal and waits for the exit, at most `timeoutMs` (then SIGKILL and reject). */
  signalAndWait(signal: NodeJS.Signals, timeoutMs: number): Promise<Exit & { ms: number }>;
}

const live = new Set<Proc>();

/** SIGKILLs every child still alive and waits for them to be gone. */
export async function killChildren(): Promise<void> {
  const all = [...live];
  for (const p of all) if (p.alive()) p.child.kill('SIGKILL');
  await Promise.all(all.map((p) => p.exited));
  live.clear();
}

/** Registers the cleanup for this test file (afterAll, and the jest worker's own exit). */
export function useChildren(): void {
  afterAll(killChildren);
}

process.once('exit', () => {
  for (const p of live) if (p.alive()) p.child.kill('SIGKILL');
});

export interface SpawnOptions {
  env?: Record<string, string>;
  ipc?: boolean;
  /** Run a .ts file through tsx's loader. */
  ts?: boolean;
}

/** The few variables a child needs from ours; everything Herald reads is given explicitly. */
function baseEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) if (process.env[k]) out[k] = process.env[k]!;
  return out;
}

export function spawnNode(name: string, script: string, args: string[], opts: SpawnOptions = {}): Proc {
  const argv = [...(opts.ts ? ['--import', 'tsx'] : []), script, ...args];
  const child = spawn(process.execPath, argv, {
    cwd: ROOT,
    env: { ...baseEnv(), ...opts.env },
    stdio: opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<(chunk: string) => void>();
  const keep = (d: Buffer) => {
    const s = d.toString();
    output = (output + s).slice(-20_000);
    for (const l of listeners) l(s);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let done = false;
  const exited = new Promise<Exit>((resolve) =>
    child.once('exit', (code, signal) => {
      done = true;
      resolve({ code, signal });
    }),
  );
  const proc: Proc = {
    name,
    pid: child.pid!,
    child,
    exited,
    alive: () => !done,
    output: () => output,
    waitForOutput(pattern, timeoutMs) {
      return new Promise((resolve, reject) => {
        let pending = '';
        const check = (chunk: string) => {
          pending += chunk;
          const lines = pending.split('\n');
          pending = lines.pop() ?? '';
          const hit = lines.find((l) => pattern.test(l));
          if (hit !== undefined) finish(() => resolve(hit));
        };
        const timer = setTimeout(
          () => finish(() => reject(new Error(`${name}: no output matching ${pattern} within ${timeoutMs} ms. Output:\n${output}`))),
          timeoutMs,
        );
        const finish = (fn: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          fn();
        };
        listeners.add(check);
        void exited.then((e) =>
          finish(() => reject(new Error(`${name} exited (code ${e.code}, signal ${e.signal}) before printing ${pattern}. Output:\n${output}`))),
        );
        // Lines already printed before the call count too.
        const earlier = output.split('\n').slice(0, -1).find((l) => pattern.test(l));
        if (earlier !== undefined) finish(() => resolve(earlier));
      });
    },
    async signalAndWait(signal, timeoutMs) {
      const started = Date.now();
      if (done) throw new Error(`${name} had already exited. Output:\n${output}`);
      child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), patient(timeoutMs))));
      const result = await Promise.race([exited, timedOut]);
      clearTimeout(timer);
      if (result === 'timeout') {
        child.kill('SIGKILL');
        await exited;
        throw new Error(`${name} did not exit within ${timeoutMs} ms of ${signal}. Output:\n${output}`);
      }
      return { ...result, ms: Date.now() - started };
    },
  };
  live.add(proc);
  return proc;
}

const tempDirs = new Set<string>();
process.once('exit', () => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** A temporary DATA_DIR of the test's own (uploads, outbox), removed at exit. */
export function tempDataDir(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `herald-${label}-`));
  tempDirs.add(dir);
  return dir;
}

/**
 * Herald's environment for a fault test child: the test's database and sink, short timeouts
 * so faults show up within the test's time budget. `env` overrides or adds.
 */
export function heraldEnv(databaseUrl: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    // Longer than a batch takes on a loaded machine (TEST_PATIENCE): a lease must not run out mid-batch.
    SEND_LEASE_MS: String(patient(3000)),
    SMTP_TIMEOUT_MS: '2000',
    WORKER_POLL_MS: '50',
    RETRY_BASE_MS: '200',
    DB_POOL_MAX: '4',
    PUBLIC_URL: 'http://herald.test',
    DATA_DIR: tempDataDir('child'),
    HERALD_MASTER_KEY: TEST_MASTER_KEY,
    PORT: '0',
    ...env,
  };
}

/**
 * `herald worker` in a child process. It logs at info level (a handful of lines per send) so
 * that `ready` can wait for "Herald worker started": migrations and seeds have run and the
 * worker loop is polling.
 */
export function startWorker(name: string, env: Record<string, string>): Proc & { ready: Promise<string> } {
  requireBuilt();
  const proc = spawnNode(name, BIN, ['worker'], { env: { ...env, LOG_LEVEL: env.LOG_LEVEL === 'warn' ? 'info' : env.LOG_LEVEL } });
  const ready = proc.waitForOutput(/Herald worker started/, 30_000);
  ready.catch(() => undefined); // a test that never awaits it must not see an unhandled rejection
  return Object.assign(proc, { ready });
}

/** `herald serve` in a child process; `ready` resolves once it answers HTTP on its port. */
export function startServe(name: string, env: Record<string, string>): Proc & { ready: Promise<void>; url: string } {
  requireBuilt();
  if (!env.PORT || env.PORT === '0') throw new Error('startServe needs a PORT of its own (freePort())');
  const proc = spawnNode(name, BIN, ['serve'], { env });
  const url = `http://127.0.0.1:${env.PORT}`;
  const ready = (async () => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (!proc.alive()) throw new Error(`${name} exited before listening. Output:\n${proc.output()}`);
      try {
        const res = await fetch(`${url}/no-such-route`);
        await res.arrayBuffer();
        return;
      } catch {
        await sleep(100);
      }
    }
    throw new Error(`${name} did not answer on ${url} within 30 s. Output:\n${proc.output()}`);
  })();
  ready.catch(() => undefined);
  return Object.assign(proc, { ready, url });
}

