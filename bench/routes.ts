/**
 * Delivery routes benchmark (issue 36, "Benchmark"): one send through Herald as `npm start` runs it
 * (`herald serve`, API and worker in one process, default settings; bench/lib/send-herald.ts), timed
 * from the create call to completed, into SMTP sinks that accept and discard (bench/lib/send-sink.ts,
 * each a child process of its own). Two modes:
 *
 *   --compare [ref]  "with one route, within 3 % of today": Herald at HEAD against Herald at `ref`
 *                    (default 280c994, the last commit before delivery routes), both with SMTP_URL
 *                    alone (one route, as every existing install has it), into the same sink and the
 *                    same database, in alternating runs (HEAD, before, HEAD, before, …; --runs pairs).
 *                    Each side is built from a clean worktree of its commit (/tmp/herald-<sha7>;
 *                    `npm ci` there the first time), so nobody's uncommitted work is measured. The
 *                    ratio HEAD / before of every adjacent pair of runs, median: PASS when ≥ 0.97.
 *                    Adjacent runs share the load of the moment; a load that drifts pushes the pairs'
 *                    ratios to either side of 1 in turn, which the median evens out.
 *   --instructions [ref]  the same item judged by a count the machine's load does not move: the same two
 *                    builds (worktrees, database, sink, one route), each `herald serve` run under
 *                    valgrind's callgrind (`--smc-check=all-non-file` for V8's JIT code), counts the
 *                    instructions Herald's process (every thread of it) executes per message in the
 *                    steady part of a send: a fresh process sends a warm-up list (--warmup, 400), its
 *                    counters are dumped (`vgdb --pid=… dump`, which also zeroes them), then it
 *                    sends the measured list (--recipients, 1,200 in this mode) and is dumped again
 *                    when the send is completed: that window's instructions / its recipients. A third
 *                    dump after a few idle seconds gives the instructions of an idle second. Part of a
 *                    window follows the clock (pollers' timers, ≈ 3–4.5 M instructions a second while
 *                    a send runs), so a window of the same messages that took longer counts more: each
 *                    side's windows are fitted to a·messages + b·seconds (clockFit) and PASS when HEAD's
 *                    a ≤ 1.03 × before's (the medians when a side's runs are all of one length). HEAD
 *                    and before alternate (--runs each). PostgreSQL and the sink are not traced. Under
 *                    valgrind a run takes 8–25 minutes here (start-up alone 2–7). The callgrind files
 *                    stay in /tmp/herald-callgrind-<time>/ (callgrind_annotate them to see where).
 *   --routes N       "with N routes of equal weight, every sink saturated evenly": SMTP_ROUTES with N
 *                    routes of weight 1 (no quotas), one to each of N sinks, alternating with one route
 *                    (SMTP_URL to the first sink) in the same run. A sink is busy in a second when it
 *                    received a message in it; PASS when, in every N-route run, every sink was busy in
 *                    ≥ 95 % of the seconds of the steady middle (the send's span without its first and
 *                    last 10 %) and each sink's count is within 3 binomial standard deviations of an even
 *                    split (√(n·p·(1−p)), p = 1/N). The total rate against one route is reported (the
 *                    ratio of adjacent runs, median), as are each sink's arrivals per second.
 *
 * The machine is shared: each run records the 1-minute load average before and after it and the CPUs'
 * busy share in the second before; compare only within a run. Results to bench/out/routes-compare.json
 * bench/out/routes-<N>.json or bench/out/routes-instructions.json; exit code 1 on FAIL or on a failed check (every recipient received
 * exactly once, the send's statistics and, at HEAD, its `delivered` events per route match the sinks).
 *
 *   npx tsx bench/routes.ts --compare [280c994] [--head HEAD] [--recipients 30000] [--runs 3] [--keep] [--no-pin]
 *   npx tsx bench/routes.ts --routes 2 [--recipients 30000] [--runs 3] [--keep] [--no-pin]
 *   npx tsx bench/routes.ts --instructions [280c994] [--head HEAD] [--recipients 1200] [--warmup 400] [--runs 2] [--keep] [--no-pin]
 *
 * --db <name> runs in another database than the mode's own (two --instructions runs side by side: the
 * counts do not mind sharing the machine, and each is minutes of one core's time).
 *
 * Herald is pinned to CPU 0 and every sink to CPU 1 (taskset; --no-pin leaves it to the kernel), as in
 * bench:send. Herald runs HEAD's build from its worktree in both modes; the bench database is made by
 * the working tree's build (bin/herald.js account create), whose later or earlier migrations each side
 * is shown as it expects them (withMigrationsOf).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { checksLine, finishRun, log, ROOT, runMain } from './lib/herald';
import { serverInfo } from './lib/pg';
import { cpuBusy, median, writeResult } from './lib/sample';
import { args } from './lib/setup';
import { machineInfo, withSendBench, type SendBench } from './lib/send-bench';
import { makeList } from './lib/send-fixture';
import { createSend, readSenderDns, startServe, waitCompleted } from './lib/send-herald';
import { ask, BENCH_LIB, type Child, cpuMs, nextMessage, spawnNode } from './lib/send-procs';
import type { SinkStats } from './lib/send-sink';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) && opts.get(name) !== true ? Number(opts.get(name)) : dflt);

const COMPARE = opts.has('compare');
const INSTRUCTIONS = opts.has('instructions');
const ROUTES = num('routes', 0);
const refOf = (mode: string) => (typeof opts.get(mode) === 'string' ? String(opts.get(mode)) : undefined);
const BEFORE_REF = refOf('compare') ?? refOf('instructions') ?? '280c994';
const HEAD_REF = typeof opts.get('head') === 'string' ? String(opts.get('head')) : 'HEAD';
const RECIPIENTS = num('recipients', INSTRUCTIONS ? 1_200 : 30_000);
/** --instructions: the warm-up send's recipients, before the measured window. */
const WARMUP = num('warmup', 400);
/** Pairs of runs: each side runs this many times, alternating. */
const RUNS = Math.max(1, num('runs', INSTRUCTIONS ? 2 : 3));
const PIN = !opts.has('no-pin');
const PUBLIC_URL = 'https://herald.bench.test';
/** --compare: HEAD's rate at least this share of the build before delivery routes (median of the adjacent pairs). */
const TARGET_RATIO = 0.97;
/** --routes: the share of the steady middle's seconds in which every sink must have received messages. */
const BUSY_SHARE = 0.95;
/** --instructions: HEAD's instructions per message at most this multiple of before's (medians). */
const TARGET_INSTRUCTIONS = 1.03;
/** The first and last share of a send's span left out of its steady middle (start-up and the tail). */
const EDGE = 0.1;
/** Binomial standard deviations an even split may be off by. */
const SIGMAS = 3;

