/**
 * Tracking benchmark (issue "One event pipeline"): the open pixel `GET /t/open/<token>.gif` and
 * the click redirect `GET /t/click/<token>` under autocannon (50 connections), against Herald
 * as `npm start` runs it — `node bin/herald.js serve`, worker inside, every default (click
 * tracking on, LOG_LEVEL info with one JSON line per request, to a file), connected as the
 * ordinary role that owns the benchmark's database.
 *
 * The URLs are real: one account sends one single send (the Newsletter design with 5 links) to
 * K recipients through Herald into the discarding SMTP sink, which keeps every message; the
 * open pixel and the click links are read from the messages' HTML (PUBLIC_URL is Herald's own
 * address). autocannon cycles through them (each request the next URL, over all connections).
 *
 * Targets, each endpoint: ≥ 2,000 req/s and p99 ≤ 100 ms (median of the runs), and every hit one
 * event (every run): the `opened` events added equal Herald's hits of /t/open, the `clicked`
 * events its hits of /t/click — hits counted from Herald's request log, because autocannon does
 * not count the requests still in flight when it stops — and every answer is 200 (open) or 302
 * (click), with no errors or timeouts. Opens are warmed up (3 s) before any click is measured,
 * so every message already has its open and a click adds only its `clicked` (a first click also
 * records an `opened`; counted and shown, not judged).
 *
 *   npx tsx bench/tracking.ts [--recipients 1000] [--runs 3] [--duration 10] [--connections 50]
 *                             [--big] [--no-build] [--no-wait] [--keep]
 *
 * --big: 10,000 recipients, 30 s per measurement. Run it under `flock /tmp/herald-bench.lock`.
 * Prints a summary, writes bench/out/tracking.json and exits 1 on a FAIL.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { simpleParser } from 'mailparser';
import type { Client } from 'pg';
import { freePort } from '../test/helpers/net';
import { build, createAccount, log, ROOT } from './lib/herald';
import { startLoggedHerald, type LoggedHerald } from './lib/herald-logged';
import { connect, databaseUrl, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { median, waitForQuiet, writeResult } from './lib/sample';
import { makeFixture, makeList } from './lib/send-fixture';
import { createSend, designWithLinks, LINKS, sendRow } from './lib/send-herald';
import { ask, BENCH_LIB, cpuMs, killAll, nextMessage, spawnNode, type Child } from './lib/send-procs';
import type { SinkStats } from './lib/send-sink';
import { args } from './lib/setup';

const opts = args();
const BIG = opts.has('big');
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);
const RECIPIENTS = num('recipients', BIG ? 10_000 : 1_000);
const RUNS = Math.max(1, num('runs', 3));
const DURATION = Math.max(1, num('duration', BIG ? 30 : 10));
const CONNECTIONS = Math.max(1, num('connections', 50));
const WARMUP_S = 3;
const DB = 'herald_bench_tracking';
const TARGET_RPS = 2000;
const TARGET_P99_MS = 100;

type Kind = 'open' | 'click';
const EXPECT: Record<Kind, { status: number; event: 'opened' | 'clicked' }> = {
  open: { status: 200, event: 'opened' },
  click: { status: 302, event: 'clicked' },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The open pixel and click paths of every message the sink kept. */
async function pathsOf(samples: string[], baseUrl: string) {
  const esc = baseUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const open: string[] = [];
  const click: string[] = [];
  const problems: string[] = [];
  for (const raw of samples) {
    const html = String((await simpleParser(raw)).html);
    const pixels = [...html.matchAll(new RegExp(`src="${esc}(/t/open/[^"]+\\.gif)"`, 'g'))].map((m) => m[1]);
    const clicks = [...html.matchAll(new RegExp(`href="${esc}(/t/click/[^"]+)"`, 'g'))].map((m) => m[1]);
    if (pixels.length !== 1) problems.push(`${pixels.length} open pixels`);
    if (clicks.length !== 0 && clicks.length !== LINKS.length) problems.push(`${clicks.length} click links`);
    open.push(...pixels);
    click.push(...clicks);
  }
  return { open, click, problems: [...new Set(problems)] };
}

