import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, SERVE_NODE_ARGS } from './herald';

/**
 * `herald serve` as `npm start` runs it for the HTTP benchmarks (bench:api, bench:tracking):
 * worker inside, every default (LOG_LEVEL info: one JSON line per request), its output to a
 * file as under a process manager — not through a pipe into the harness, whose process also
 * runs autocannon. Its environment holds only where things are besides PATH, HOME and the
 * locale, so no setting of the caller's shell changes a default.
 */
export interface LoggedHerald {
  baseUrl: string;
  pid: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** A minimal environment: where things are, nothing that would change one of Herald's defaults. */
function heraldEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'USER'];
  return { ...Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]])), ...extra };
}

const tail = (file: string) => {
  try {
    return fs.readFileSync(file, 'utf8').slice(-4000);
  } catch {
    return '';
  }
};

async function waitHealthy(baseUrl: string, child: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`herald serve exited with ${child.exitCode}:\n${tail(logFile)}`);
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`herald serve did not become healthy within 120 s:\n${tail(logFile)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Starts `node bin/herald.js serve` on `port` with `env` (DATABASE_URL, PORT, DATA_DIR, …) and waits for /healthz. */
export async function startLoggedHerald(opts: { port: number; env: Record<string, string>; logFile: string; nodeArgs?: string[] }): Promise<LoggedHerald> {
  const out = fs.openSync(opts.logFile, 'a');
  const child = spawn(process.execPath, [...SERVE_NODE_ARGS, ...(opts.nodeArgs ?? []), path.join(ROOT, 'bin', 'herald.js'), 'serve'], {
    cwd: ROOT,
    env: heraldEnv({ ...opts.env, PORT: String(opts.port) }),
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const baseUrl = `http://127.0.0.1:${opts.port}`;
  try {
    await waitHealthy(baseUrl, child, opts.logFile);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    baseUrl,
    pid: child.pid!,
    child,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