const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

function git(cwd: string, ...a: string[]): string {
  const r = spawnSync('git', a, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${a.join(' ')} failed in ${cwd}:\n${r.stderr}`);
  return r.stdout.trim();
}

interface Build {
  ref: string;
  sha: string;
  dir: string;
  bin: string;
}

/**
 * Herald at `ref`, built in a worktree of its own (/tmp/herald-<sha7>, made and `npm ci`-ed the first
 * time, or given another worktree's node_modules when their package-lock.json is the same; later runs
 * reuse it, rebuilding only when its sources differ from its dist/).
 */
function worktreeBuild(ref: string): Build {
  const sha = git(ROOT, 'rev-parse', '--verify', `${ref}^{commit}`);
  const dir = path.join(os.tmpdir(), `herald-${sha.slice(0, 7)}`);
  if (!fs.existsSync(dir)) git(ROOT, 'worktree', 'add', '--detach', dir, sha);
  const at = git(dir, 'rev-parse', 'HEAD');
  if (at !== sha) throw new Error(`${dir} is at ${at}, not ${ref} (${sha}): remove it with git worktree remove ${dir}`);
  const step = (cmd: string, a: string[]) => {
    const started = Date.now();
    const r = spawnSync(cmd, a, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} ${a.join(' ')} failed in ${dir}:\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`);
    log(`${sha.slice(0, 7)}: ${cmd} ${a.join(' ')} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  };
  if (!fs.existsSync(path.join(dir, 'node_modules'))) {
    // Another build's node_modules of the same package-lock.json: hard-linked (seconds, no disk), else npm ci (minutes).
    const lock = fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8');
    const twin = fs
      .readdirSync(os.tmpdir())
      .map((d) => path.join(os.tmpdir(), d))
      .find((d) => /herald-[0-9a-f]{7}$/.test(d) && d !== dir && fs.existsSync(path.join(d, 'node_modules', '.package-lock.json')) && fs.readFileSync(path.join(d, 'package-lock.json'), 'utf8') === lock);
    if (twin) step('cp', ['-al', path.join(twin, 'node_modules'), path.join(dir, 'node_modules')]);
    else step('npm', ['ci', '--no-audit', '--no-fund']);
  }
  step('node', ['scripts/build.js', '--if-changed']);
  return { ref, sha, dir, bin: path.join(dir, 'bin', 'herald.js') };
}

/**
 * Runs `run` with the bench database's knex_migrations as `build` knows them: rows of migrations it has
 * no file for (later ones) are taken out while it runs — knex refuses to start beside them — and put
 * back after. Their tables and columns stay; an older build does not read them.
 */
async function withMigrationsOf<T>(admin: Client, build: Build, run: () => Promise<T>): Promise<T> {
  const known = fs.readdirSync(path.join(build.dir, 'dist', 'migrations')).filter((f) => f.endsWith('.js')).map((f) => f.slice(0, -3));
  const { rows } = await admin.query<{ id: number; name: string; batch: number; migration_time: Date }>(
    'DELETE FROM knex_migrations WHERE name <> ALL($1::text[]) RETURNING id, name, batch, migration_time',
    [known],
  );
  try {
    return await run();
  } finally {
    for (const r of rows) await admin.query('INSERT INTO knex_migrations (id, name, batch, migration_time) VALUES ($1, $2, $3, $4)', [r.id, r.name, r.batch, r.migration_time]);
  }
}

type Seen = Omit<SinkStats, 'samples'>;

interface Run {
  label: string;
  n: number;
  rate: number;
  createToCompletedMs: number;
  statistics: { triggered: number; delivered: number; bounces: number };
  /** The send's `delivered` events by data.route ('' when none: the build before routes). */
  deliveredEventsByRoute: Record<string, number>;
  sinks: Seen[];
  /** Herald's CPU time (user + system) per message: less at the mercy of the neighbours than its rate. */
  heraldCpuMsPerMessage: number;
  /** 1-minute load average before and after the run; the CPUs' busy share in the second before it. */
  load: [number, number];
  cpuBusyBefore: number;
}

/** One send of the whole list by a fresh `herald serve` of `build`, into `sinks` (counters reset first). */
async function timedSend(b: SendBench, typeId: number, sinks: Child[], build: Build, label: string, n: number, env?: Record<string, string>): Promise<Run> {
  // Every run starts from the same state: no recipient rows of earlier runs.
  await b.admin.query('TRUNCATE deliveries');
  await b.admin.query('VACUUM ANALYZE deliveries');
  return withMigrationsOf(b.admin, build, async () => {
    const cpuBusyBefore = round(await cpuBusy(1000));
    const load0 = os.loadavg()[0];
    const herald = await startServe({ databaseUrl: b.url, smtpPort: b.port, dataDir: b.dataDir, publicUrl: PUBLIC_URL, cpu: PIN ? '0' : undefined, bin: build.bin, env });
    try {
      await readSenderDns(herald.baseUrl, b.f.account, b.f.senderId);
      for (const s of sinks) await ask(s, { type: 'reset', keep: 0 });
      const cpu0 = cpuMs(herald.pid);
      const { utr, calledAt } = await createSend(herald.baseUrl, b.f.account, { senderId: b.f.senderId, groupId: b.f.groupId, typeId, name: `Routes ${label} #${n}` });
      const row = await waitCompleted(b.c, utr, herald);
      const load1 = os.loadavg()[0];
      const heraldCpuMs = cpuMs(herald.pid) - cpu0;
      const ms = row.completed_at!.getTime() - calledAt;
      const seen = await Promise.all(sinks.map((s) => ask<SinkStats>(s, { type: 'stats', seconds: true })));
      const events = await b.c.query<{ route: string; n: number }>(
        `SELECT coalesce(data->>'route', '') AS route, count(*)::int AS n FROM events WHERE user_id = $1 AND single_send_id = $2 AND type = 'delivered' GROUP BY 1 ORDER BY 1`,
        [b.f.userId, row.id],
      );
      const run: Run = {
        label,
        n,
        rate: (row.delivered / ms) * 1000,
        createToCompletedMs: ms,
        statistics: { triggered: row.triggered, delivered: row.delivered, bounces: row.bounces },
        deliveredEventsByRoute: Object.fromEntries(events.rows.map((r) => [r.route, r.n])),
        sinks: seen.map(({ samples: _samples, ...s }) => s),
        heraldCpuMsPerMessage: round(heraldCpuMs / Math.max(1, row.delivered)),
        load: [round(load0, 2), round(load1, 2)],
        cpuBusyBefore,
      };
      log(
        `${label} #${n}: ${run.rate.toFixed(0)} msg/s (${(ms / 1000).toFixed(1)} s, ${run.heraldCpuMsPerMessage} ms of Herald's CPU a message; sinks ${run.sinks.map((s) => s.received).join(' + ')}); ` +
          `load ${run.load.map((x) => x.toFixed(2)).join(' → ')}, CPUs busy before ${(cpuBusyBefore * 100).toFixed(0)} %`,
      );
      return run;
    } finally {
      const stopped = await herald.stop(60_000);
      if (stopped.code !== 0) log(`herald serve exited with ${stopped.code} after SIGTERM`);
    }
  });
}

