/**
 * Fan-out and memory benchmark (issue 9): a single send to 1,000,000 recipients through
 * Herald as `npm start` runs it (one `herald serve` process, API and worker, default
 * settings), created with `POST /single/send/create` (schedule_type 0) and run to completion
 * into an SMTP sink that accepts and discards. Measured per run, from the create call:
 *
 *   - fan-out: until every recipient row is written (fanout_done_at) — target ≤ 10 s;
 *   - first message: until the sink has the first message — target ≤ 2 s;
 *   - Herald's peak RSS over the whole send, create call to completed (VmHWM, reset before
 *     the call, and sampled every 100 ms) — target ≤ 200 MB.
 *
 * The baseline in the same run: the same 1,000,000 rows written by one bare `INSERT … SELECT`
 * of (user, send, contact, email) from the contacts, with deliveries' indexes and checks but
 * no suppression, no chunks, no Herald — what the table itself costs on this machine, timed
 * right before each run. Target (issue 33): the fan-out from the create call ≤ 1.5 × that bare
 * insert, median of the runs' ratios — the figure that does not move with the machine's speed.
 *
 *   npx tsx bench/fanout.ts [--recipients 1000000] [--runs 3] [--fanout-only] [--no-build] [--keep] [--no-pin]
 *                           [--herald-env SEND_RATE=1,…]   (diagnostics: settings changed on purpose; no target then)
 *
 * --fanout-only stops each run once the audience is written (no memory figure). Prints best
 * and median, writes bench/out/fanout.json, exits 1 on FAIL or a failed check.
 */
import os from 'node:os';
import type { Client } from 'pg';
import { checksLine, finishRun, log, runMain } from './lib/herald';
import { serverInfo } from './lib/pg';
import { bestMedian, resetPeakRss, waitForQuiet, writeResult } from './lib/sample';
import { args } from './lib/setup';
import { rssSampler } from './lib/send-checks';
import { machineInfo, withSendBench } from './lib/send-bench';
import { makeList, suppress, type Fixture } from './lib/send-fixture';
import { createSend, sendRow, startServe } from './lib/send-herald';
import { ask, type Child, cpuMs } from './lib/send-procs';
import type { SinkStats } from './lib/send-sink';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);

