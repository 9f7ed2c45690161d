/**
 * Start-up time and idle memory (issues 9 and 33): `npm start` as a person runs it the first time
 * after `npm install` — npm start's prestart check (scripts/build.js --if-changed: the sources are
 * unchanged since the build, so nothing is compiled), then `node … bin/herald.js serve` with every
 * default, so the embedded PostgreSQL in a fresh DATA_DIR (initdb, migrations, seeds with the
 * ≈150,000 cities, the first account) and the worker inside — then a restart (`npm start` again)
 * on the same DATA_DIR.
 *
 * - Start-up: the wall time from spawning `npm start` until /healthz answers 200. Targets: ≤ 15 s
 *   on a first start, ≤ 3 s on a restart (median of the runs). The log's "embedded PostgreSQL
 *   started" figure is printed beside it.
 * - Memory: once /healthz answers, the process sits idle for --settle seconds (default 10) and its
 *   resident memory is read: Herald's own process only (/proc/<pid>/status VmRSS of the `node …
 *   bin/herald.js serve` below npm), not npm, the embedded database's supervisor or PostgreSQL's
 *   processes. Target: ≤ 110 MB after either start (median of the runs).
 *
 *   npx tsx bench/idle.ts [--runs 3] [--settle 10] [--no-build]
 *
 * Unless --no-build, `npm run build` runs first, as npm install does. Each run uses a fresh
 * `mktemp -d` folder (mode 755: as root the embedded PostgreSQL runs as the `postgres` OS user,
 * which must be able to enter it) and free ports. The environment holds nothing but PATH, HOME,
 * the locale and DATA_DIR/PORT/EMBEDDED_DB_PORT, so no setting of the caller's shell changes a
 * default. Run it under `flock /tmp/herald-bench.lock`. Prints a summary, writes
 * bench/out/idle.json, exits non-zero on FAIL. Figures: bench/README.md.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePorts } from '../test/helpers/net';
import { build, log, ROOT } from './lib/herald';
import { median, procStatus, writeResult } from './lib/sample';
import { args } from './lib/setup';

const TARGET_MB = 110;
/** /healthz after `npm start`, in seconds: a first start on a fresh DATA_DIR, and a restart. */
const TARGET_FIRST_S = 15;
const TARGET_RESTART_S = 3;
const opts = args();
const RUNS = Math.max(1, Number(opts.get('runs') ?? 3));
const SETTLE_S = Math.max(1, Number(opts.get('settle') ?? 10));

const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10;

interface Start {
  /** Time from spawning `npm start` until /healthz answered 200. */
  readyMs: number;
  /** The embedded PostgreSQL's start as Herald logged it (initdb included on a first start). */
  dbStartMs: number | null;
  /** VmRSS after the settle period. */
  rssMb: number;
  /** VmRSS when /healthz first answered, and the highest sampled after. */
  rssAtReadyMb: number;
  peakMb: number;
  /** The process's own high-water mark (VmHWM), start-up included. */
  hwmMb: number;
  heap?: Record<string, number>;
}

function env(dataDir: string, port: number, dbPort: number): NodeJS.ProcessEnv {
  const keep = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'USER'];
  return {
    ...Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]])),
    DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDED_DB_PORT: String(dbPort),
  };
}

/** The process below `pid` (npm → sh → node) whose command line runs bin/herald.js serve. */
function heraldPid(pid: number): number | null {
  const children = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift()!;
    try {
      const argv = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (argv.some((a) => a.endsWith(path.join('bin', 'herald.js'))) && argv.includes('serve')) return p;
    } catch {
      // gone meanwhile
    }
    queue.push(...(children.get(p) ?? []));
  }
  return null;
}

/** The "embedded PostgreSQL started" line's `ms` in a JSON log, the last one written. */
function dbStartMs(logText: string): number | null {
  const lines = logText.split('\n').filter((l) => l.includes('"embedded PostgreSQL started"'));
  if (!lines.length) return null;
  const ms = (JSON.parse(lines[lines.length - 1]) as { ms?: number }).ms;
  return typeof ms === 'number' ? ms : null;
}