/**
 * Runs `a` and `b` in turn (a, b, a, b, …), `pairs` times each, and the ratio of a's rate to b's of
 * every adjacent pair of runs (a1/b1, a2/b1, a2/b2, …): neighbours share the machine's load of the moment.
 */
async function alternate(pairs: number, a: (n: number) => Promise<Run>, b: (n: number) => Promise<Run>) {
  const runs: Array<{ side: 'a' | 'b'; run: Run }> = [];
  for (let n = 1; n <= pairs; n += 1) {
    runs.push({ side: 'a', run: await a(n) });
    runs.push({ side: 'b', run: await b(n) });
  }
  /** a's figure over b's of every adjacent pair of runs. */
  const ofPairs = (pick: (r: Run) => number) =>
    runs.slice(1).map((x, i) => {
      const [ra, rb] = x.side === 'a' ? [x.run, runs[i].run] : [runs[i].run, x.run];
      return round(pick(ra) / pick(rb));
    });
  const ratios = ofPairs((r) => r.rate);
  // Herald's CPU per message, the same way (above 1: a costs more).
  const cpuRatios = ofPairs((r) => r.heraldCpuMsPerMessage);
  return {
    a: runs.filter((x) => x.side === 'a').map((x) => x.run),
    b: runs.filter((x) => x.side === 'b').map((x) => x.run),
    ratios,
    median: median(ratios),
    cpu: { ratios: cpuRatios, median: median(cpuRatios) },
  };
}

