/**
 * Send benchmark (issue 9): a single send of 100,000 recipients through Herald as `npm start`
 * runs it (one `herald serve` process, API and worker, default settings) into an SMTP sink
 * that accepts and discards, timed from the create call (`POST /single/send/create`,
 * schedule_type 0) to status 3 (completed) — fan-out, claims, rendering, sending and
 * bookkeeping included. In the same run, two baselines on the same pool (5 connections, 20
 * messages in flight) and the same messages (bench/lib/send-baseline.ts):
 *
 *   raw       Herald's messages pre-rendered to MIME, sent as nodemailer `raw` on its pooled
 *             transport: that transport's limit (unsigned; for reference)
 *   signed    the same raw messages, each DKIM-signed right before it goes with Herald's own
 *             signing steps and a key parsed once, the RSA signature in libuv's thread pool as
 *             Herald makes it: the limit for a sender that signs every message and sends with
 *             nodemailer's pooled transport (`--no-pin` lets the pool's threads use the other
 *             CPU; pinned, they share the sender's)
 *   pooled    as signed, through Herald's own pool of nodemailer connections (src/mail/
 *             smtp-pool.ts) instead of `sendMail`: the limit of the path Herald sends by since
 *             2026-11-27; Herald's ratio to it is printed for reference (no target)
 *
 * Target: Herald ≥ 80 % of the signed baseline (median of the rounds' ratios): every message
 * Herald sends is DKIM-signed (RSA-2048), so the unsigned raw limit is no longer one it could
 * reach (the signature alone costs about as much CPU as the rest of a message). Each round runs
 * raw, signed, Herald and signed again back to back after waiting for quiet CPUs, and Herald's
 * ratio is against the mean of the two signed runs around it: this machine's speed drifts by
 * tens of percent within minutes, and one baseline before Herald left the ratio to that drift
 * (bench/README.md, "Send"). Best and median are printed and
 * written to bench/out/send.json; the exit code is 1 on FAIL or on a failed check.
 *
 * `--dkim` (DKIM signing, every message of Herald's signed anyway): the signed baseline is
 * replaced by nodemailer composing *and DKIM-signing* each message with its `dkim` option
 * (RSA-2048, relaxed/relaxed), and the target is Herald ≥ 1.5 × that baseline (median of the
 * rounds' ratios); the samples at the sink must carry Herald's DKIM-Signature. Written to
 * bench/out/send-dkim.json.
 *
 *   npx tsx bench/send.ts [--dkim] [--recipients 100000] [--runs 3] [--no-build] [--keep] [--no-pin] [--cpu-prof]
 *                         [--herald-node-args "--trace-gc"] [--herald-log file]   (diagnostics)
 *
 * Processes: the sink, each baseline and Herald run in child processes of their own. On this
 * 2-core machine the sender under test (a baseline, or Herald) is pinned to CPU 0 and the sink
 * to CPU 1 (taskset; --no-pin leaves scheduling to the kernel); PostgreSQL is not pinned.
 */
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import { checksLine, finishRun, log, ROOT, runMain, SERVE_NODE_ARGS } from './lib/herald';
import { serverInfo } from './lib/pg';
import { median, resetPeakRss, waitForQuiet, writeResult } from './lib/sample';
import { args } from './lib/setup';
import { machineShare, runBaseline } from './lib/baseline-run';
import type { BaselineMode } from './lib/send-baseline';
import { checkSamples, rssSampler } from './lib/send-checks';
import { machineInfo, withSendBench } from './lib/send-bench';
import { makeList, suppress, type Fixture } from './lib/send-fixture';
import { createSend, readSenderDns, sendRow, startServe } from './lib/send-herald';
import { ask, type Child, cpuMs, machineBusyMs } from './lib/send-procs';
import type { SinkStats } from './lib/send-sink';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);

