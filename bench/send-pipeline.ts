/**
 * Send benchmark with the event pipeline on and off (issue "One event pipeline"): bench:send's
 * harness — a single send through Herald as `npm start` runs it, into the discarding SMTP sink,
 * timed from the create call to status 3 (completed) — run in each round with
 *
 *   off  TRACK_CLICKS=0, no webhook endpoint; the events Herald always records (`delivered`,
 *        `dropped`, the send's account events: events cannot be switched off, the statistics
 *        are derived from them)
 *   on   click tracking at its default (on: the design's 5 links become /t/click/… links), and
 *        a webhook endpoint subscribed to every event type, a local receiver
 *        (bench/lib/webhook-receiver.ts) that verifies each request's signature with the
 *        `standardwebhooks` package and notes when each event id first arrived
 *
 * and, first in each round, bench:send's raw nodemailer baseline (the same design pre-rendered,
 * sent as `raw` on the same pool). Targets:
 *
 *   on ≥ 90 % of off (msg/s, median of the rounds' ratios);
 *   every event of the send (those in the events table once it completed) at the receiver
 *   within 60 s of the send's completion (worst round), in ≤ N/100 requests (each round).
 *
 * Both modes set WEBHOOK_ALLOW_HOSTS=127.0.0.1 (the receiver is local; without it Herald refuses
 * the URL) — the only setting besides where things are. Herald off and on alternate which goes
 * first. Writes bench/out/send-pipeline.json; exit code 1 on a FAIL or a failed check.
 *
 *   npx tsx bench/send-pipeline.ts [--recipients 20000] [--runs 3] [--big] [--split] [--no-build] [--keep] [--no-pin]
 *
 * --split (diagnostic, not judged): each round also runs clicks only (no webhook) and the webhook
 * only (TRACK_CLICKS=0), after off and on.
 * --big: 100,000 recipients (bench:send's size). Pinning as bench:send: the sender under test
 * on CPU 0, the sink and the receiver on CPU 1, PostgreSQL unpinned.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import type { Client } from 'pg';
import { build, checksLine, client, createAccount, finishRun, log, runMain } from './lib/herald';
import { connect, databaseUrl, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { median, waitForQuiet, writeResult } from './lib/sample';
import { args } from './lib/setup';
import { machineShare, runBaseline } from './lib/baseline-run';
import { checkSamples } from './lib/send-checks';
import { makeFixture, makeList, suppress, type Fixture } from './lib/send-fixture';
import { createSend, designWithLinks, LINKS, sendRow, startServe } from './lib/send-herald';
import { ask, BENCH_LIB, type Child, cleanUpOnStop, cpuMs, killAll, machineBusyMs, nextMessage, spawnNode } from './lib/send-procs';
import type { SinkStats } from './lib/send-sink';
import type { ReceiverStats } from './lib/webhook-receiver';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);

const DB = 'herald_bench_pipeline';
const RECIPIENTS = num('recipients', opts.has('big') ? 100_000 : 20_000);
/** Suppressed contacts of the list: each becomes a `dropped` event (1 %). */
const SUPPRESSED = Math.max(2, 2 * Math.round(RECIPIENTS / 200));
const RUNS = Math.max(1, num('runs', 3));
const PIN = !opts.has('no-pin');
const SENDER_CPU = PIN ? '0' : undefined;
const SIDE_CPU = PIN ? '1' : undefined;
const POOL = 5;
const IN_FLIGHT = 20;
const TARGET_RATIO = 0.9;
const TARGET_LAG_MS = 60_000;
const MAX_REQUESTS = Math.floor(RECIPIENTS / 100);
/** How long after completion the harness waits for the receiver (past the target, to report the real lag). */
const WAIT_MS = 150_000;
const PUBLIC_URL = 'https://herald.bench.test';

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startChild(name: string, file: string): Promise<{ child: Child; port: number }> {
  const child = spawnNode(name, path.join(BENCH_LIB, file), [], { ts: true, ipc: true, cpu: SIDE_CPU });
  const { port } = await nextMessage<{ port: number }>(child, 'listening', 30_000);
  return { child, port };
}

/** bench:send's raw baseline: the same messages pre-rendered, sent as nodemailer `raw` on the same pool. */
const runRawBaseline = (sink: Child, port: number, html: string) =>
  runBaseline({ mode: 'raw', sink, port, html, count: RECIPIENTS, poolSize: POOL, concurrency: IN_FLIGHT, publicUrl: PUBLIC_URL, cpu: SENDER_CPU });