/** Every recipient received exactly once over the sinks, and the send's statistics agree. */
function receivedOnce(r: Run): boolean {
  const received = r.sinks.reduce((s, x) => s + x.received, 0);
  return received === RECIPIENTS && r.sinks.every((x) => x.duplicates === 0) && r.statistics.delivered === RECIPIENTS && r.statistics.triggered === RECIPIENTS && r.statistics.bounces === 0;
}

/** How the sinks shared a send: per sink its count, its rate in the steady middle, and the seconds of the middle in which every sink was busy. */
function spread(r: Run) {
  const bySecond = r.sinks.map((s) => new Map(s.bySecond ?? []));
  const seconds = r.sinks.flatMap((s) => (s.bySecond ?? []).map(([t]) => t));
  const first = Math.min(...seconds);
  const last = Math.max(...seconds);
  const trim = Math.max(1, Math.floor((last - first + 1) * EDGE));
  const middle: number[] = [];
  for (let t = first + trim; t <= last - trim; t += 1) middle.push(t);
  const p = 1 / r.sinks.length;
  const sigma = Math.sqrt(RECIPIENTS * p * (1 - p));
  const sinks = r.sinks.map((s, i) => {
    const inMiddle = middle.map((t) => bySecond[i].get(t) ?? 0);
    return {
      received: s.received,
      share: round(s.received / RECIPIENTS, 4),
      offBy: s.received - RECIPIENTS * p,
      middleMsgPerS: Math.round(inMiddle.reduce((a, x) => a + x, 0) / Math.max(1, middle.length)),
      middleMinPerS: middle.length ? Math.min(...inMiddle) : 0,
      idleSecondsInMiddle: inMiddle.filter((x) => x === 0).length,
    };
  });
  const everyBusy = middle.filter((t) => bySecond.every((m) => (m.get(t) ?? 0) > 0)).length;
  const busyShare = middle.length ? round(everyBusy / middle.length) : 0;
  const tolerance = Math.round(SIGMAS * sigma);
  const even = sinks.every((s) => Math.abs(s.offBy) <= tolerance);
  return {
    spanSeconds: last - first + 1,
    middleSeconds: middle.length,
    busyShare,
    tolerance,
    even,
    saturated: busyShare >= BUSY_SHARE,
    sinks,
    // Arrivals per second from the first message on, one column per sink.
    perSecond: Array.from({ length: last - first + 1 }, (_, k) => bySecond.map((m) => m.get(first + k) ?? 0)),
  };
}

/** What every result file of this benchmark starts with. */
const resultHead = async (b: SendBench, benchmark: string, head: Build) => ({
  benchmark,
  when: new Date().toISOString(),
  machine: machineInfo(),
  postgres: await serverInfo(b.c),
  pinning: PIN ? { herald: 'CPU 0', sinks: 'CPU 1', postgres: 'unpinned' } : 'none',
  recipients: RECIPIENTS,
  head: { ref: head.ref, sha: head.sha },
});

const ratioLine = (name: string, x: { ratios: number[]; median: number }) => `  ${name.padEnd(34)} median ${x.median}  [${x.ratios.join(', ')}]`;
const rateList = (runs: Run[]) => runs.map((r) => `${Math.round(r.rate)}`).join(', ');
const loads = (runs: Run[]) => runs.map((r) => `${r.load[0].toFixed(2)} → ${r.load[1].toFixed(2)}`).join(', ');

async function compare(b: SendBench, typeId: number, head: Build, before: Build, started: number) {
  const one = (build: Build, label: string) => (n: number) => timedSend(b, typeId, [b.sink], build, label, n);
  const alt = await alternate(RUNS, one(head, 'HEAD'), one(before, 'before'));
  const all = [...alt.a, ...alt.b];
  const checks = {
    sinkReceivedExactlyOnce: all.every(receivedOnce),
    headEventsOnRouteDefault: alt.a.every((r) => r.deliveredEventsByRoute.default === RECIPIENTS),
  };
  const pass = alt.median >= TARGET_RATIO;
  const file = writeResult('routes-compare', {
    ...(await resultHead(b, 'routes-compare', head)),
    before: { ref: before.ref, sha: before.sha },
    target: { headOverBeforeMedian: TARGET_RATIO, median: alt.median, pass },
    ratios: alt.ratios,
    heraldCpuPerMessageHeadOverBefore: alt.cpu,
    checks,
    runs: { head: alt.a, before: alt.b },
    totalMs: Date.now() - started,
  });
  process.stdout.write(
    [
      '',
      `Delivery routes, one route — HEAD ${head.sha.slice(0, 7)} against ${before.sha.slice(0, 7)}, ${RECIPIENTS.toLocaleString('en')} recipients, ${RUNS} runs each, alternating`,
      `  HEAD msg/s:   ${rateList(alt.a)}   (load ${loads(alt.a)})`,
      `  before msg/s: ${rateList(alt.b)}   (load ${loads(alt.b)})`,
      ratioLine('HEAD / before, adjacent runs', alt),
      `  Herald CPU ms a message: HEAD ${alt.a.map((r) => r.heraldCpuMsPerMessage).join(', ')}; before ${alt.b.map((r) => r.heraldCpuMsPerMessage).join(', ')}`,
      ratioLine('CPU a message, HEAD / before', alt.cpu) + '  (for reference)',
      `  target: HEAD ≥ ${TARGET_RATIO * 100} % of before (median) — ${pass ? 'PASS' : 'FAIL'}`,
      checksLine(checks),
      '',
    ].join('\n'),
  );
  finishRun(file, started, pass, checks);
}