const DB = 'herald_bench_fanout';
const RECIPIENTS = num('recipients', 1_000_000);
const SUPPRESSED = 1_000;
const RUNS = Math.max(1, num('runs', 3));
const FANOUT_ONLY = opts.has('fanout-only');
const PIN = !opts.has('no-pin');
const TARGET = { fanoutMs: 10_000, fanoutOverBareInsert: 1.5, firstMessageMs: 2_000, peakRssMb: 200 };
const PUBLIC_URL = 'https://herald.bench.test';
/** --herald-env: settings changed on purpose for a diagnosis (e.g. SEND_RATE=1: the fan-out without the sending beside it). */
const HERALD_ENV: Record<string, string> = Object.fromEntries(
  (typeof opts.get('herald-env') === 'string' ? String(opts.get('herald-env')).split(',') : []).filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The table's own cost: the audience in one bare INSERT … SELECT into the empty table, rolled back. */
async function bareInsert(admin: Client, f: Fixture, typeId: number): Promise<number> {
  await admin.query('TRUNCATE deliveries');
  const send = await admin.query<{ id: number }>(
    `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader, from_sender, reply_to, status)
     VALUES ($1, gen_random_uuid(), 2, $2, $3, 'bare insert', 's', 'p', 'news@bench-news.test', 'reply@bench-news.test', 0) RETURNING id`,
    [f.userId, f.senderId, f.groupId],
  );
  await admin.query('BEGIN');
  try {
    const t = Date.now();
    await admin.query(
      `INSERT INTO deliveries (user_id, single_send_id, contact_id, email)
       SELECT $1, $2, c.id, c.email FROM contacts c WHERE c.user_id = $1 AND c.contact_type_id = $3 AND c.deleted_at IS NULL`,
      [f.userId, send.rows[0].id, typeId],
    );
    return Date.now() - t;
  } finally {
    await admin.query('ROLLBACK');
    await admin.query('DELETE FROM single_sends WHERE id = $1', [send.rows[0].id]);
  }
}

async function runOnce(c: Client, admin: Client, url: string, sink: Child, port: number, f: Fixture, typeId: number, dataDir: string, n: number) {
  const bareInsertMs = await bareInsert(admin, f, typeId);
  await admin.query('TRUNCATE deliveries');
  await admin.query('VACUUM ANALYZE deliveries');
  await admin.query('CHECKPOINT');
  const herald = await startServe({ databaseUrl: url, smtpPort: port, dataDir, publicUrl: PUBLIC_URL, cpu: PIN ? '0' : undefined, env: HERALD_ENV });
  try {
    await ask(sink, { type: 'reset', keep: 0 });
    resetPeakRss(herald.pid);
    let phase = 'fan-out';
    const rss = rssSampler(herald.pid, () => phase);
    const cpu0 = cpuMs(herald.pid);
    const { utr, calledAt } = await createSend(herald.baseUrl, f.account, { senderId: f.senderId, groupId: f.groupId, typeId, name: `Bench 1M #${n}` });
    let row = await sendRow(c, utr);
    let fanoutRssMb = 0;
    const deadline = Date.now() + 3_600_000;
    let lastLog = Date.now();
    for (;;) {
      if (row.fanout_done_at) phase = 'sending';
      else fanoutRssMb = Math.max(fanoutRssMb, rss.current());
      if (row.status === 3 || (FANOUT_ONLY && row.fanout_done_at)) break;
      if (herald.child.exitCode !== null) throw new Error(`herald exited with ${herald.child.exitCode}:\n${herald.output()}`);
      if (Date.now() > deadline) throw new Error(`1M send not completed within an hour: ${JSON.stringify(row)}`);
      if (Date.now() - lastLog > 30_000) {
        lastLog = Date.now();
        log(`  run ${n}: delivered ${row.delivered.toLocaleString('en')}, RSS ${rss.current()} MB`);
      }
      await sleep(row.fanout_done_at ? 200 : 20);
      row = await sendRow(c, utr);
    }
    const mem = rss.stop();
    const heraldCpuMs = cpuMs(herald.pid) - cpu0;
    const seen = await ask<SinkStats>(sink, { type: 'stats', prefix: 'sup-' });
    const sentAt = row.sent_at!.getTime();
    const doneAt = row.completed_at?.getTime();
    return {
      utr,
      bareInsertMs,
      fanoutFromCreateMs: row.fanout_done_at!.getTime() - calledAt,
      fanoutFromStartMs: row.fanout_done_at!.getTime() - sentAt,
      createToStartMs: sentAt - calledAt,
      firstMessageMs: seen.firstAt === null ? null : seen.firstAt - calledAt,
      completedMs: doneAt === undefined ? null : doneAt - calledAt,
      rate: doneAt === undefined ? null : Math.round((row.delivered / (doneAt - calledAt)) * 1000),
      statistics: { status: row.status, triggered: row.triggered, delivered: row.delivered, bounces: row.bounces },
      herald: { cpuMs: heraldCpuMs, peakRssMb: mem.vmHwmMb, peakSampledRssMb: mem.peakSampledMb, fanoutPeakRssMb: fanoutRssMb },
      rssTimeline: mem.timeline,
      sink: { ...seen, samples: undefined },
    };
  } finally {
    const stopped = await herald.stop(60_000);
    if (stopped.code !== 0) log(`herald serve exited with ${stopped.code} after SIGTERM`);
  }
}

async function main() {
  const started = Date.now();
  await withSendBench({ db: DB, account: 'Bench fanout', pin: PIN, keep: opts.has('keep'), build: !opts.has('no-build') }, async ({ dataDir, sink, port, url, c, admin, f }) => {
    const t = Date.now();
    const typeId = await makeList(c, f, 'Bench 1M', 'm-', RECIPIENTS, { prefix: 'sup-', count: SUPPRESSED });
    await suppress(c, f, 'sup-', SUPPRESSED);
    await admin.query('VACUUM ANALYZE');
    log(`${(RECIPIENTS + SUPPRESSED).toLocaleString('en')} contacts (${SUPPRESSED} suppressed) in ${((Date.now() - t) / 1000).toFixed(1)} s`);

    const runs = [];
    for (let r = 1; r <= RUNS; r += 1) {
      const quiet = await waitForQuiet(120_000);
      const load0 = os.loadavg()[0];
      const result = await runOnce(c, admin, url, sink, port, f, typeId, dataDir, r);
      const load = [load0, os.loadavg()[0]];
      const bare = result.bareInsertMs;
      log(
        `run ${r}/${RUNS}: fan-out ${result.fanoutFromCreateMs} ms from the create call (${result.fanoutFromStartMs} ms from the start; bare INSERT ${bare} ms), ` +
          `first message ${result.firstMessageMs} ms, ` +
          (FANOUT_ONLY ? '' : `completed in ${((result.completedMs ?? 0) / 1000).toFixed(1)} s (${result.rate} msg/s), `) +
          `peak RSS ${result.herald.peakRssMb} MB (fan-out ${result.herald.fanoutPeakRssMb} MB); ${(result.fanoutFromCreateMs / bare).toFixed(2)} × the bare insert; ` +
          `background ${quiet}, load ${load.map((x) => x.toFixed(2)).join(' → ')}`,
      );
      runs.push({ quiet, load, ...result });
    }
    const summary = {
      fanoutFromCreateMs: bestMedian(runs.map((r) => r.fanoutFromCreateMs)),
      fanoutFromStartMs: bestMedian(runs.map((r) => r.fanoutFromStartMs)),
      bareInsertMs: bestMedian(runs.map((r) => r.bareInsertMs)),
      fanoutOverBareInsert: bestMedian(runs.map((r) => Math.round((r.fanoutFromCreateMs / r.bareInsertMs) * 100) / 100)),
      loadAverage1m: runs.map((r) => r.load),
      firstMessageMs: bestMedian(runs.map((r) => r.firstMessageMs ?? NaN)),
      peakRssMb: FANOUT_ONLY ? null : bestMedian(runs.map((r) => r.herald.peakRssMb)),
      msgPerS: FANOUT_ONLY ? null : bestMedian(runs.map((r) => r.rate ?? NaN), false),
    };
    const checks = FANOUT_ONLY
      ? { everyRecipientWritten: runs.every((r) => r.statistics.triggered === RECIPIENTS) }
      : {
          everyRecipientWritten: runs.every((r) => r.statistics.triggered === RECIPIENTS),
          sinkReceivedExactly: runs.every((r) => r.sink.received === RECIPIENTS && r.sink.unique === RECIPIENTS && r.sink.duplicates === 0),
          noSuppressedAddress: runs.every((r) => r.sink.withPrefix === 0),
          statisticsMatchSink: runs.every((r) => r.statistics.delivered === r.sink.received && r.statistics.bounces === 0),
        };
    const met = {
      fanout: summary.fanoutFromCreateMs.median <= TARGET.fanoutMs,
      fanoutOverBareInsert: summary.fanoutOverBareInsert.median <= TARGET.fanoutOverBareInsert,
      firstMessage: summary.firstMessageMs.median <= TARGET.firstMessageMs,
      peakRss: summary.peakRssMb === null ? null : Math.max(...summary.peakRssMb.runs) <= TARGET.peakRssMb,
    };
    const result = {
      benchmark: 'fanout',
      when: new Date().toISOString(),
      machine: machineInfo(),
      postgres: await serverInfo(c),
      recipients: RECIPIENTS,
      heraldEnv: HERALD_ENV,
      target: { ...TARGET, met },
      summary,
      checks,
      runs,
      totalMs: Date.now() - started,
    };
    const file = writeResult('fanout', result);
    const line = (name: string, x: { best: number; median: number; runs: number[] } | null, unit: string) =>
      x ? `  ${name.padEnd(34)} best ${x.best}${unit}, median ${x.median}${unit}  [${x.runs.join(', ')}]` : `  ${name.padEnd(34)} not measured (--fanout-only)`;
    const verdict = (v: boolean | null) => (v === null ? 'not measured' : v ? 'PASS' : 'FAIL');
    process.stdout.write(
      [
        '',
        `Fan-out benchmark — ${RECIPIENTS.toLocaleString('en')} recipients, ${RUNS} runs, Herald as npm start runs it (` +
          (Object.keys(HERALD_ENV).length ? `changed on purpose: ${JSON.stringify(HERALD_ENV)}; not the target's setting)` : 'defaults)'),
        line('fan-out, from the create call', summary.fanoutFromCreateMs, ' ms'),
        line('fan-out, from the send’s start', summary.fanoutFromStartMs, ' ms'),
        line('baseline: one bare INSERT … SELECT', summary.bareInsertMs, ' ms'),
        line('fan-out / bare insert', summary.fanoutOverBareInsert, ' ×'),
        line('first message, from the create call', summary.firstMessageMs, ' ms'),
        line('peak RSS over the whole send', summary.peakRssMb, ' MB'),
        line('create → completed', summary.msgPerS, ' msg/s'),
        `  load average (1 min) per run: ${summary.loadAverage1m.map(([a, b]) => `${a.toFixed(2)} → ${b.toFixed(2)}`).join(', ')}`,
        `  targets: fan-out ≤ ${TARGET.fanoutOverBareInsert} × the bare insert (median) ${verdict(met.fanoutOverBareInsert)}; ` +
          `fan-out ≤ ${TARGET.fanoutMs / 1000} s (median) ${verdict(met.fanout)}; first message ≤ ${TARGET.firstMessageMs / 1000} s (median) ${verdict(met.firstMessage)}; ` +
          `peak RSS ≤ ${TARGET.peakRssMb} MB (every run) ${verdict(met.peakRss)}`,
        checksLine(checks),
        '',
      ].join('\n'),
    );
    finishRun(file, started, !Object.values(met).some((v) => v === false), checks);
  });
}

runMain(main);