/** off and on are judged; --split adds one of the two at a time (where on's cost goes). */
type Mode = 'off' | 'on' | 'clicks' | 'webhook';
const CLICKS: Record<Mode, boolean> = { off: false, on: true, clicks: true, webhook: false };
const WEBHOOK: Record<Mode, boolean> = { off: false, on: true, clicks: false, webhook: true };

interface Env {
  c: Client;
  admin: Client;
  url: string;
  sink: Child;
  sinkPort: number;
  receiver: Child;
  receiverPort: number;
  f: Fixture;
  typeId: number;
  html: string;
  dataDir: string;
}

/** What reached the receiver, against every event of the send in the database once it completed. */
async function webhookOutcome(e: Env, completedAt: number) {
  const { rows } = await e.c.query<{ id: string; type: string }>('SELECT id, type FROM events WHERE user_id = $1 ORDER BY id', [e.f.userId]);
  const expected = rows.map((r) => Number(r.id));
  const expectedByType: Record<string, number> = {};
  for (const r of rows) expectedByType[r.type] = (expectedByType[r.type] ?? 0) + 1;
  let stats = await ask<ReceiverStats>(e.receiver, { type: 'stats' });
  while (stats.events < expected.length && Date.now() < completedAt + WAIT_MS) {
    await sleep(250);
    stats = await ask<ReceiverStats>(e.receiver, { type: 'stats' });
  }
  const full = await ask<ReceiverStats>(e.receiver, { type: 'stats', withIds: true });
  const at = new Map(full.received ?? []);
  const missing = expected.filter((id) => !at.has(id));
  const lastAt = Math.max(...expected.map((id) => at.get(id) ?? Infinity));
  return {
    expectedEvents: expected.length,
    expectedByType,
    received: full.events,
    missing: missing.length,
    /** When the last of the send's events arrived, after its completion (ms; negative: before). */
    lagMs: missing.length ? null : lastAt - completedAt,
    requests: full.requests,
    largestBatch: full.largestBatch,
    duplicateEvents: full.duplicateEvents,
    badSignatures: full.badSignatures,
    byType: full.byType,
    receiverCpuMs: full.cpuMs,
  };
}