async function routes(b: SendBench, typeId: number, head: Build, started: number) {
  const more = Array.from({ length: ROUTES - 1 }, (_, i) => spawnNode(`sink ${i + 2}`, path.join(BENCH_LIB, 'send-sink.ts'), [], { ts: true, ipc: true, cpu: PIN ? '1' : undefined }));
  const ports = [b.port, ...(await Promise.all(more.map(async (s) => (await nextMessage<{ port: number }>(s, 'listening', 30_000)).port)))];
  const sinks = [b.sink, ...more];
  const names = ports.map((_, i) => `r${i + 1}`);
  const doc = JSON.stringify(ports.map((port, i) => ({ name: names[i], url: `smtp://127.0.0.1:${port}`, weight: 1 })));
  try {
    const alt = await alternate(
      RUNS,
      (n) => timedSend(b, typeId, sinks, head, `${ROUTES} routes`, n, { SMTP_ROUTES: doc }),
      (n) => timedSend(b, typeId, sinks, head, 'one route', n),
    );
    const spreads = alt.a.map(spread);
    for (const [i, s] of spreads.entries()) {
      log(
        `${ROUTES} routes #${i + 1}: ${s.sinks.map((x, k) => `${names[k]} ${x.received} (${x.middleMsgPerS}/s in the middle, min ${x.middleMinPerS}, idle ${x.idleSecondsInMiddle} s)`).join(', ')}; ` +
          `every sink busy in ${(s.busyShare * 100).toFixed(1)} % of ${s.middleSeconds} s; split ${s.even ? 'even' : 'uneven'} (±${s.tolerance})`,
      );
    }
    const checks = {
      receivedExactlyOnce: [...alt.a, ...alt.b].every(receivedOnce),
      eventsMatchSinks: alt.a.every((r) => names.every((name, k) => r.deliveredEventsByRoute[name] === r.sinks[k].received)),
      oneRouteOnFirstSink: alt.b.every((r) => r.sinks[0].received === RECIPIENTS),
    };
    const pass = spreads.every((s) => s.saturated && s.even);
    const file = writeResult(`routes-${ROUTES}`, {
      ...(await resultHead(b, `routes-${ROUTES}`, head)),
      routes: names,
      target: { busyShare: BUSY_SHARE, edge: EDGE, sigmas: SIGMAS, pass },
      totalOverOneRoute: { ratios: alt.ratios, median: alt.median },
      heraldCpuPerMessageOverOneRoute: alt.cpu,
      spreads,
      checks,
      runs: { routes: alt.a.map((r) => ({ ...r, sinks: r.sinks.map(({ bySecond: _s, ...x }) => x) })), oneRoute: alt.b.map((r) => ({ ...r, sinks: r.sinks.map(({ bySecond: _s, ...x }) => x) })) },
      totalMs: Date.now() - started,
    });
    process.stdout.write(
      [
        '',
        `Delivery routes, ${ROUTES} routes of weight 1 — HEAD ${head.sha.slice(0, 7)}, ${RECIPIENTS.toLocaleString('en')} recipients, ${RUNS} runs each, alternating with one route`,
        `  ${ROUTES} routes msg/s: ${rateList(alt.a)}   (load ${loads(alt.a)})`,
        `  one route msg/s: ${rateList(alt.b)}   (load ${loads(alt.b)})`,
        ratioLine(`${ROUTES} routes / one route, adjacent`, alt),
        ratioLine(`CPU a message, ${ROUTES} routes / one`, alt.cpu) + '  (for reference)',
        ...spreads.map(
          (s, i) =>
            `  run ${i + 1}: split ${s.sinks.map((x) => x.received).join(' / ')} (±${s.tolerance} allowed), every sink busy in ${(s.busyShare * 100).toFixed(1)} % of the middle's ${s.middleSeconds} s, ` +
            `per sink ${s.sinks.map((x) => `${x.middleMsgPerS}/s (min ${x.middleMinPerS})`).join(', ')}`,
        ),
        `  target: every sink busy in ≥ ${BUSY_SHARE * 100} % of the steady middle and the split within ${SIGMAS} σ, every run — ${pass ? 'PASS' : 'FAIL'}`,
        checksLine(checks),
        '',
      ].join('\n'),
    );
    finishRun(file, started, pass, checks);
  } finally {
    for (const s of more) await s.stop(5_000);
  }
}