const DB = opts.has('dkim') ? 'herald_bench_send_dkim' : 'herald_bench_send';
const RECIPIENTS = num('recipients', 100_000);
/** Contacts of the list that must not be sent to (half global unsubscribers, half in the send's group). */
const SUPPRESSED = 1_000;
const RUNS = Math.max(1, num('runs', 3));
const PIN = !opts.has('no-pin');
const SENDER_CPU = PIN ? '0' : undefined;
const SINK_CPU = PIN ? '1' : undefined;
/** Herald's defaults (src/config.ts), which the baselines mirror. */
const POOL = 5;
const IN_FLIGHT = 20;
const TARGET_RATIO = 0.8;
const PUBLIC_URL = 'https://herald.bench.test';
const DKIM = opts.has('dkim');
const TARGET_DKIM_RATIO = 1.5;
/** The nodemailer baseline's key: RSA-2048 like Herald's. */
const BASELINE_KEY = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
}).privateKey;

const best = (xs: number[]) => Math.max(...xs);
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** --cpu-prof: CPU profiles of each sender, in bench/out/prof/<name>/ (one file per thread). */
const profileArgs = (name: string) => (opts.has('cpu-prof') ? ['--cpu-prof', '--cpu-prof-dir', path.join(ROOT, 'bench', 'out', 'prof', name)] : []);

const sinkStats = (sink: Child, prefix?: string) => ask<SinkStats>(sink, { type: 'stats', prefix });
const baseline = (mode: BaselineMode, sink: Child, port: number, html: string) =>
  runBaseline({ mode, sink, port, html, count: RECIPIENTS, poolSize: POOL, concurrency: IN_FLIGHT, publicUrl: PUBLIC_URL, cpu: SENDER_CPU, nodeArgs: [...SERVE_NODE_ARGS, ...profileArgs(`baseline-${mode}`)], dkimKey: BASELINE_KEY });
const sinkReset = (sink: Child, keep = 0) => ask(sink, { type: 'reset', keep });