/** One autocannon measurement cycling through `paths`. */
async function measure(h: LoggedHerald, paths: string[], seconds: number) {
  let next = 0;
  const cpu0 = cpuMs(h.pid);
  const r = await autocannon({
    url: h.baseUrl,
    connections: CONNECTIONS,
    duration: seconds,
    timeout: 10,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: paths[next++ % paths.length] }) }],
  });
  const cpu = cpuMs(h.pid) - cpu0;
  return {
    reqPerSec: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    maxMs: r.latency.max,
    requests: r.requests.total,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats).map(([k, v]) => [k, v.count])),
    errors: r.errors,
    timeouts: r.timeouts,
    cpuMsPerRequest: r.requests.total ? Math.round((cpu / r.requests.total) * 1000) / 1000 : NaN,
  };
}

/**
 * What Herald's database sessions were doing during a measurement: every 100 ms, each active
 * session's wait (or "CPU") and the head of its statement, counted — where the time goes
 * without instrumenting the server.
 */
function sampleSessions(c: Client, database: string) {
  const seen = new Map<string, number>();
  let samples = 0;
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const { rows } = await c.query<{ wait: string; query: string }>(
        `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS wait, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS query
         FROM pg_stat_activity WHERE datname = $1 AND application_name = 'herald' AND state = 'active'`,
        [database],
      );
      samples += 1;
      for (const r of rows) seen.set(`${r.wait} | ${r.query}`, (seen.get(`${r.wait} | ${r.query}`) ?? 0) + 1);
    } catch {
      // best effort
    } finally {
      busy = false;
    }
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      const top = [...seen].sort((a, b) => b[1] - a[1]).slice(0, 8);
      return { samples, activeSessionsPerSample: Math.round(([...seen.values()].reduce((a, b) => a + b, 0) / Math.max(1, samples)) * 10) / 10, top };
    },
  };
}

async function eventCounts(c: Client, userId: number): Promise<Record<string, number>> {
  const { rows } = await c.query<{ type: string; n: number }>(
    `SELECT type, count(*)::int AS n FROM events WHERE user_id = $1 AND type IN ('opened', 'clicked') GROUP BY type`,
    [userId],
  );
  return { opened: 0, clicked: 0, ...Object.fromEntries(rows.map((r) => [r.type, r.n])) };
}

/**
 * Hits as Herald saw them: its request log lines (`request completed`, or `request aborted` for the
 * requests autocannon cut off when it stopped) for `/t/<kind>/` written since byte `from`.
 */
function hitsInLog(logFile: string, from: number, kind: Kind) {
  const fd = fs.openSync(logFile, 'r');
  const size = fs.fstatSync(fd).size;
  const buf = Buffer.alloc(size - from);
  fs.readSync(fd, buf, 0, buf.length, from);
  fs.closeSync(fd);
  const statuses: Record<string, number> = {};
  let aborted = 0;
  for (const line of buf.toString('utf8').split('\n')) {
    if (!line.includes(`"/t/${kind}/`)) continue;
    const l = JSON.parse(line) as { msg: string; req?: { url?: string }; res?: { statusCode?: number } };
    if (!l.req?.url?.startsWith(`/t/${kind}/`)) continue;
    if (l.msg === 'request aborted') aborted += 1;
    else statuses[String(l.res?.statusCode)] = (statuses[String(l.res?.statusCode)] ?? 0) + 1;
  }
  const completed = Object.values(statuses).reduce((a, b) => a + b, 0);
  return { hits: completed + aborted, completed: statuses, aborted };
}

/**
 * A measurement and the events it added. Every hit one event: the events added equal Herald's
 * hits (its log), every completed hit and every answer autocannon counted has the endpoint's
 * status, and autocannon saw no error or timeout.
 */
async function run(c: Client, userId: number, h: LoggedHerald, logFile: string, kind: Kind, paths: string[], seconds: number) {
  const before = await eventCounts(c, userId);
  const logFrom = fs.statSync(logFile).size;
  const sampler = sampleSessions(c, DB);
  const m = await measure(h, paths, seconds);
  const sessions = sampler.stop();
  // Requests cut off when autocannon stopped may still be finishing; the log is written asynchronously.
  await sleep(1500);
  const after = await eventCounts(c, userId);
  const server = hitsInLog(logFile, logFrom, kind);
  const added = { opened: after.opened - before.opened, clicked: after.clicked - before.clicked };
  const status = String(EXPECT[kind].status);
  const answered = m.statusCodes[status] ?? 0;
  const allExpected = (codes: Record<string, number>) => Object.keys(codes).every((k) => k === status);
  const oneEventPerHit = allExpected(m.statusCodes) && allExpected(server.completed) && m.errors === 0 && m.timeouts === 0 && added[EXPECT[kind].event] === server.hits;
  return { kind, ...m, answered, server, eventsAdded: added, oneEventPerHit, sessions };
}