/** Runs a command to its end; its output, or an error with it. */
function run(cmd: string, a: string[]): string {
  const r = spawnSync(cmd, a, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${a.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/**
 * The instructions callgrind counted since the last dump (or the start), dumped now: `vgdb --pid=<pid> dump`
 * (what `callgrind_control --dump` runs, which ignores vgdb's failures) writes `<out>.<k>` (k = 1, 2, …) and
 * zeroes the counters; its `totals:` line is the window's count. vgdb finds the process's FIFOs by the
 * HOST variable (…-by-<user>-on-<HOST>), which Herald's own settings set to 127.0.0.1: vgdb is given the same.
 */
async function dumpInstructions(pid: number, out: string, k: number): Promise<number> {
  const r = spawnSync('vgdb', [`--pid=${pid}`, 'dump'], { encoding: 'utf8', env: { ...process.env, HOST: '127.0.0.1' }, timeout: 120_000 });
  if (r.status !== 0) throw new Error(`vgdb --pid=${pid} dump failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  const said = `${r.stdout}${r.stderr}`;
  const file = `${out}.${k}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    const m = /^totals:\s+(\d+)/m.exec(text);
    if (m) return Number(m[1]);
    if (Date.now() > deadline) throw new Error(`no totals line in ${file} 120 s after vgdb --pid=${pid} dump, which said:\n${said}\nvgdb -l:\n${spawnSync('vgdb', ['-l'], { encoding: 'utf8' }).stdout}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface CountRun {
  label: string;
  n: number;
  /** Instructions of the measured window (the measured send, create call to completed) per message. */
  instructionsPerMessage: number;
  windowInstructions: number;
  /** Instructions from start-up through the warm-up send; of one idle second after the measured send. */
  startupAndWarmupInstructions: number;
  idleInstructionsPerSecond: number;
  /**
   * The idle rate over the measured send's seconds, as a share of the window: an upper bound on the part of
   * the window that follows the clock (timers that poll whether or not a send runs) rather than the messages.
   */
  idleShareOfWindow: number;
  /** Wall-clock seconds under valgrind: start-up to healthy, the warm-up send, the measured send; the whole run. */
  seconds: { startup: number; warmup: number; measured: number; total: number };
  statistics: { triggered: number; delivered: number; bounces: number };
  warmupDelivered: number;
  deliveredEventsByRoute: Record<string, number>;
  sink: Seen;
  load: [number, number];
}

const IDLE_MS = 5_000;

/** One count: a fresh `herald serve` of `build` under callgrind sends the warm-up list, then the measured one. */
async function countedSend(b: SendBench, lists: { warmup: number; measured: number }, build: Build, outDir: string, label: string, n: number): Promise<CountRun> {
  await b.admin.query('TRUNCATE deliveries');
  await b.admin.query('VACUUM ANALYZE deliveries');
  return withMigrationsOf(b.admin, build, async () => {
    const t0 = Date.now();
    const load0 = os.loadavg()[0];
    const base = path.join(outDir, `${label}-${n}`);
    const out = `${base}.callgrind`;
    const herald = await startServe({
      databaseUrl: b.url,
      smtpPort: b.port,
      dataDir: b.dataDir,
      publicUrl: PUBLIC_URL,
      cpu: PIN ? '0' : undefined,
      bin: build.bin,
      wrap: ['valgrind', '--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${out}`, `--log-file=${base}.valgrind.log`],
      readyWithinMs: 900_000,
    });
    try {
      const t1 = Date.now();
      await readSenderDns(herald.baseUrl, b.f.account, b.f.senderId);
      const warm = await createSend(herald.baseUrl, b.f.account, { senderId: b.f.senderId, groupId: b.f.groupId, typeId: lists.warmup, name: `Warm-up ${label} #${n}` });
      const warmRow = await waitCompleted(b.c, warm.utr, herald, 3_600_000);
      await ask(b.sink, { type: 'reset', keep: 0 });
      const startupAndWarmup = await dumpInstructions(herald.pid, out, 1);
      const t2 = Date.now();
      const { utr } = await createSend(herald.baseUrl, b.f.account, { senderId: b.f.senderId, groupId: b.f.groupId, typeId: lists.measured, name: `Counted ${label} #${n}` });
      const row = await waitCompleted(b.c, utr, herald, 3_600_000);
      const windowInstructions = await dumpInstructions(herald.pid, out, 2);
      const t3 = Date.now();
      await new Promise((r) => setTimeout(r, IDLE_MS));
      const idleFrom = Date.now();
      const idle = await dumpInstructions(herald.pid, out, 3);
      const idleSeconds = (Date.now() - idleFrom + IDLE_MS) / 1000;
      const sink = await ask<SinkStats>(b.sink, { type: 'stats' });
      const events = await b.c.query<{ route: string; n: number }>(
        `SELECT coalesce(data->>'route', '') AS route, count(*)::int AS n FROM events WHERE user_id = $1 AND single_send_id = $2 AND type = 'delivered' GROUP BY 1 ORDER BY 1`,
        [b.f.userId, row.id],
      );
      const r: CountRun = {
        label,
        n,
        instructionsPerMessage: Math.round(windowInstructions / Math.max(1, row.delivered)),
        windowInstructions,
        startupAndWarmupInstructions: startupAndWarmup,
        idleInstructionsPerSecond: Math.round(idle / idleSeconds),
        idleShareOfWindow: round(((idle / idleSeconds) * ((t3 - t2) / 1000)) / windowInstructions, 4),
        seconds: { startup: round((t1 - t0) / 1000, 1), warmup: round((t2 - t1) / 1000, 1), measured: round((t3 - t2) / 1000, 1), total: 0 },
        statistics: { triggered: row.triggered, delivered: row.delivered, bounces: row.bounces },
        warmupDelivered: warmRow.delivered,
        deliveredEventsByRoute: Object.fromEntries(events.rows.map((e) => [e.route, e.n])),
        sink: (({ samples: _samples, ...rest }) => rest)(sink),
        load: [round(load0, 2), round(os.loadavg()[0], 2)],
      };
      r.seconds.total = round((Date.now() - t0) / 1000, 1);
      log(
        `${label} #${n}: ${r.instructionsPerMessage.toLocaleString('en')} instructions a message (${(windowInstructions / 1e9).toFixed(3)} G over ${row.delivered}); ` +
          `start-up ${r.seconds.startup} s, warm-up ${r.seconds.warmup} s, measured ${r.seconds.measured} s; idle ${(r.idleInstructionsPerSecond / 1e6).toFixed(1)} M/s ` +
          `(≤ ${(r.idleShareOfWindow * 100).toFixed(1)} % of the window); load ${r.load.join(' → ')}`,
      );
      return r;
    } finally {
      const stopped = await herald.stop(120_000);
      if (stopped.code !== 0) log(`herald serve (valgrind) exited with ${stopped.code} after SIGTERM`);
    }
  });
}

