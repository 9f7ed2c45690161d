/**
 * Idle memory benchmark (issue 9): `npm start` as a person runs it the first time — `node
 * bin/herald.js serve` with every default, so the embedded PostgreSQL in a fresh DATA_DIR
 * (initdb, migrations, seeds with the ≈150,000 cities, the first account) and the worker
 * inside — then a restart on the same DATA_DIR. After each start, once /healthz answers, the
 * process sits idle for --settle seconds (default 10) and its resident memory is read: Herald's
 * own process only (/proc/<pid>/status VmRSS), not the embedded database's supervisor or
 * PostgreSQL's processes. Target: ≤ 110 MB after either start (median of the runs).
 *
 *   npx tsx bench/idle.ts [--runs 3] [--settle 10] [--no-build]
 *
 * Each run uses a fresh `mktemp -d` folder (mode 755: as root the embedded PostgreSQL runs as
 * the `postgres` OS user, which must be able to enter it) and free ports. The environment
 * holds nothing but PATH, HOME, the locale and DATA_DIR/PORT/EMBEDDED_DB_PORT, so no setting of
 * the caller's shell changes a default. Run it under `flock /tmp/herald-bench.lock`. Prints a
 * summary, writes bench/out/idle.json, exits non-zero on FAIL. Figures: bench/README.md.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../test/helpers/net';
import { build, log, ROOT } from './lib/herald';
import { median, procStatus, writeResult } from './lib/sample';
import { args } from './lib/setup';

const TARGET_MB = 110;
const opts = args();
const RUNS = Math.max(1, Number(opts.get('runs') ?? 3));
const SETTLE_S = Math.max(1, Number(opts.get('settle') ?? 10));

const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10;

interface Start {
  /** Time from spawn until /healthz answered. */
  readyMs: number;
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

/** Starts `herald serve` on `dataDir`, waits for health, lets it idle, reads its RSS, stops it. */
async function startOnce(dataDir: string, logFile: string): Promise<Start> {
  const [port, dbPort] = [await freePort(), await freePort()];
  const out = fs.openSync(logFile, 'a');
  const t0 = Date.now();
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'herald.js'), 'serve'], {
    cwd: ROOT,
    env: env(dataDir, port, dbPort),
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`herald serve exited with ${child.exitCode}:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() - t0 > 180_000) throw new Error(`not healthy within 180 s:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const readyMs = Date.now() - t0;
    const rssAtReady = procStatus(child.pid!).VmRSS ?? 0;
    let peak = rssAtReady;
    const until = Date.now() + SETTLE_S * 1000;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, 250));
      peak = Math.max(peak, procStatus(child.pid!).VmRSS ?? 0);
    }
    const status = procStatus(child.pid!);
    return { readyMs, rssMb: mb(status.VmRSS ?? 0), rssAtReadyMb: mb(rssAtReady), peakMb: mb(peak), hwmMb: mb(status.VmHWM ?? 0) };
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
}


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
      log(`run ${run} first start: ready in ${(first.readyMs / 1000).toFixed(1)} s, ${first.rssMb} MB after ${SETTLE_S} s idle (at ready ${first.rssAtReadyMb}, peak ${first.hwmMb})`);
      const restart = await startOnce(dataDir, logFile);
      log(`run ${run} restart:     ready in ${(restart.readyMs / 1000).toFixed(1)} s, ${restart.rssMb} MB after ${SETTLE_S} s idle (at ready ${restart.rssAtReadyMb}, peak ${restart.hwmMb})`);
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
  const pass = first.medianMb <= TARGET_MB && restart.medianMb <= TARGET_MB;
  const line = (name: string, s: ReturnType<typeof side>) =>
    `  ${name.padEnd(12)} ${s.bestMb} / ${s.medianMb} MB (worst ${s.worstMb})   peak during start ${s.medianPeakMb} MB   ready in ${s.medianReadyS.toFixed(1)} s   ${s.medianMb <= TARGET_MB ? 'PASS' : 'FAIL'}`;
  process.stdout.write(
    [
      '',
      `Idle memory of herald serve (its own process), ${SETTLE_S} s after /healthz answers, ${RUNS} runs (best / median), target ≤ ${TARGET_MB} MB`,
      line('first start', first),
      line('restart', restart),
      '',
    ].join('\n') + '\n',
  );
  const file = writeResult('idle', {
    when: new Date().toISOString(),
    pass,
    targetMb: TARGET_MB,
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