async function main(): Promise<number> {
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-tracking-'));
  let sink: Child | undefined;
  let herald: LoggedHerald | undefined;
  let c: Client | undefined;
  try {
    if (!opts.has('no-build')) build();
    sink = spawnNode('sink', path.join(BENCH_LIB, 'send-sink.ts'), [], { ts: true, ipc: true });
    const { port: smtpPort } = await nextMessage<{ port: number }>(sink, 'listening', 30_000);
    const url = await recreateDatabase(DB);
    const account = await createAccount(url, 'Bench tracking');
    c = await connect(url);
    const f = await makeFixture(c, account);
    const typeId = await makeList(c, f, 'Bench tracking', 'r-', RECIPIENTS);
    const admin = await connect(databaseUrl(DB));
    await admin.query('VACUUM ANALYZE');
    const pgInfo = await serverInfo(admin);
    await admin.end();
    const html = designWithLinks((await c.query<{ html_code: string }>('SELECT html_code FROM templates WHERE id = 2')).rows[0].html_code);

    const logFile = path.join(tmp, 'herald.log');
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    herald = await startLoggedHerald({
      port,
      env: { DATABASE_URL: url, DATA_DIR: path.join(tmp, 'data'), SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, PUBLIC_URL: baseUrl },
      logFile,
    });
    await ask(sink, { type: 'reset', keep: RECIPIENTS });
    const { utr } = await createSend(baseUrl, account, { senderId: f.senderId, groupId: f.groupId, typeId, name: 'Bench tracking', templateHtml: html });
    const deadline = Date.now() + 600_000;
    while ((await sendRow(c, utr)).status !== 3) {
      if (Date.now() > deadline) throw new Error('the send did not complete within 600 s');
      await sleep(100);
    }
    const stats = await ask<SinkStats>(sink, { type: 'stats' }, 120_000);
    if (stats.received !== RECIPIENTS || stats.samples.length !== RECIPIENTS) throw new Error(`the sink has ${stats.received} messages (${stats.samples.length} kept), expected ${RECIPIENTS}`);
    const paths = await pathsOf(stats.samples, baseUrl);
    await sink.stop(5_000);
    sink = undefined;
    if (paths.problems.length) throw new Error(`messages: ${paths.problems.join('; ')}`);
    const kinds: Kind[] = paths.click.length ? ['open', 'click'] : ['open'];
    log(`${RECIPIENTS} messages: ${paths.open.length} open pixels, ${paths.click.length} click links${paths.click.length ? '' : ' (click tracking not in this build: clicks not measured)'}; load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);

    // One of each by hand: the answer is what a mail client gets.
    const pixel = await fetch(baseUrl + paths.open[0]);
    if (pixel.status !== 200 || pixel.headers.get('content-type') !== 'image/gif') throw new Error(`/t/open answered ${pixel.status} ${pixel.headers.get('content-type')}`);
    if (paths.click.length) {
      const click = await fetch(baseUrl + paths.click[0], { redirect: 'manual' });
      if (click.status !== 302 || !LINKS.includes(click.headers.get('location') ?? '')) throw new Error(`/t/click answered ${click.status} → ${click.headers.get('location')}`);
    }

    // Warm-up (JIT, pools), not judged; the open warm-up also gives every message its first open.
    const warmups = [];
    for (const kind of kinds) warmups.push(await run(c, f.userId, herald, logFile, kind, paths[kind], WARMUP_S));
    const runs: Array<Awaited<ReturnType<typeof run>> & { run: number; cpuBusyBefore: number | null; loadavg: number[] }> = [];
    for (let r = 1; r <= RUNS; r += 1) {
      for (const kind of r % 2 ? kinds : [...kinds].reverse()) {
        const busy = opts.has('no-wait') ? null : await waitForQuiet(60_000);
        const loadavg = os.loadavg().map((x) => Math.round(x * 100) / 100);
        const m = { ...(await run(c, f.userId, herald, logFile, kind, paths[kind], DURATION)), run: r, cpuBusyBefore: busy, loadavg };
        runs.push(m);
        const top = m.sessions.top.slice(0, 3).map(([k, n]) => `${k} ×${n}`).join('; ');
        log(
          `/t/${kind} run ${r}: ${m.reqPerSec} req/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms, ${m.cpuMsPerRequest} ms CPU/req; ` +
            `answers ${JSON.stringify(m.statusCodes)}, Herald's hits ${m.server.hits} (${m.server.aborted} cut off), events added ${JSON.stringify(m.eventsAdded)}${m.errors + m.timeouts ? `, ${m.errors} errors, ${m.timeouts} timeouts` : ''}; load ${loadavg.join(' ')}; Herald's sessions: ${m.sessions.activeSessionsPerSample} active on average — ${top}`,
        );
      }
    }

    const summary = kinds.map((kind) => {
      const ms = runs.filter((m) => m.kind === kind);
      const rps = median(ms.map((m) => m.reqPerSec));
      const p99 = median(ms.map((m) => m.p99Ms));
      const verdicts = { reqPerSec: rps >= TARGET_RPS, p99: p99 <= TARGET_P99_MS, oneEventPerHit: ms.every((m) => m.oneEventPerHit) };
      return {
        endpoint: kind === 'open' ? '/t/open/<token>.gif' : '/t/click/<token>',
        bestReqPerSec: Math.max(...ms.map((m) => m.reqPerSec)),
        medianReqPerSec: rps,
        bestP99Ms: Math.min(...ms.map((m) => m.p99Ms)),
        medianP99Ms: p99,
        medianP50Ms: median(ms.map((m) => m.p50Ms)),
        medianCpuMsPerRequest: median(ms.map((m) => m.cpuMsPerRequest)),
        hits: ms.reduce((a, m) => a + m.server.hits, 0),
        verdicts,
        pass: Object.values(verdicts).every(Boolean),
      };
    });
    // Clicks within CLICK_BOT_WINDOW_SECONDS of the send are flagged as a scanner's (still one event each).
    const flagged = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE user_id = $1 AND type = 'clicked' AND data->>'suspected_bot' = 'true'`, [f.userId]);
    const clicksMeasured = kinds.includes('click');
    const pass = clicksMeasured && summary.every((s) => s.pass);
    const v = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
    process.stdout.write(
      [
        '',
        `Tracking: autocannon, ${CONNECTIONS} connections, ${DURATION} s per measurement, ${RUNS} runs (best / median), ${RECIPIENTS.toLocaleString('en')} recipients' real URLs`,
        ...summary.flatMap((s) => [
          `  ${s.endpoint}`,
          `    ${s.bestReqPerSec} / ${s.medianReqPerSec} req/s (target ≥ ${TARGET_RPS}) ${v(s.verdicts.reqPerSec)}; p99 ${s.bestP99Ms} / ${s.medianP99Ms} ms (target ≤ ${TARGET_P99_MS}) ${v(s.verdicts.p99)}; p50 ${s.medianP50Ms} ms; ${s.medianCpuMsPerRequest} ms CPU/req`,
          `    every hit one event (${s.hits} hits): ${v(s.verdicts.oneEventPerHit)}`,
        ]),
        ...(clicksMeasured ? [] : ['  /t/click/<token>: not measured — this build writes no click links (FAIL until it does)']),
        `  ${v(pass)}`,
        '',
      ].join('\n'),
    );
    const file = writeResult('tracking', {
      when: new Date().toISOString(),
      pass,
      targets: { reqPerSec: TARGET_RPS, p99Ms: TARGET_P99_MS, oneEventPerHit: true },
      settings: { connections: CONNECTIONS, durationS: DURATION, runs: RUNS, recipients: RECIPIENTS, openUrls: paths.open.length, clickUrls: paths.click.length },
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavgAtEnd: os.loadavg() },
      postgres: pgInfo,
      summary,
      clickedFlaggedAsScanner: flagged.rows[0].n,
      runs,
      warmups,
      totalS: Math.round((Date.now() - started) / 1000),
    });
    log(`wrote ${path.relative(ROOT, file)}`);
    return pass ? 0 : 1;
  } finally {
    await herald?.stop().catch(() => undefined);
    await sink?.stop(5_000).catch(() => undefined);
    await c?.end().catch(() => undefined);
    if (!opts.has('keep')) await dropDatabase(DB).catch(() => undefined);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

process.once('exit', killAll);
main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    killAll();
    process.exit(1);
  },
);
