import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface EmbeddedDb {
  url: string;
  /** Stops PostgreSQL (fast shutdown) and waits for the supervisor to exit. */
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /** The cluster's folder, e.g. DATA_DIR/db. */
  dataDir: string;
  port: number;
  database?: string;
  /** fsync off and friends: for throwaway test clusters only. */
  fast?: boolean;
  verbose?: boolean;
  startTimeoutMs?: number;
}

/**
 * A cluster in this folder already run by a live Herald supervisor (e.g. `herald serve` is
 * up and the CLI is asked to create an account): its port, so the caller can attach.
 */
export function findRunningCluster(dataDir: string): { port: number; supervisorPid: number } | undefined {
  let lines: string[];
  try {
    lines = fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return undefined;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const cmdline = fs.readFileSync(`/proc/${ppid}/cmdline`, 'utf8');
    return cmdline.includes('embedded-supervisor') ? { port, supervisorPid: ppid } : undefined;
  } catch {
    return undefined;
  }
}

/** The connection URL of a cluster started by startEmbedded() in this folder. */
export function embeddedUrl(dataDir: string, port: number, database = 'herald'): string {
  const password = fs.readFileSync(path.join(path.dirname(dataDir), '.embedded-db-password'), 'utf8').trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

type SupervisorMessage = { type: 'ready'; url: string } | { type: 'error'; message: string };

function supervisorPath(): string {
  const here = path.join(__dirname, 'embedded-supervisor.mjs');
  if (fs.existsSync(here)) return here;
  // Compiled code whose .mjs was not copied: fall back to the source tree.
  return path.join(__dirname, '..', '..', '..', 'src', 'db', 'embedded-supervisor.mjs');
}

/**
 * Starts the embedded PostgreSQL through src/db/embedded-supervisor.mjs, which owns the
 * postgres process in a process group of its own (see that file for why).
 */
export function startEmbedded(opts: EmbeddedOptions): Promise<EmbeddedDb> {
  const args = JSON.stringify({
    dataDir: opts.dataDir,
    port: opts.port,
    database: opts.database ?? 'herald',
    fast: opts.fast ?? false,
    verbose: opts.verbose ?? false,
  });
  const child: ChildProcess = fork(supervisorPath(), [args], {
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  return new Promise<EmbeddedDb>((resolve, reject) => {
    // A failed start is answered once the supervisor has exited, so a caller that goes on (a
    // test file that ends, a CLI that exits) leaves no process behind.
    let failure: Error | undefined;
    const timer = setTimeout(() => {
      failure = new Error(`The embedded PostgreSQL did not start within ${opts.startTimeoutMs ?? 60000} ms`);
      child.kill('SIGTERM');
    }, opts.startTimeoutMs ?? 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(failure ?? new Error(`The embedded PostgreSQL supervisor exited early (code ${code})`));
    });
    child.on('message', (msg: SupervisorMessage) => {
      clearTimeout(timer);
      if (msg.type === 'error') {
        failure = new Error(msg.message);
        return;
      }
      let stopping: Promise<void> | undefined;
      resolve({
        url: msg.url,
        stop() {
          stopping ??= (async () => {
            if (child.connected) child.send({ type: 'stop' });
            else child.kill('SIGTERM');
            await exited;
          })();
          return stopping;
        },
      });
    });
  });
}