/** One Herald run: a fresh `herald serve`, one send from the create call to completed. */
async function runHerald(e: Env, mode: Mode, n: number) {
  await e.admin.query('DELETE FROM webhooks');
  await e.admin.query('TRUNCATE deliveries, events, webhook_deliveries');
  await e.admin.query('VACUUM ANALYZE deliveries');
  await e.admin.query('VACUUM ANALYZE events');
  const env: Record<string, string> = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', ...(CLICKS[mode] ? {} : { TRACK_CLICKS: '0' }) };
  const herald = await startServe({ databaseUrl: e.url, smtpPort: e.sinkPort, dataDir: e.dataDir, publicUrl: PUBLIC_URL, cpu: SENDER_CPU, env });
  try {
    let secret: string | undefined;
    if (WEBHOOK[mode]) {
      const saved = (await client(herald.baseUrl, e.f.account).form('/webhooks/save', { url: `http://127.0.0.1:${e.receiverPort}/herald`, event_types: '' })) as {
        message: { id: number; secret: string };
      };
      secret = saved.message.secret;
    }
    // Off: no secret, so any request that arrived would count as a bad signature.
    await ask(e.receiver, { type: 'reset', secret });
    await ask(e.sink, { type: 'reset', keep: 20 });
    const cpu0 = cpuMs(herald.pid);
    const busy0 = machineBusyMs();
    const t0 = Date.now();
    const { utr, calledAt } = await createSend(herald.baseUrl, e.f.account, { senderId: e.f.senderId, groupId: e.f.groupId, typeId: e.typeId, name: `Pipeline ${mode} #${n}`, templateHtml: e.html });
    let row = await sendRow(e.c, utr);
    const deadline = Date.now() + 900_000;
    while (row.status !== 3) {
      if (herald.child.exitCode !== null) throw new Error(`herald exited with ${herald.child.exitCode}:\n${herald.output()}`);
      if (Date.now() > deadline) throw new Error(`send not completed within 900 s: ${JSON.stringify(row)}`);
      await sleep(50);
      row = await sendRow(e.c, utr);
    }
    const heraldCpuMs = cpuMs(herald.pid) - cpu0;
    const machine = machineShare(busy0, t0, heraldCpuMs);
    const completedAt = row.completed_at!.getTime();
    const ms = completedAt - calledAt;
    const webhook = WEBHOOK[mode] ? await webhookOutcome(e, completedAt) : undefined;
    const offRequests = WEBHOOK[mode] ? undefined : await ask<ReceiverStats>(e.receiver, { type: 'stats' });
    const seen = await ask<SinkStats>(e.sink, { type: 'stats', prefix: 'sup-' });
    const htmls = await Promise.all(seen.samples.map(async (s) => String((await simpleParser(s)).html)));
    const clickLinks = htmls.map((h) => (h.match(/href="[^"]*\/t\/click\//g) ?? []).length);
    const plainLinks = htmls.map((h) => LINKS.filter((l) => h.includes(`href="${l}"`)).length);
    const events = await e.c.query<{ type: string; n: number }>('SELECT type, count(*)::int AS n FROM events WHERE user_id = $1 GROUP BY type ORDER BY type', [e.f.userId]);
    return {
      mode,
      utr,
      createToCompletedMs: ms,
      rate: (row.delivered / ms) * 1000,
      fanoutMs: row.fanout_done_at!.getTime() - row.sent_at!.getTime(),
      delivered: row.delivered,
      herald: { cpuMs: heraldCpuMs, cpuMsPerMessage: round(heraldCpuMs / Math.max(1, row.delivered), 3) },
      machine,
      sink: { received: seen.received, unique: seen.unique, duplicates: seen.duplicates, suppressedSeen: seen.withPrefix },
      events: Object.fromEntries(events.rows.map((r) => [r.type, r.n])),
      /** /t/click/ links and untouched design links in the sampled messages. */
      sampledLinks: { click: clickLinks, plain: plainLinks },
      sampleCheck: await checkSamples(seen.samples, PUBLIC_URL),
      webhook,
      requestsWhileOff: offRequests ? offRequests.requests + offRequests.badSignatures : undefined,
    };
  } finally {
    const stopped = await herald.stop(60_000);
    if (stopped.code !== 0) log(`herald serve exited with ${stopped.code} after SIGTERM`);
  }
}

type Run = Awaited<ReturnType<typeof runHerald>>;
interface Round {
  quiet: number;
  raw: Awaited<ReturnType<typeof runRawBaseline>>;
  off: Run;
  on: Run;
  clicks?: Run;
  webhook?: Run;
}

function judge(rounds: Round[]) {
  /** Best is the highest (rates, ratios) or, with lowIsBest, the lowest (CPU per message). */
  const stat = (xs: number[], d = 0, lowIsBest = false) => ({ best: round(lowIsBest ? Math.min(...xs) : Math.max(...xs), d), median: round(median(xs), d), runs: xs.map((x) => round(x, d)) });
  const ratios = rounds.map((r) => r.on.rate / r.off.rate);
  const hooks = rounds.map((r) => r.on.webhook!);
  const lags = hooks.map((w) => (w.lagMs === null ? Infinity : w.lagMs));
  const worstLag = Math.max(...lags);
  const requests = hooks.map((w) => w.requests);
  const summary = {
    offMsgPerS: stat(rounds.map((r) => r.off.rate)),
    onMsgPerS: stat(rounds.map((r) => r.on.rate)),
    rawBaselineMsgPerS: stat(rounds.map((r) => r.raw.rate)),
    onOverOff: stat(ratios, 3),
    offOverRaw: stat(rounds.map((r) => r.off.rate / r.raw.rate), 3),
    onOverRaw: stat(rounds.map((r) => r.on.rate / r.raw.rate), 3),
    cpuMsPerMessage: { off: stat(rounds.map((r) => r.off.herald.cpuMsPerMessage), 3, true), on: stat(rounds.map((r) => r.on.herald.cpuMsPerMessage), 3, true) },
    split: opts.has('split')
      ? {
          clicksMsgPerS: stat(rounds.map((r) => r.clicks!.rate)),
          webhookMsgPerS: stat(rounds.map((r) => r.webhook!.rate)),
          clicksOverOff: stat(rounds.map((r) => r.clicks!.rate / r.off.rate), 3),
          webhookOverOff: stat(rounds.map((r) => r.webhook!.rate / r.off.rate), 3),
          cpuMsPerMessage: { clicks: stat(rounds.map((r) => r.clicks!.herald.cpuMsPerMessage), 3, true), webhook: stat(rounds.map((r) => r.webhook!.herald.cpuMsPerMessage), 3, true) },
        }
      : undefined,
    webhookLagMs: lags.map((l) => (Number.isFinite(l) ? l : null)),
    webhookRequests: requests,
    webhookEvents: hooks.map((w) => w.expectedEvents),
  };
  const verdicts = {
    throughput: summary.onOverOff.median >= TARGET_RATIO,
    lag: worstLag <= TARGET_LAG_MS,
    requests: requests.every((n) => n <= MAX_REQUESTS),
  };
  const all = rounds.flatMap((r) => [r.off, r.on, ...(r.clicks ? [r.clicks] : []), ...(r.webhook ? [r.webhook] : [])]);
  const hooksAll = all.filter((h) => h.webhook).map((h) => h.webhook!);
  const checks = {
    sinkReceivedExactly: all.every((h) => h.sink.received === RECIPIENTS && h.sink.unique === RECIPIENTS && h.delivered === RECIPIENTS),
    noSuppressedAddress: all.every((h) => h.sink.suppressedSeen === 0),
    deliveredEventPerMessage: all.every((h) => h.events.delivered === RECIPIENTS && h.events.dropped === SUPPRESSED),
    messagesRendered: all.every((h) => h.sampleCheck.checked > 0 && h.sampleCheck.problems.length === 0),
    linksUntouchedWhenOff: all.filter((h) => !CLICKS[h.mode]).every((h) => h.sampledLinks.click.every((n) => n === 0) && h.sampledLinks.plain.every((n) => n === LINKS.length)),
    linksTrackedWhenOn: all.filter((h) => CLICKS[h.mode]).every((h) => h.sampledLinks.click.every((n) => n === LINKS.length) && h.sampledLinks.plain.every((n) => n === 0)),
    everyEventReceived: hooksAll.every((w) => w.missing === 0 && w.expectedByType.delivered === RECIPIENTS),
    signaturesValid: hooksAll.every((w) => w.badSignatures === 0),
    noRequestsWithoutWebhook: all.filter((h) => !WEBHOOK[h.mode]).every((h) => h.requestsWhileOff === 0),
    baselineReceivedExactly: rounds.every((r) => r.raw.sink.received === RECIPIENTS && r.raw.failed === 0),
  };
  return { summary, verdicts, checks, worstLag };
}

async function main() {
  const started = Date.now();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-pipeline-'));
  const children: Child[] = [];
  let c: Client | undefined;
  let admin: Client | undefined;
  let dbCreated = false;
  const cleanup = async () => {
    for (const ch of children) await ch.stop(5_000).catch(() => undefined);
    killAll();
    await c?.end().catch(() => undefined);
    await admin?.end().catch(() => undefined);
    if (dbCreated && !opts.has('keep')) await dropDatabase(DB).catch((err) => log(`could not drop ${DB}: ${err.message}`));
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  cleanUpOnStop(cleanup);
  try {
    if (!opts.has('no-build')) build();
    const sink = await startChild('sink', 'send-sink.ts');
    const receiver = await startChild('webhook receiver', 'webhook-receiver.ts');
    children.push(sink.child, receiver.child);
    const url = await recreateDatabase(DB);
    dbCreated = true;
    const account = await createAccount(url, 'Bench pipeline');
    c = await connect(url);
    admin = await connect(databaseUrl(DB));
    const f = await makeFixture(c, account);
    const typeId = await makeList(c, f, 'Bench pipeline', 'r-', RECIPIENTS, { prefix: 'sup-', count: SUPPRESSED });
    await suppress(c, f, 'sup-', SUPPRESSED);
    await admin.query('VACUUM ANALYZE');
    await admin.query('CHECKPOINT');
    const html = designWithLinks((await c.query<{ html_code: string }>('SELECT html_code FROM templates WHERE id = 2')).rows[0].html_code);
    const e: Env = { c, admin, url, sink: sink.child, sinkPort: sink.port, receiver: receiver.child, receiverPort: receiver.port, f, typeId, html, dataDir };
    log(`${(RECIPIENTS + SUPPRESSED).toLocaleString('en')} contacts (${SUPPRESSED} suppressed); load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);

    const rounds: Round[] = [];
    const loads: number[][] = [];
    for (let r = 1; r <= RUNS; r += 1) {
      const quiet = await waitForQuiet(120_000);
      loads.push(os.loadavg().map((x) => round(x, 2)));
      const raw = await runRawBaseline(e.sink, e.sinkPort, html);
      log(`round ${r}/${RUNS}: raw baseline ${raw.rate.toFixed(0)} msg/s; background ${quiet}, load ${loads.at(-1)!.join(' ')}`);
      const runs: Partial<Record<Mode, Run>> = {};
      const order: Mode[] = [...(r % 2 ? ['off', 'on'] : ['on', 'off']), ...(opts.has('split') ? ['clicks', 'webhook'] : [])] as Mode[];
      for (const mode of order) {
        const h = await runHerald(e, mode, r);
        runs[mode] = h;
        const w = h.webhook;
        log(
          `round ${r}/${RUNS}: Herald ${mode} ${h.rate.toFixed(0)} msg/s (${(h.createToCompletedMs / 1000).toFixed(1)} s, ${h.herald.cpuMsPerMessage} ms CPU/msg, cores busy ${h.machine.coresBusy})` +
            (w ? `; webhook: ${w.received}/${w.expectedEvents} events in ${w.requests} requests, last ${w.lagMs === null ? `never (${w.missing} missing)` : `${(w.lagMs / 1000).toFixed(1)} s`} after completion` : ''),
        );
      }
      rounds.push({ quiet, raw, off: runs.off!, on: runs.on!, clicks: runs.clicks, webhook: runs.webhook });
    }
    const { summary, verdicts, checks, worstLag } = judge(rounds);
    const pass = Object.values(verdicts).every(Boolean);
    const result = {
      benchmark: 'send-pipeline',
      when: new Date().toISOString(),
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavgPerRound: loads, loadavgAtEnd: os.loadavg() },
      postgres: await serverInfo(c),
      recipients: RECIPIENTS,
      suppressed: SUPPRESSED,
      links: LINKS,
      targets: { onOverOffMedian: TARGET_RATIO, lagMs: TARGET_LAG_MS, maxRequests: MAX_REQUESTS },
      verdicts,
      pass,
      summary,
      checks,
      rounds,
      totalMs: Date.now() - started,
    };
    const file = writeResult('send-pipeline', result);
    const line = (name: string, x: { best: number; median: number; runs: number[] }, unit = '') => `  ${name.padEnd(34)} best ${x.best}${unit}, median ${x.median}${unit}  [${x.runs.join(', ')}]`;
    const v = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
    process.stdout.write(
      [
        '',
        `Send with the event pipeline — ${RECIPIENTS.toLocaleString('en')} recipients, ${RUNS} rounds, Herald as npm start runs it`,
        line('Herald off (no clicks, no webhook)', summary.offMsgPerS, ' msg/s'),
        line('Herald on (clicks, webhook)', summary.onMsgPerS, ' msg/s'),
        line('raw nodemailer baseline', summary.rawBaselineMsgPerS, ' msg/s'),
        line('on / off', summary.onOverOff),
        line('off / raw', summary.offOverRaw),
        line('on / raw', summary.onOverRaw),
        line('Herald CPU ms/msg, off', summary.cpuMsPerMessage.off),
        line('Herald CPU ms/msg, on', summary.cpuMsPerMessage.on),
        ...(summary.split
          ? [
              line('clicks only (no webhook)', summary.split.clicksMsgPerS, ' msg/s'),
              line('webhook only (TRACK_CLICKS=0)', summary.split.webhookMsgPerS, ' msg/s'),
              line('Herald CPU ms/msg, clicks only', summary.split.cpuMsPerMessage.clicks),
              line('Herald CPU ms/msg, webhook only', summary.split.cpuMsPerMessage.webhook),
            ]
          : []),
        `  webhook: events ${summary.webhookEvents.join(', ')}; requests ${summary.webhookRequests.join(', ')}; last event after completion ${summary.webhookLagMs.map((l) => (l === null ? 'never' : `${(l / 1000).toFixed(1)} s`)).join(', ')}`,
        `  target: on / off ≥ ${TARGET_RATIO * 100} % (median) — ${v(verdicts.throughput)}`,
        `  target: every event at the receiver ≤ ${TARGET_LAG_MS / 1000} s after completion (worst ${Number.isFinite(worstLag) ? `${(worstLag / 1000).toFixed(1)} s` : 'never'}) — ${v(verdicts.lag)}`,
        `  target: ≤ ${MAX_REQUESTS} requests (N/100) per send (most ${Math.max(...summary.webhookRequests)}) — ${v(verdicts.requests)}`,
        checksLine(checks),
        '',
      ].join('\n'),
    );
    finishRun(file, started, pass, checks);
  } finally {
    await cleanup();
  }
}

runMain(main);