/** One Herald round: a fresh `herald serve`, one 100k send from the create call to completed. */
async function runHerald(c: Client, admin: Client, url: string, sink: Child, port: number, f: Fixture, typeId: number, dataDir: string, n: number) {
  // Every round starts from the same state: no recipient rows of earlier rounds.
  await admin.query('TRUNCATE deliveries');
  await admin.query('VACUUM ANALYZE deliveries');
  const extra = typeof opts.get('herald-node-args') === 'string' ? String(opts.get('herald-node-args')).split(/\s+/).filter(Boolean) : [];
  const herald = await startServe({ databaseUrl: url, smtpPort: port, dataDir, publicUrl: PUBLIC_URL, cpu: SENDER_CPU, nodeArgs: [...profileArgs('herald'), ...extra] });
  const logFile = opts.get('herald-log');
  if (typeof logFile === 'string') {
    const out = fs.createWriteStream(logFile, { flags: 'a' });
    herald.child.stdout!.pipe(out);
    herald.child.stderr!.pipe(out);
  }
  try {
    await readSenderDns(herald.baseUrl, f.account, f.senderId);
    await sinkReset(sink, 20);
    resetPeakRss(herald.pid);
    const rss = rssSampler(herald.pid, () => 'send');
    const cpu0 = cpuMs(herald.pid);
    const busy0 = machineBusyMs();
    const t0 = Date.now();
    const { utr, calledAt } = await createSend(herald.baseUrl, f.account, { senderId: f.senderId, groupId: f.groupId, typeId, name: `Bench 100k #${n}` });
    let row = await sendRow(c, utr);
    const deadline = Date.now() + 600_000;
    while (row.status !== 3) {
      if (herald.child.exitCode !== null) throw new Error(`herald exited with ${herald.child.exitCode}:\n${herald.output()}`);
      if (Date.now() > deadline) throw new Error(`send not completed within 600 s: ${JSON.stringify(row)}`);
      await sleep(50);
      row = await sendRow(c, utr);
    }
    const heraldCpuMs = cpuMs(herald.pid) - cpu0;
    const machine = machineShare(busy0, t0, heraldCpuMs);
    const mem = rss.stop();
    const seen = await sinkStats(sink, 'sup-');
    const ms = row.completed_at!.getTime() - calledAt;
    const statuses = await c.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM deliveries WHERE single_send_id = $1 GROUP BY status ORDER BY status`,
      [row.id],
    );
    return {
      utr,
      createToCompletedMs: ms,
      rate: (row.delivered / ms) * 1000,
      createToStartedMs: row.sent_at!.getTime() - calledAt,
      fanoutMs: row.fanout_done_at!.getTime() - row.sent_at!.getTime(),
      firstMessageMs: seen.firstAt === null ? null : seen.firstAt - calledAt,
      statistics: { triggered: row.triggered, delivered: row.delivered, bounces: row.bounces },
      deliveries: Object.fromEntries(statuses.rows.map((r) => [r.status, r.n])),
      herald: { cpuMs: heraldCpuMs, cpuMsPerMessage: round(heraldCpuMs / Math.max(1, row.delivered), 3), peakRssMb: mem.vmHwmMb, peakSampledRssMb: mem.peakSampledMb },
      sinkCpuMsPerMessage: round(seen.cpuMs / Math.max(1, seen.received), 3),
      // PostgreSQL (and the neighbours): what the machine did besides Herald and the sink.
      machine: { ...machine, restMs: machine.restMs - seen.cpuMs, restMsPerMessage: round((machine.restMs - seen.cpuMs) / Math.max(1, seen.received), 3) },
      sink: { ...seen, samples: undefined },
      sampleCheck: await checkSamples(seen.samples, PUBLIC_URL),
      // Every message is signed; in --dkim mode the samples must show it (d= the sender's domain).
      signedSamples: seen.samples.filter((raw) => /^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=bench-news\.test;/.test(raw)).length,
    };
  } finally {
    const stopped = await herald.stop(60_000);
    if (stopped.code !== 0) log(`herald serve exited with ${stopped.code} after SIGTERM`);
  }
}

type Round = {
  quiet: number;
  raw: Awaited<ReturnType<typeof runBaseline>>;
  composed: Awaited<ReturnType<typeof runBaseline>>;
  herald: Awaited<ReturnType<typeof runHerald>>;
  /** The same baseline as `composed`, right after Herald: the round's ratio is against the mean of the two. */
  composedAfter: Awaited<ReturnType<typeof runBaseline>>;
  /** Signed messages through Herald's own SMTP pool (not with --dkim): the limit of Herald's sending path, for reference. */
  pooled?: Awaited<ReturnType<typeof runBaseline>>;
};

/** The signed (or --dkim) baseline's rate around Herald's run: the mean of the runs before and after it. */
const composedRate = (r: Round) => (r.composed.rate + r.composedAfter.rate) / 2;

function checksOf(rounds: Round[]) {
  const h = rounds.map((r) => r.herald);
  return {
    sinkReceivedExactly: h.every((x) => x.sink.received === RECIPIENTS),
    noAddressTwice: h.every((x) => x.sink.duplicates === 0 && x.sink.unique === RECIPIENTS),
    noSuppressedAddress: h.every((x) => x.sink.withPrefix === 0),
    statisticsMatchSink: h.every((x) => x.statistics.delivered === x.sink.received && x.statistics.triggered === RECIPIENTS && x.statistics.bounces === 0),
    // Suppressed contacts get a `dropped` row (DESIGN §5), every other one is sent.
    everyRowSent: h.every((x) => x.deliveries.sent === RECIPIENTS && Object.entries(x.deliveries).every(([k, n]) => k === 'sent' || (k === 'dropped' && n === SUPPRESSED))),
    messagesRendered: h.every((x) => x.sampleCheck.checked > 0 && x.sampleCheck.problems.length === 0),
    baselinesReceivedExactly: rounds.every((r) => [r.raw, r.composed, r.composedAfter, ...(r.pooled ? [r.pooled] : [])].every((b) => b.sink.received === RECIPIENTS && b.sink.duplicates === 0 && b.failed === 0)),
    ...(DKIM ? { samplesSigned: h.every((x) => x.signedSamples === x.sampleCheck.checked && x.signedSamples > 0) } : {}),
  };
}

function summarise(rounds: Round[]) {
  const rates = (pick: (r: Round) => number) => {
    const xs = rounds.map(pick);
    return { best: Math.round(best(xs)), median: Math.round(median(xs)), runs: xs.map(Math.round) };
  };
  const ratios = (pick: (r: Round) => number) => {
    const xs = rounds.map(pick);
    return { best: round(best(xs), 3), median: round(median(xs), 3), runs: xs.map((x) => round(x, 3)) };
  };
  return {
    heraldMsgPerS: rates((r) => r.herald.rate),
    rawBaselineMsgPerS: rates((r) => r.raw.rate),
    // "composed": the signed raw baseline; with --dkim, the nodemailer baseline that composes and DKIM-signs.
    composedBaselineMsgPerS: rates(composedRate),
    heraldOverRaw: ratios((r) => r.herald.rate / r.raw.rate),
    heraldOverComposed: ratios((r) => r.herald.rate / composedRate(r)),
    ...(DKIM
      ? {}
      : {
          pooledBaselineMsgPerS: rates((r) => r.pooled!.rate),
          heraldOverPooled: ratios((r) => r.herald.rate / r.pooled!.rate),
        }),
    heraldCpuMsPerMessage: ratios((r) => r.herald.herald.cpuMsPerMessage),
    rawCpuMsPerMessage: ratios((r) => r.raw.cpuMsPerMessage),
    fanoutMs: rates((r) => r.herald.fanoutMs),
    firstMessageMs: rates((r) => r.herald.firstMessageMs ?? NaN),
    heraldPeakRssMb: ratios((r) => r.herald.herald.peakRssMb),
  };
}

async function main() {
  const started = Date.now();
  await withSendBench({ db: DB, account: 'Bench send', pin: PIN, keep: opts.has('keep'), build: !opts.has('no-build') }, async ({ dataDir, sink, port, url, c, admin, f }) => {
    const typeId = await makeList(c, f, 'Bench 100k', 'r-', RECIPIENTS, { prefix: 'sup-', count: SUPPRESSED });
    await suppress(c, f, 'sup-', SUPPRESSED);
    await admin.query('VACUUM ANALYZE');
    await admin.query('CHECKPOINT');
    const html = (await c.query<{ html_code: string }>('SELECT html_code FROM templates WHERE id = 2')).rows[0].html_code;
    log(`${(RECIPIENTS + SUPPRESSED).toLocaleString('en')} contacts (${SUPPRESSED} suppressed); sink on port ${port}`);

    const rounds: Round[] = [];
    for (let r = 1; r <= RUNS; r += 1) {
      const quiet = await waitForQuiet(120_000);
      const raw = await baseline('raw', sink, port, html);
      log(`round ${r}/${RUNS}: raw baseline ${raw.rate.toFixed(0)} msg/s (${raw.cpuMsPerMessage} ms CPU/msg, sink ${raw.sinkCpuMsPerMessage}, cores busy ${raw.machine.coresBusy}); background ${quiet}`);
      const composed = await baseline(DKIM ? 'dkim' : 'signed', sink, port, html);
      log(`round ${r}/${RUNS}: ${DKIM ? 'nodemailer dkim' : 'signed raw'} baseline ${composed.rate.toFixed(0)} msg/s (${composed.cpuMsPerMessage} ms CPU/msg)`);
      const pooled = DKIM ? undefined : await baseline('pooled', sink, port, html);
      if (pooled) log(`round ${r}/${RUNS}: signed through Herald's SMTP pool ${pooled.rate.toFixed(0)} msg/s (${pooled.cpuMsPerMessage} ms CPU/msg)`);
      const herald = await runHerald(c, admin, url, sink, port, f, typeId, dataDir, r);
      log(
        `round ${r}/${RUNS}: Herald ${herald.rate.toFixed(0)} msg/s = ${((herald.rate / raw.rate) * 100).toFixed(0)} % of raw ` +
          `(${(herald.createToCompletedMs / 1000).toFixed(1)} s, fan-out ${herald.fanoutMs} ms, first message ${herald.firstMessageMs} ms, ` +
          `${herald.herald.cpuMsPerMessage} ms CPU/msg, sink ${herald.sinkCpuMsPerMessage}, rest ${herald.machine.restMsPerMessage}, cores busy ${herald.machine.coresBusy}, peak RSS ${herald.herald.peakRssMb} MB)`,
      );
      const composedAfter = await baseline(DKIM ? 'dkim' : 'signed', sink, port, html);
      const done: Round = { quiet, raw, composed, herald, composedAfter, pooled };
      log(
        `round ${r}/${RUNS}: ${DKIM ? 'nodemailer dkim' : 'signed raw'} baseline again ${composedAfter.rate.toFixed(0)} msg/s (${composedAfter.cpuMsPerMessage} ms CPU/msg); ` +
          `Herald / mean of the two ${((herald.rate / composedRate(done)) * 100).toFixed(1)} %` +
          (pooled ? `; Herald / signed through Herald's pool ${((herald.rate / pooled.rate) * 100).toFixed(1)} %` : ''),
      );
      rounds.push(done);
    }
    const summary = summarise(rounds);
    const checks = checksOf(rounds);
    const pass = summary.heraldOverComposed.median >= (DKIM ? TARGET_DKIM_RATIO : TARGET_RATIO);
    const result = {
      benchmark: DKIM ? 'send-dkim' : 'send',
      when: new Date().toISOString(),
      machine: machineInfo(),
      postgres: await serverInfo(c),
      pinning: PIN ? { sender: `CPU ${SENDER_CPU}`, sink: `CPU ${SINK_CPU}`, postgres: 'unpinned' } : 'none',
      recipients: RECIPIENTS,
      target: DKIM ? { heraldOverNodemailerDkimMedian: TARGET_DKIM_RATIO, pass } : { heraldOverSignedRawMedian: TARGET_RATIO, pass },
      summary,
      checks,
      rounds: rounds.map((r) => ({ ...r, herald: { ...r.herald } })),
      totalMs: Date.now() - started,
    };
    const file = writeResult(DKIM ? 'send-dkim' : 'send', result);
    const line = (name: string, x: { best: number; median: number; runs: number[] }, unit = '') => `  ${name.padEnd(30)} best ${x.best}${unit}, median ${x.median}${unit}  [${x.runs.join(', ')}]`;
    process.stdout.write(
      [
        '',
        `Send benchmark — ${RECIPIENTS.toLocaleString('en')} recipients, ${RUNS} rounds, Herald as npm start runs it (defaults)`,
        line('Herald (create → completed)', summary.heraldMsgPerS, ' msg/s'),
        line('raw baseline (the limit)', summary.rawBaselineMsgPerS, ' msg/s'),
        line(DKIM ? 'nodemailer dkim baseline' : 'signed raw baseline', summary.composedBaselineMsgPerS, ' msg/s'),
        line('Herald / raw', { ...summary.heraldOverRaw, runs: summary.heraldOverRaw.runs }),
        line(DKIM ? 'Herald / nodemailer dkim' : 'Herald / signed raw', summary.heraldOverComposed),
        ...(summary.heraldOverPooled && summary.pooledBaselineMsgPerS
          ? [line('signed, Herald\'s SMTP pool', summary.pooledBaselineMsgPerS, ' msg/s'), line('Herald / signed, own pool', summary.heraldOverPooled) + '  (reference)']
          : []),
        line('Herald CPU ms per message', summary.heraldCpuMsPerMessage),
        line('raw baseline CPU ms per message', summary.rawCpuMsPerMessage),
        line('first message after create', summary.firstMessageMs, ' ms'),
        line('Herald peak RSS', summary.heraldPeakRssMb, ' MB'),
        DKIM
          ? `  target: Herald / nodemailer dkim ≥ ${TARGET_DKIM_RATIO} × (median) — ${pass ? 'PASS' : 'FAIL'}`
          : `  target: Herald / signed raw ≥ ${TARGET_RATIO * 100} % (median) — ${pass ? 'PASS' : 'FAIL'}`,
        checksLine(checks),
        '',
      ].join('\n'),
    );
    finishRun(file, started, pass, checks);
  });
}

runMain(main);