/**
 * Part of a window follows the clock, not the messages: timers that poll whether or not a send runs (a
 * measured send that took 754 s instead of 292 s counted 14 % more at the same 1,200 messages). Over one
 * side's runs (the same messages each, different lengths) the least-squares fit of window = a·M + b·T
 * (T its seconds) gives a, the instructions a message with the clock's part taken out; undefined when the
 * runs' lengths are (nearly) the same. worstResidual: the largest miss of the fit over a window.
 */
function clockFit(rs: CountRun[]): { perMessage: number; perSecond: number; worstResidual: number } | undefined {
  if (rs.length < 2) return undefined;
  const t = rs.map((r) => r.seconds.measured);
  const y = rs.map((r) => r.windowInstructions);
  const mt = t.reduce((a, x) => a + x, 0) / t.length;
  const my = y.reduce((a, x) => a + x, 0) / y.length;
  const vt = t.reduce((a, x) => a + (x - mt) ** 2, 0);
  if (vt < 1e-9 || Math.max(...t) - Math.min(...t) < 0.1 * mt) return undefined;
  const perSecond = t.reduce((a, x, i) => a + (x - mt) * (y[i] - my), 0) / vt;
  const intercept = my - perSecond * mt;
  const worstResidual = Math.max(...y.map((v, i) => Math.abs(v - (intercept + perSecond * t[i])) / v));
  return { perMessage: Math.round(intercept / RECIPIENTS), perSecond: Math.round(perSecond), worstResidual: round(worstResidual, 4) };
}

