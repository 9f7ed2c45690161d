import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../test/helpers/net';

/**
 * Herald as the benchmarks run it: the built CLI (`node bin/herald.js serve`) in a child
 * process of its own, so its memory and CPU are its own and nothing of the benchmark's
 * harness (CSV generation, sampling) is counted against it.
 */
export const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'herald.js');

/**
 * Node's options of `npm start` (package.json's start script: `node <options> bin/herald.js serve`),
 * which every benchmark's `herald serve` is given before its own: Herald as `npm start` runs it.
 */
export const SERVE_NODE_ARGS: string[] = (() => {
  const start = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const m = /^node\s+(.*?)\s*bin\/herald\.js\s+serve$/.exec(start);
  if (!m) throw new Error(`package.json's start script is not "node … bin/herald.js serve": ${start}`);
  return m[1].split(/\s+/).filter(Boolean);
})();

/** `npm run build`; a failed type check still leaves dist/ usable when tsc emitted it. */
export function build(): void {
  const started = Date.now();
  const res = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, encoding: 'utf8' });
  if (res.status !== 0) {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'src', 'cli.js'))) {
      throw new Error(`npm run build failed:\n${res.stdout}\n${res.stderr}`);
    }
    process.stderr.write(`warning: npm run build reported errors; using the emitted dist/ anyway\n${res.stdout.slice(0, 2000)}\n`);
  }
  log(`built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** A summary's line of checks: `name=true name=false …`. */
export function checksLine(checks: Record<string, boolean | undefined>): string {
  return `  checks: ${Object.entries(checks).map(([k, v]) => `${k}=${v}`).join(' ')}`;
}

/** The end of a run: where its result went and how long it took; exit code 1 unless the targets passed and every check held. */
export function finishRun(file: string, started: number, pass: boolean, checks: Record<string, boolean | undefined>): void {
  log(`wrote ${path.relative(ROOT, file)}; total ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (!pass || Object.values(checks).some((v) => !v)) process.exitCode = 1;
}

/** Runs a benchmark's main; a failure prints its stack and fails the process. */
export function runMain(main: () => Promise<void>): void {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}

export function log(msg: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

export interface Account {
  id: number;
  public_key: string;
  secret_key: string;
}

/** `herald account create` against the benchmark's database (it migrates and seeds first). */
export async function createAccount(databaseUrl: string, name: string): Promise<Account> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [BIN, 'account', 'create', '--name', name, '--email', `${name.toLowerCase().replace(/\W+/g, '-')}@bench.test`],
    { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, maxBuffer: 1 << 20 },
  );
  const line = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as Account;
}

export interface Herald {
  pid: number;
  baseUrl: string;
  child: ChildProcess;
  /** The last 20 kB the server wrote (stdout and stderr). */
  output(): string;
  stop(): Promise<void>;
}

/** Starts `herald serve` (no worker) and resolves once /healthz answers. */
export async function startHerald(opts: { databaseUrl: string; dataDir: string; env?: Record<string, string>; nodeArgs?: string[] }): Promise<Herald> {
  const port = await freePort();
  const child = spawn(process.execPath, [...SERVE_NODE_ARGS, ...(opts.nodeArgs ?? []), BIN, 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: opts.databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: opts.dataDir,
      LOG_LEVEL: 'warn',
      WORKER: '0',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  });
  child.stderr!.on('data', (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`herald serve exited with ${child.exitCode}:\n${output}`);
    try {
      const res = await fetch(`${baseUrl}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`herald serve did not become healthy within 120 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const herald: Herald = {
    pid: child.pid!,
    baseUrl,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
  return herald;
}

/** A small HTTP client with the account's key pair. */
export function client(baseUrl: string, account: Account) {
  const headers = { PublicKey: account.public_key, SecretKey: account.secret_key, Accept: 'application/json' };
  const check = async (res: Response, what: string) => {
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    if (!res.ok || (body as { status?: string })?.status === 'failed') {
      throw new Error(`${what} → HTTP ${res.status}: ${text.slice(0, 2000)}`);
    }
    return body as { status: string; message: unknown; errors?: unknown };
  };
  return {
    headers,
    async get(p: string) {
      return check(await fetch(baseUrl + p, { headers }), `GET ${p}`);
    },
    async form(p: string, fields: Record<string, string | number | Array<string | number>>) {
      const body = new URLSearchParams();
      for (const [k, v] of Object.entries(fields)) {
        if (Array.isArray(v)) v.forEach((item, i) => body.append(`${k}[${i}]`, String(item)));
        else body.append(k, String(v));
      }
      return check(await fetch(baseUrl + p, { method: 'POST', headers, body }), `POST ${p}`);
    },
    async multipart(p: string, form: FormData) {
      return check(await fetch(baseUrl + p, { method: 'POST', headers, body: form }), `POST ${p}`);
    },
  };
}