/** `npm start` on `dataDir`: waits for health, lets Herald idle, reads its RSS, stops it. */
async function startOnce(dataDir: string, logFile: string): Promise<Start> {
  const [port, dbPort] = await freePorts(2);
  const out = fs.openSync(logFile, 'w');
  const t0 = Date.now();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: env(dataDir, port, dbPort),
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let herald: number | null = null;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() - t0 > 180_000) throw new Error(`not healthy within 180 s:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const readyMs = Date.now() - t0;
    herald = heraldPid(child.pid!);
    if (herald === null) throw new Error('no `bin/herald.js serve` process below npm start');
    const pid = herald;
    const rssAtReady = procStatus(pid).VmRSS ?? 0;
    let peak = rssAtReady;
    const until = Date.now() + SETTLE_S * 1000;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, 250));
      peak = Math.max(peak, procStatus(pid).VmRSS ?? 0);
    }
    const status = procStatus(pid);
    return {
      readyMs,
      dbStartMs: dbStartMs(fs.readFileSync(logFile, 'utf8')),
      rssMb: mb(status.VmRSS ?? 0),
      rssAtReadyMb: mb(rssAtReady),
      peakMb: mb(peak),
      hwmMb: mb(status.VmHWM ?? 0),
    };
  } finally {
    // Herald itself gets the SIGTERM (as from Ctrl-C or an init system); npm exits with it.
    herald ??= heraldPid(child.pid!);
    if (herald !== null) process.kill(herald, 'SIGTERM');
    else if (child.exitCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => {
      if (herald !== null) process.kill(herald, 'SIGKILL');
      child.kill('SIGKILL');
    }, 30_000);
    await exited;
    clearTimeout(timer);
    fs.appendFileSync(`${logFile}.all`, fs.readFileSync(logFile));
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const startLine = (s: Start) =>
  `/healthz in ${seconds(s.readyMs)} (embedded PostgreSQL ${s.dbStartMs === null ? '?' : seconds(s.dbStartMs)}), ${s.rssMb} MB after ${SETTLE_S} s idle (at ready ${s.rssAtReadyMb}, peak ${s.hwmMb})`;

async function main(): Promise<number> {
  if (!opts.has('no-build')) build();
  const runs: Array<{ first: Start; restart: Start }> = [];
  for (let run = 1; run <= RUNS; run += 1) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-idle-'));
    fs.chmodSync(dir, 0o755);
    try {
      const dataDir = path.join(dir, 'data');
      const logFile = path.join(dir, 'herald.log');
      const first = await startOnce(dataDir, logFile);
      log(`run ${run} first start: ${startLine(first)}`);
      const restart = await startOnce(dataDir, logFile);
      log(`run ${run} restart:     ${startLine(restart)}`);
      runs.push({ first, restart });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  const side = (key: 'first' | 'restart') => {
    const xs = runs.map((r) => r[key].rssMb);
    return { bestMb: Math.min(...xs), medianMb: median(xs), worstMb: Math.max(...xs), medianPeakMb: median(runs.map((r) => r[key].hwmMb)), medianReadyS: median(runs.map((r) => r[key].readyMs)) / 1000 };
  };
  const first = side('first');
  const restart = side('restart');
  const memoryPass = first.medianMb <= TARGET_MB && restart.medianMb <= TARGET_MB;
  const startPass = { first: first.medianReadyS <= TARGET_FIRST_S, restart: restart.medianReadyS <= TARGET_RESTART_S };
  const pass = memoryPass && startPass.first && startPass.restart;
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  const memLine = (name: string, s: ReturnType<typeof side>) =>
    `  ${name.padEnd(12)} ${s.bestMb} / ${s.medianMb} MB (worst ${s.worstMb})   peak during start ${s.medianPeakMb} MB   ${verdict(s.medianMb <= TARGET_MB)}`;
  const readyLine = (name: string, key: 'first' | 'restart', target: number) => {
    const xs = runs.map((r) => r[key].readyMs / 1000);
    return `  ${name.padEnd(12)} ${Math.min(...xs).toFixed(1)} / ${median(xs).toFixed(1)} s (worst ${Math.max(...xs).toFixed(1)})   target ≤ ${target} s   ${verdict(startPass[key])}`;
  };
  process.stdout.write(
    [
      '',
      `Start-up: \`npm start\` spawned → /healthz 200, ${RUNS} runs (best / median)`,
      readyLine('first start', 'first', TARGET_FIRST_S),
      readyLine('restart', 'restart', TARGET_RESTART_S),
      `Idle memory of herald serve (its own process), ${SETTLE_S} s after /healthz answers, ${RUNS} runs (best / median), target ≤ ${TARGET_MB} MB`,
      memLine('first start', first),
      memLine('restart', restart),
      `Overall: ${verdict(pass)}`,
      '',
    ].join('\n') + '\n',
  );
  const file = writeResult('idle', {
    when: new Date().toISOString(),
    pass,
    targetMb: TARGET_MB,
    targetStartS: { first: TARGET_FIRST_S, restart: TARGET_RESTART_S },
    startPass,
    memoryPass,
    settleS: SETTLE_S,
    machine: { cpus: os.cpus().length, node: process.version },
    first,
    restart,
    runs,
  });
  log(`wrote ${path.relative(ROOT, file)}`);
  return pass ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