async function instructions(b: SendBench, lists: { warmup: number; measured: number }, head: Build, before: Build, started: number) {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), `herald-callgrind-${new Date().toISOString().slice(0, 16).replace(/[-:T]/g, '')}-`));
  log(`callgrind files in ${outDir}`);
  const runs: CountRun[] = [];
  for (let n = 1; n <= RUNS; n += 1) {
    runs.push(await countedSend(b, lists, head, outDir, 'HEAD', n));
    runs.push(await countedSend(b, lists, before, outDir, 'before', n));
  }
  const side = (label: string) => runs.filter((r) => r.label === label);
  const per = (rs: CountRun[]) => rs.map((r) => r.instructionsPerMessage);
  /** Largest minus smallest over the median, of one side's figures. */
  const spread = (xs: number[]) => round((Math.max(...xs) - Math.min(...xs)) / median(xs), 4);
  const h = per(side('HEAD'));
  const bf = per(side('before'));
  const rawRatio = round(median(h) / median(bf), 4);
  const fits = { head: clockFit(side('HEAD')), before: clockFit(side('before')) };
  // The fit's per-message figures when both sides have one (runs of different lengths), else the medians.
  const ratio = fits.head && fits.before ? round(fits.head.perMessage / fits.before.perMessage, 4) : rawRatio;
  const pass = ratio <= TARGET_INSTRUCTIONS;
  const checks = {
    receivedExactlyOnce: runs.every((r) => r.sink.received === RECIPIENTS && r.sink.duplicates === 0 && r.statistics.delivered === RECIPIENTS && r.statistics.triggered === RECIPIENTS && r.statistics.bounces === 0),
    warmupDelivered: runs.every((r) => r.warmupDelivered === WARMUP),
    headEventsOnRouteDefault: side('HEAD').every((r) => r.deliveredEventsByRoute.default === RECIPIENTS),
  };
  const file = writeResult('routes-instructions', {
    ...(await resultHead(b, 'routes-instructions', head)),
    before: { ref: before.ref, sha: before.sha },
    warmup: WARMUP,
    valgrind: run('valgrind', ['--version']).trim(),
    callgrindFiles: outDir,
    target: { headOverBeforeAtMost: TARGET_INSTRUCTIONS, ratio, of: fits.head && fits.before ? 'clock fit' : 'medians', pass },
    instructionsPerMessage: { head: h, before: bf, headMedian: median(h), beforeMedian: median(bf), headSpread: spread(h), beforeSpread: spread(bf), rawRatio },
    clockFit: fits,
    checks,
    runs,
    totalMs: Date.now() - started,
  });
  const fmt = (xs: number[]) => xs.map((x) => x.toLocaleString('en')).join(', ');
  process.stdout.write(
    [
      '',
      `Delivery routes, one route, instructions — HEAD ${head.sha.slice(0, 7)} against ${before.sha.slice(0, 7)}, callgrind, ${WARMUP.toLocaleString('en')} warm-up + ${RECIPIENTS.toLocaleString('en')} measured recipients, ${RUNS} runs each, alternating`,
      `  HEAD instructions a message:   ${fmt(h)}   (spread ${(spread(h) * 100).toFixed(2)} %)`,
      `  before instructions a message: ${fmt(bf)}   (spread ${(spread(bf) * 100).toFixed(2)} %)`,
      `  idle instructions a second: ${fmt(runs.map((r) => r.idleInstructionsPerSecond))} (at most ${runs.map((r) => `${(r.idleShareOfWindow * 100).toFixed(1)} %`).join(', ')} of the window)`,
      `  seconds a run (start-up / warm-up / measured / total): ${runs.map((r) => `${r.label} ${r.seconds.startup}/${r.seconds.warmup}/${r.seconds.measured}/${r.seconds.total}`).join('; ')}`,
      `  HEAD / before (medians) ${rawRatio}`,
      ...(['head', 'before'] as const).map((k) => {
        const f = fits[k];
        return `  ${k} fit (window = a × messages + b × seconds): ${f ? `a = ${f.perMessage.toLocaleString('en')} a message, b = ${f.perSecond.toLocaleString('en')} a second, largest residual ${(f.worstResidual * 100).toFixed(2)} %` : 'needs runs of different lengths'}`;
      }),
      `  HEAD / before (${fits.head && fits.before ? 'fitted a' : 'medians'}) ${ratio}; target ≤ ${TARGET_INSTRUCTIONS} — ${pass ? 'PASS' : 'FAIL'}`,
      checksLine(checks),
      '',
    ].join('\n'),
  );
  finishRun(file, started, pass, checks);
}

async function main() {
  const started = Date.now();
  if ([COMPARE, INSTRUCTIONS, ROUTES >= 2].filter(Boolean).length !== 1) {
    throw new Error('usage: bench/routes.ts --compare [ref] | --instructions [ref] | --routes <N ≥ 2>  [--recipients n] [--warmup n] [--runs pairs] [--head ref] [--keep] [--no-pin]');
  }
  const head = worktreeBuild(HEAD_REF);
  const before = COMPARE || INSTRUCTIONS ? worktreeBuild(BEFORE_REF) : undefined;
  await withSendBench({ db: typeof opts.get('db') === 'string' ? String(opts.get('db')) : INSTRUCTIONS ? 'herald_bench_routes_instructions' : 'herald_bench_routes', account: 'Bench routes', pin: PIN, keep: opts.has('keep'), build: false }, async (b) => {
    const typeId = await makeList(b.c, b.f, 'Bench routes', 'r-', RECIPIENTS);
    const warmupId = INSTRUCTIONS ? await makeList(b.c, b.f, 'Bench routes warm-up', 'w-', WARMUP) : 0;
    await b.admin.query('VACUUM ANALYZE');
    await b.admin.query('CHECKPOINT');
    log(`${RECIPIENTS.toLocaleString('en')} contacts; sink on port ${b.port}; HEAD ${head.sha.slice(0, 7)} from ${head.dir}`);
    if (INSTRUCTIONS) await instructions(b, { warmup: warmupId, measured: typeId }, head, before!, started);
    else if (before) await compare(b, typeId, head, before, started);
    else await routes(b, typeId, head, started);
  });
}

runMain(main);
