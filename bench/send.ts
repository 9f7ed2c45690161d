/**
 * Send benchmark (issue 4): a 100,000-recipient single send through Herald's delivery worker
 * into a local SMTP sink that accepts and discards, timed from "ready" (status 1, due now)
 * to completed (status 3); in the same run the baseline of raw nodemailer pooled sending of
 * 100,000 pre-rendered messages to the same sink; then the worker's memory through the
 * fan-out and sending of a 1,000,000-recipient send. Prints a summary and writes
 * bench/out/send.json.
 *
 *   npx tsx bench/send.ts [--skip-million] [--million-stop 300000] [--no-build] [--keep]
 *                         [--recipients 100000] [--concurrency N] [--batch N] [--pool N]
 *                         [--no-pin] [--cpu-prof] [--skip-baseline]
 *
 * Processes: the sink, the baseline and Herald's worker each run in a child process of their
 * own. On this 2-core machine the sender under test (the baseline, or Herald's worker) is
 * pinned to CPU 0 and the sink to CPU 1 (taskset; --no-pin leaves scheduling to the kernel);
 * PostgreSQL and the idle API server are not pinned. See bench/README.md for the figures.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import type { Client } from 'pg';
import { build, client, createAccount, log, ROOT, startHerald, type Herald } from './lib/herald';
import { connect, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { procStatus, resetPeakRss, writeResult } from './lib/sample';
import { args } from './lib/setup';
import type { BaselineParams, BaselineResult } from './lib/send-baseline';
import { ask, BENCH_LIB, cpuMs, killAll, machineBusyMs, nextMessage, spawnNode, type Child } from './lib/send-procs';
import type { SinkStats } from './lib/send-sink';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);

const DB = String(opts.get('db') ?? 'herald_bench_send');
const RECIPIENTS = num('recipients', 100_000);
/** Contacts in the 100k list that must not be sent to (half global unsubscribers, half in the send's group). */
const SUPPRESSED = num('suppressed', 1_000);
const MILLION = num('million-recipients', 1_000_000);
/** Stop the 1M send once this many messages are delivered (0: run it to completion). */
const MILLION_STOP = num('million-stop', 300_000);
const RUN_MILLION = !opts.has('skip-million');
const RUN_BASELINE = !opts.has('skip-baseline');
/** Rounds of (baseline, Herald 100k); the figures compared are the medians. */
const REPEAT = Math.max(1, num('repeat', 1));
const PIN = !opts.has('no-pin');
const SENDER_CPU = PIN ? '0' : undefined;
const SINK_CPU = PIN ? '1' : undefined;

/** Herald's tuning for the run (the baseline uses the same pool size and messages in flight). */
const TUNING = {
  SEND_CONCURRENCY: num('concurrency', 20),
  SEND_BATCH_SIZE: num('batch', 200),
  SMTP_POOL_SIZE: num('pool', 5),
  WORKER_POLL_MS: num('poll', 100),
  DB_POOL_MAX: num('db-pool', 10),
};

const TARGET_RATIO = 1.0;
const STRETCH_RATIO = 1.5;
const TARGET_RSS_MB = 200;
const PUBLIC_URL = 'https://herald.bench.test';
const SUBJECT = 'The November issue, ((first_name))';
const PREHEADER = 'Hi ((first_name)), here is what happened this month';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10;
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------
// Fixture

interface Fixture {
  userId: number;
  senderId: number;
  groupId: number;
  fieldId: number;
  account: Awaited<ReturnType<typeof createAccount>>;
}

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'John', 'Radia', 'Tim', 'Søren', 'Zoë', 'José', 'Anaïs'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Allen', 'McCarthy', 'Perlman', 'Berners-Lee', "O'Brien", 'Müller', 'Dupont', 'Kowalski'];
const DOMAINS = ['gmail.com', 'yahoo.com', 'outlook.com', 'example.com', 'acme-corp.io', 'web.de', 'orange.fr'];
const sqlArray = (xs: string[]) => `ARRAY[${xs.map((x) => `'${x.replace(/'/g, "''")}'`).join(',')}]`;

async function makeFixture(c: Client, account: Fixture['account']): Promise<Fixture> {
  const userId = account.id;
  const gb = await c.query<{ id: number }>(`SELECT id FROM countries WHERE iso_code = 'GB'`);
  const sender = await c.query<{ id: number }>(
    `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, zip_code, nickname, is_verified, utr)
     VALUES ($1, 'Herald Bench News', 'news@bench-news.test', 'reply@bench-news.test', $2, '1 High Street', 'SW1A 1AA', 'bench', 1, substr(md5(random()::text), 1, 16))
     RETURNING id`,
    [userId, gb.rows[0].id],
  );
  const group = await c.query<{ id: number }>(
    `INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display)
     VALUES ($1, lpad((floor(random() * 1e10))::bigint::text, 10, '0'), 'Newsletter', 'The monthly newsletter', 1) RETURNING id`,
    [userId],
  );
  const field = await c.query<{ id: number }>(
    `INSERT INTO fields (user_id, field_name, field_type, is_reserved, created_at, updated_at) VALUES ($1, 'plan', 'text', 0, now(), now()) RETURNING id`,
    [userId],
  );
  return { userId, senderId: sender.rows[0].id, groupId: group.rows[0].id, fieldId: field.rows[0].id, account };
}

/** A contact type with `count` contacts `${prefix}<i>@<domain>`, inserted set-based. */
async function makeList(c: Client, f: Fixture, name: string, prefix: string, count: number, extra?: { prefix: string; count: number }): Promise<number> {
  const type = await c.query<{ id: number }>(`INSERT INTO contact_types (user_id, name) VALUES ($1, $2) RETURNING id`, [f.userId, name]);
  const typeId = type.rows[0].id;
  const insert = (p: string, n: number) =>
    c.query(
      `WITH cs AS (SELECT array_agg(id ORDER BY id) AS ids FROM countries WHERE iso_code IN ('US', 'GB', 'DE', 'FR', 'IN', 'CA', 'AU', 'ES'))
       INSERT INTO contacts (user_id, contact_type_id, first_name, last_name, email, country_id, city, address_line1, postal_code, custom_fields)
       SELECT $1, $2,
         (${sqlArray(FIRST)})[1 + i % ${FIRST.length}],
         (${sqlArray(LAST)})[1 + (i / ${FIRST.length}) % ${LAST.length}],
         $3 || i || '@' || (${sqlArray(DOMAINS)})[1 + i % ${DOMAINS.length}],
         cs.ids[1 + i % array_length(cs.ids, 1)],
         'Springfield', (1 + i % 2000) || ' Main Street', lpad((i % 100000)::text, 5, '0'),
         jsonb_build_object($4::text, (ARRAY['free', 'starter', 'pro', 'enterprise'])[1 + i % 4])
       FROM generate_series(1, $5::int) AS g(i), cs`,
      [f.userId, typeId, p, String(f.fieldId), n],
    );
  await insert(prefix, count);
  if (extra) await insert(extra.prefix, extra.count);
  await c.query(`UPDATE contact_types SET contacts_version = contacts_version + 1 WHERE id = $1`, [typeId]);
  return typeId;
}

/** Half the `prefix` contacts become global unsubscribers, half join the group (upper-cased: matching is case-insensitive). */
async function suppress(c: Client, f: Fixture, prefix: string, count: number): Promise<void> {
  await c.query(
    `INSERT INTO global_unsubscribers (user_id, email_address)
     SELECT $1, email FROM contacts WHERE user_id = $1 AND email LIKE $2 || '%' AND substring(email from length($2) + 1 for 20) ~ '^[0-9]*[02468]@'`,
    [f.userId, prefix],
  );
  await c.query(
    `INSERT INTO unsubscribe_group_recipients (user_id, unsubscribe_groups_id, email_address)
     SELECT $1, $2, upper(email) FROM contacts WHERE user_id = $1 AND email LIKE $3 || '%' AND substring(email from length($3) + 1 for 20) ~ '^[0-9]*[13579]@'`,
    [f.userId, f.groupId, prefix],
  );
  const n = await c.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM global_unsubscribers WHERE user_id = $1)::int + (SELECT count(*) FROM unsubscribe_group_recipients WHERE user_id = $1)::int AS n`,
    [f.userId],
  );
  if (n.rows[0].n !== count) throw new Error(`expected ${count} suppressed addresses, have ${n.rows[0].n}`);
}

// ---------------------------------------------------------------------------------------
// Processes and sampling

async function startSink(): Promise<{ sink: Child; port: number }> {
  const sink = spawnNode('sink', path.join(BENCH_LIB, 'send-sink.ts'), [], { ts: true, ipc: true, cpu: SINK_CPU });
  const { port } = await nextMessage<{ port: number }>(sink, 'listening', 30_000);
  return { sink, port };
}

const sinkStats = (sink: Child) => ask<SinkStats>(sink, { type: 'stats' });
const sinkReset = (sink: Child, keep = 0) => ask(sink, { type: 'reset', keep });

function startWorker(url: string, smtpPort: number, dataDir: string, cpuProf: boolean): Child {
  const nodeArgs = cpuProf ? ['--cpu-prof', '--cpu-prof-dir', path.join(ROOT, 'bench', 'out', 'prof')] : [];
  // Diagnostics: extra node flags for the worker (e.g. "--trace-gc"), its output to a file.
  if (typeof opts.get('worker-node-args') === 'string') nodeArgs.push(...String(opts.get('worker-node-args')).split(/\s+/).filter(Boolean));
  const worker = spawnNode('herald worker', path.join(ROOT, 'bin', 'herald.js'), ['worker'], {
    cpu: SENDER_CPU,
    nodeArgs,
    env: {
      DATABASE_URL: url,
      SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
      PUBLIC_URL,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      ...Object.fromEntries(Object.entries(TUNING).map(([k, v]) => [k, String(v)])),
    },
  });
  const logFile = opts.get('worker-log');
  if (typeof logFile === 'string') {
    const out = fs.createWriteStream(logFile, { flags: 'a' });
    worker.child.stdout!.pipe(out);
    worker.child.stderr!.pipe(out);
  }
  return worker;
}

/** Resolves once the worker's loop is querying the database (migrations and seeds done). */
async function workerReady(c: Client, worker: Child): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (worker.child.exitCode !== null) throw new Error(`worker exited with ${worker.child.exitCode}:\n${worker.output()}`);
    const { rows } = await c.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'herald-worker' AND query ~ 'deliveries|single_sends'`,
    );
    if (rows.length) return;
    if (Date.now() > deadline) throw new Error(`worker not ready within 120 s:\n${worker.output()}`);
    await sleep(100);
  }
}

/** The worker's RSS every `everyMs`: peak, and a timeline thinned to one point per second. */
function rssSampler(pid: number, label: () => string, everyMs = 100) {
  let peakKb = 0;
  let samples = 0;
  const t0 = Date.now();
  const timeline: Array<{ s: number; rssMb: number; phase: string }> = [];
  let lastPoint = -Infinity;
  const timer = setInterval(() => {
    try {
      const rss = procStatus(pid).VmRSS ?? 0;
      samples += 1;
      peakKb = Math.max(peakKb, rss);
      const now = Date.now();
      if (now - lastPoint >= 1000) {
        lastPoint = now;
        timeline.push({ s: round((now - t0) / 1000), rssMb: mb(rss), phase: label() });
      }
    } catch {
      // process gone
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      let hwm = 0;
      try {
        hwm = procStatus(pid).VmHWM ?? 0;
      } catch {
        // gone
      }
      return { peakSampledMb: mb(peakKb), vmHwmMb: mb(hwm), samples, timeline };
    },
  };
}

/** What the worker's database sessions are busy with (pg_stat_activity, active only). */
function activitySampler(c: Client, everyMs = 50) {
  const counts: Record<string, number> = {};
  let samples = 0;
  let busy = false;
  const classify = (q: string) =>
    /WITH picked AS/.test(q)
      ? 'claim'
      : /json_to_recordset/.test(q)
        ? 'record outcomes'
        : /"delivered" = delivered|delivered \+/.test(q)
          ? 'statistics'
          : /INSERT INTO deliveries/.test(q)
            ? 'fan-out'
            : /SET status = 3/.test(q)
              ? 'complete check'
              : /^(BEGIN|COMMIT)/i.test(q)
                ? 'begin/commit'
                : 'other';
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const { rows } = await c.query<{ query: string }>(
        `SELECT query FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'herald-worker' AND state = 'active'`,
      );
      samples += 1;
      for (const r of rows) counts[classify(r.query)] = (counts[classify(r.query)] ?? 0) + 1;
    } catch {
      // best effort
    } finally {
      busy = false;
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      // Share of samples in which a session was running each kind of statement.
      return Object.fromEntries(
        Object.entries(counts)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => [k, `${round((100 * v) / Math.max(1, samples))}%`]),
      );
    },
  };
}

interface SendRow {
  id: number;
  status: number;
  triggered: number;
  delivered: number;
  bounces: number;
  created_at: Date;
  sent_at: Date | null;
  fanout_done_at: Date | null;
  completed_at: Date | null;
}

async function sendRow(c: Client, utr: string): Promise<SendRow> {
  const { rows } = await c.query<SendRow>(
    `SELECT id, status, triggered, delivered, bounces, created_at, sent_at, fanout_done_at, completed_at FROM single_sends WHERE utr = $1`,
    [utr],
  );
  return rows[0];
}

async function createSend(herald: Herald, f: Fixture, name: string, typeId: number): Promise<string> {
  const api = client(herald.baseUrl, f.account);
  const res = (await api.form('/single/send/create', {
    template_id: 2,
    sender_id: f.senderId,
    unsubscribe_group_id: f.groupId,
    single_send_name: name,
    subject: SUBJECT,
    preheader: PREHEADER,
    recipient_id: [`contacts_${typeId}`],
    schedule_type: 0,
  })) as { message: { utr: string } };
  return res.message.utr;
}

// ---------------------------------------------------------------------------------------
// Phases

async function runBaseline(sink: Child, port: number, c: Client): Promise<BaselineResult & { rate: number; sink: Omit<SinkStats, 'samples'> }> {
  const tpl = await c.query<{ html_code: string }>('SELECT html_code FROM templates WHERE id = 2');
  const params: BaselineParams = {
    port,
    count: RECIPIENTS,
    poolSize: TUNING.SMTP_POOL_SIZE,
    concurrency: TUNING.SEND_CONCURRENCY,
    html: tpl.rows[0].html_code,
    subject: SUBJECT,
    fromName: 'Herald Bench News',
    fromEmail: 'news@bench-news.test',
    senderAddress: '1 High Street, SW1A 1AA, United Kingdom',
    publicUrl: PUBLIC_URL,
    prefix: 'baseline-',
    domain: 'bench-sink.test',
  };
  const file = path.join(os.tmpdir(), `herald-bench-baseline-${process.pid}.json`);
  fs.writeFileSync(file, JSON.stringify(params));
  await sinkReset(sink);
  try {
    const child = spawnNode('baseline', path.join(BENCH_LIB, 'send-baseline.ts'), [], { ts: true, ipc: true, cpu: SENDER_CPU, env: { BENCH_BASELINE: file } });
    const result = await nextMessage<BaselineResult>(child, 'result', 900_000);
    await child.exited;
    const { samples: _samples, ...stats } = await sinkStats(sink);
    return { ...result, rate: (result.sent / result.ms) * 1000, sink: stats };
  } finally {
    fs.rmSync(file, { force: true });
  }
}

async function checkSamples(samples: string[]) {
  const problems: string[] = [];
  for (const raw of samples) {
    const m = await simpleParser(raw);
    const to = m.to && !Array.isArray(m.to) ? m.to.value[0].address : '';
    if (!m.subject || m.subject.includes('((') || !m.subject.startsWith('The November issue, ')) problems.push(`${to}: subject ${m.subject}`);
    if (!m.html || m.html.includes('((')) problems.push(`${to}: html has unreplaced placeholders`);
    if (!m.text) problems.push(`${to}: no text part`);
    if (!m.headerLines.some((h) => h.key === 'list-unsubscribe')) problems.push(`${to}: no List-Unsubscribe`);
    if (typeof m.html === 'string' && !m.html.includes(`/t/open/`)) problems.push(`${to}: no pixel`);
  }
  return { checked: samples.length, problems, rawBytes: samples.map((s) => s.length) };
}

type BaselineRun = Awaited<ReturnType<typeof runBaseline>>;
type HeraldRun = Awaited<ReturnType<typeof runHerald100k>>;

/** Cores busy on the machine over `ms` while this benchmark runs nothing: other people's work. */
async function backgroundLoad(ms = 2000): Promise<number> {
  const busy0 = machineBusyMs();
  const t0 = Date.now();
  await sleep(ms);
  return round((machineBusyMs() - busy0) / (Date.now() - t0), 2);
}

async function runHerald100k(c: Client, sink: Child, port: number, herald: Herald, f: Fixture, typeId: number, dataDir: string, url: string, round_ = 1) {
  const worker = startWorker(url, port, dataDir, opts.has('cpu-prof'));
  try {
    await workerReady(c, worker);
    const startupHwmMb = mb(procStatus(worker.pid).VmHWM ?? 0);
    await sinkReset(sink, 5);
    resetPeakRss(worker.pid);
    const rss = rssSampler(worker.pid, () => 'send');
    const activity = activitySampler(c);
    const cpu0 = cpuMs(worker.pid);
    const busy0 = machineBusyMs();
    const wall0 = Date.now();
    const utr = await createSend(herald, f, `Bench 100k #${round_}`, typeId);
    let row = await sendRow(c, utr);
    const deadline = Date.now() + 600_000;
    while (row.status !== 3) {
      if (worker.child.exitCode !== null) throw new Error(`worker exited with ${worker.child.exitCode}:\n${worker.output()}`);
      if (Date.now() > deadline) throw new Error(`send not completed within 600 s: ${JSON.stringify(row)}`);
      await sleep(50);
      row = await sendRow(c, utr);
    }
    const wallMs = Date.now() - wall0;
    const workerCpuMs = cpuMs(worker.pid) - cpu0;
    const machineMs = machineBusyMs() - busy0;
    const mem = rss.stop();
    const dbActivity = activity.stop();
    const sinkSeen = await sinkStats(sink);
    const stop = await worker.stop();
    const ms = row.completed_at!.getTime() - row.created_at.getTime();
    const counts = await c.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM deliveries WHERE single_send_id = $1 GROUP BY status ORDER BY status`,
      [row.id],
    );
    const suppressedQueued = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM deliveries WHERE single_send_id = $1 AND email LIKE 'sup-%'`,
      [row.id],
    );
    return {
      utr,
      readyToCompletedMs: ms,
      startLatencyMs: row.sent_at!.getTime() - row.created_at.getTime(),
      fanoutMs: row.fanout_done_at!.getTime() - row.sent_at!.getTime(),
      harnessWallMs: wallMs,
      rate: (row.delivered / ms) * 1000,
      statistics: { triggered: row.triggered, delivered: row.delivered, bounces: row.bounces },
      deliveries: Object.fromEntries(counts.rows.map((r) => [r.status, r.n])),
      suppressedInAudience: suppressedQueued.rows[0].n,
      worker: {
        startupHwmMb,
        peakRssMb: mem.vmHwmMb,
        peakSampledRssMb: mem.peakSampledMb,
        rssSamples: mem.samples,
        cpuMs: workerCpuMs,
        cpuMsPerMessage: round(workerCpuMs / Math.max(1, row.delivered), 3),
        shutdown: stop,
      },
      machineCpu: {
        busyMs: round(machineMs, 0),
        workerMs: workerCpuMs,
        sinkMs: sinkSeen.cpuMs,
        restMs: round(machineMs - workerCpuMs - sinkSeen.cpuMs, 0),
        coresBusy: round(machineMs / ms, 2),
      },
      dbActivity,
      sink: { ...sinkSeen, samples: undefined },
      sampleCheck: await checkSamples(sinkSeen.samples),
    };
  } finally {
    await worker.stop();
  }
}

async function runMillion(c: Client, url: string, sink: Child, port: number, herald: Herald, f: Fixture, dataDir: string) {
  log(`inserting ${MILLION.toLocaleString('en')} contacts`);
  const t = Date.now();
  const typeId = await makeList(c, f, 'Bench 1M', 'm-', MILLION);
  await c.query('VACUUM ANALYZE contacts');
  const setupMs = Date.now() - t;
  log(`contacts in ${(setupMs / 1000).toFixed(1)} s; starting a fresh worker`);
  const worker = startWorker(url, port, dataDir, false);
  try {
    await workerReady(c, worker);
    const startupHwmMb = mb(procStatus(worker.pid).VmHWM ?? 0);
    await sinkReset(sink);
    resetPeakRss(worker.pid);
    let phase = 'starting';
    const rss = rssSampler(worker.pid, () => phase, 100);
    const utr = await createSend(herald, f, 'Bench 1M', typeId);
    let row = await sendRow(c, utr);
    let fanoutPeakMb = 0;
    const deadline = Date.now() + 900_000;
    let lastLog = 0;
    for (;;) {
      phase = row.status < 2 ? 'starting' : row.fanout_done_at ? 'sending' : 'fan-out + sending';
      const rssNow = mb(procStatus(worker.pid).VmRSS ?? 0);
      if (!row.fanout_done_at) fanoutPeakMb = Math.max(fanoutPeakMb, rssNow);
      if (row.status === 3 || (MILLION_STOP > 0 && row.delivered >= MILLION_STOP)) break;
      if (worker.child.exitCode !== null) throw new Error(`worker exited with ${worker.child.exitCode}:\n${worker.output()}`);
      if (Date.now() > deadline) throw new Error(`1M send: no progress to the stop point within 900 s: ${JSON.stringify(row)}`);
      if (Date.now() - lastLog > 15_000) {
        lastLog = Date.now();
        log(`  1M send: triggered ${row.triggered.toLocaleString('en')}, delivered ${row.delivered.toLocaleString('en')}, RSS ${rssNow} MB (${phase})`);
      }
      await sleep(200);
      row = await sendRow(c, utr);
    }
    const mem = rss.stop();
    // SIGTERM: the worker stops claiming, finishes what is in flight, records it, exits.
    const stop = await worker.stop();
    row = await sendRow(c, utr);
    const counts = await c.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM deliveries WHERE single_send_id = $1 GROUP BY status ORDER BY status`,
      [row.id],
    );
    const byStatus = Object.fromEntries(counts.rows.map((r) => [r.status, r.n]));
    const seen = await sinkStats(sink);
    const sendingMs = (row.completed_at ?? new Date()).getTime() - row.created_at.getTime();
    return {
      utr,
      recipients: MILLION,
      stoppedAfter: row.status === 3 ? 'completed' : `${row.delivered.toLocaleString('en')} delivered, then SIGTERM`,
      contactsSetupMs: setupMs,
      fanoutMs: row.fanout_done_at && row.sent_at ? row.fanout_done_at.getTime() - row.sent_at.getTime() : null,
      statistics: { status: row.status, triggered: row.triggered, delivered: row.delivered, bounces: row.bounces },
      approxRate: row.completed_at ? (row.delivered / sendingMs) * 1000 : null,
      deliveries: byStatus,
      worker: {
        startupHwmMb,
        peakRssMb: mem.vmHwmMb,
        peakSampledRssMb: mem.peakSampledMb,
        fanoutPeakRssMb: fanoutPeakMb,
        rssSamples: mem.samples,
        shutdown: stop,
      },
      rssTimeline: mem.timeline,
      sink: { ...seen, samples: undefined },
    };
  } finally {
    await worker.stop();
  }
}

// ---------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-send-'));
  let herald: Herald | undefined;
  let sink: Child | undefined;
  let c: Client | undefined;
  let dbCreated = false;
  const cleanup = async () => {
    await herald?.stop().catch(() => undefined);
    await sink?.stop(5_000).catch(() => undefined);
    killAll();
    await c?.end().catch(() => undefined);
    if (dbCreated && !opts.has('keep')) await dropDatabase(DB).catch((err) => log(`could not drop ${DB}: ${err.message}`));
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const onSignal = (sig: string) => {
    log(`${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('exit', killAll);

  try {
    if (!opts.has('no-build')) build();
    const s = await startSink();
    sink = s.sink;
    const port = s.port;
    log(`sink on 127.0.0.1:${port} (pid ${sink.pid}${SINK_CPU ? `, CPU ${SINK_CPU}` : ''})`);

    const url = await recreateDatabase(DB);
    dbCreated = true;
    log(`database ${DB} created; migrating and seeding through \`herald account create\``);
    const account = await createAccount(url, 'Bench send');
    c = await connect(url);
    const f = await makeFixture(c, account);
    const t = Date.now();
    const typeId = await makeList(c, f, 'Bench 100k', 'r-', RECIPIENTS, SUPPRESSED ? { prefix: 'sup-', count: SUPPRESSED } : undefined);
    if (SUPPRESSED) await suppress(c, f, 'sup-', SUPPRESSED);
    await c.query('VACUUM ANALYZE');
    await c.query('CHECKPOINT');
    log(`${(RECIPIENTS + SUPPRESSED).toLocaleString('en')} contacts (${SUPPRESSED} suppressed) in ${((Date.now() - t) / 1000).toFixed(1)} s`);

    herald = await startHerald({ databaseUrl: url, dataDir, env: { PUBLIC_URL } });
    const h = herald;
    log(`API on ${herald.baseUrl} (WORKER=0)`);

    // Rounds of (baseline, Herald), alternating, so both see the same machine; medians compared.
    const rounds: Array<{ background: { baseline?: number; herald: number }; baseline?: BaselineRun; herald: HeraldRun }> = [];
    for (let r = 1; r <= REPEAT; r += 1) {
      const tag = REPEAT > 1 ? ` (round ${r}/${REPEAT})` : '';
      let baseline: BaselineRun | undefined;
      let baselineBackground: number | undefined;
      if (RUN_BASELINE) {
        baselineBackground = await backgroundLoad();
        log(`baseline${tag}: nodemailer, ${RECIPIENTS.toLocaleString('en')} × sendMail({ html }), pool ${TUNING.SMTP_POOL_SIZE}, ${TUNING.SEND_CONCURRENCY} in flight; background load ${baselineBackground} cores`);
        baseline = await runBaseline(sink, port, c);
        log(`baseline${tag}: ${baseline.sent.toLocaleString('en')} in ${(baseline.ms / 1000).toFixed(1)} s = ${baseline.rate.toFixed(0)} msg/s (${(baseline.cpuMs / baseline.sent).toFixed(3)} ms CPU/msg)`);
      }
      const heraldBackground = await backgroundLoad();
      log(`Herald${tag}: single send to ${RECIPIENTS.toLocaleString('en')} recipients, ${JSON.stringify(TUNING)}; background load ${heraldBackground} cores`);
      const herald = await runHerald100k(c, sink, port, h, f, typeId, dataDir, url, r);
      log(
        `Herald${tag}: ${herald.statistics.delivered.toLocaleString('en')} in ${(herald.readyToCompletedMs / 1000).toFixed(1)} s = ${herald.rate.toFixed(0)} msg/s, peak RSS ${herald.worker.peakRssMb} MB`,
      );
      rounds.push({ background: { baseline: baselineBackground, herald: heraldBackground }, baseline, herald });
    }
    const heraldRun = rounds[rounds.length - 1].herald;
    const heraldRate = median(rounds.map((x) => x.herald.rate));
    const baselineRate = RUN_BASELINE ? median(rounds.map((x) => x.baseline!.rate)) : null;
    const baseline = rounds[rounds.length - 1].baseline;

    let million: Awaited<ReturnType<typeof runMillion>> | undefined;
    if (RUN_MILLION) million = await runMillion(c, url, sink, port, h, f, dataDir);

    const heralds = rounds.map((x) => x.herald);
    const checks = {
      sinkReceivedExactly: heralds.every((x) => x.sink.received === RECIPIENTS),
      noAddressTwice: heralds.every((x) => x.sink.duplicates === 0 && x.sink.unique === RECIPIENTS),
      statisticsMatch: heralds.every((x) => x.statistics.delivered === RECIPIENTS && x.statistics.triggered === RECIPIENTS && x.statistics.bounces === 0),
      suppressedNotSent: heralds.every((x) => x.suppressedInAudience === 0),
      messagesRendered: heralds.every((x) => x.sampleCheck.problems.length === 0),
      baselineReceivedExactly: RUN_BASELINE ? rounds.every((x) => x.baseline!.sink.received === RECIPIENTS && x.baseline!.sink.duplicates === 0) : null,
      millionSinkMatchesDb: million ? million.sink.received === (million.deliveries.sent ?? 0) && million.sink.duplicates === 0 : null,
      millionNothingLeftSending: million ? !million.deliveries.sending : null,
    };
    const ratio = baselineRate ? heraldRate / baselineRate : null;
    const result = {
      benchmark: 'send',
      when: new Date().toISOString(),
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memoryGb: round(os.totalmem() / 1024 ** 3), node: process.version },
      postgres: await serverInfo(c),
      pinning: PIN ? { sender: `CPU ${SENDER_CPU}`, sink: `CPU ${SINK_CPU}`, postgres: 'unpinned', api: 'unpinned (idle)' } : 'none',
      tuning: TUNING,
      design: { template_id: 2, subject: SUBJECT, rawMessageBytes: heraldRun.sampleCheck.rawBytes },
      rates: {
        heraldMsgPerS: Math.round(heraldRate),
        baselineMsgPerS: baselineRate === null ? null : Math.round(baselineRate),
        rounds: rounds.map((x) => ({
          backgroundCoresBusy: x.background,
          heraldMsgPerS: Math.round(x.herald.rate),
          baselineMsgPerS: x.baseline ? Math.round(x.baseline.rate) : null,
          heraldPeakRssMb: x.herald.worker.peakRssMb,
        })),
      },
      ratio: ratio === null ? null : round(ratio, 3),
      herald: heraldRun,
      baseline,
      million,
      targets: {
        ratio: { target: TARGET_RATIO, stretch: STRETCH_RATIO, met: ratio === null ? null : ratio >= TARGET_RATIO, stretchMet: ratio === null ? null : ratio >= STRETCH_RATIO },
        rssAt1M: { targetMb: TARGET_RSS_MB, met: million ? million.worker.peakRssMb <= TARGET_RSS_MB : null },
      },
      checks,
      totalMs: Date.now() - started,
    };
    const file = writeResult('send', result);
    printSummary(result);
    log(`wrote ${path.relative(ROOT, file)}; total ${((Date.now() - started) / 1000).toFixed(0)} s`);
    if (Object.values(checks).some((v) => v === false)) {
      process.exitCode = 1;
      log(`CHECKS FAILED: ${JSON.stringify(checks)}`);
    }
  } finally {
    await cleanup();
  }
}

function printSummary(r: {
  herald: HeraldRun;
  baseline?: BaselineRun;
  rates: { heraldMsgPerS: number; baselineMsgPerS: number | null; rounds: Array<{ heraldMsgPerS: number; baselineMsgPerS: number | null }> };
  ratio: number | null;
  million?: Awaited<ReturnType<typeof runMillion>>;
  checks: Record<string, boolean | null>;
}) {
  const h = r.herald;
  const each = (xs: Array<number | null>) => (xs.length > 1 ? ` [rounds: ${xs.join(', ')}]` : '');
  const lines = [
    '',
    `Send benchmark — ${RECIPIENTS.toLocaleString('en')} recipients, Newsletter design (template 2), ${os.cpus().length} cores`,
    `  Herald (ready → completed):  ${r.rates.heraldMsgPerS} msg/s${each(r.rates.rounds.map((x) => x.heraldMsgPerS))}` +
      `  (last: ${(h.readyToCompletedMs / 1000).toFixed(1)} s, fan-out ${(h.fanoutMs / 1000).toFixed(1)} s, ${h.worker.cpuMsPerMessage} ms worker CPU/msg)`,
    `  worker peak RSS:             ${h.worker.peakRssMb} MB (VmHWM during the send; sampled max ${h.worker.peakSampledRssMb} MB; start-up ${h.worker.startupHwmMb} MB)`,
  ];
  if (r.baseline && r.rates.baselineMsgPerS !== null) {
    const b = r.baseline;
    lines.push(
      `  baseline (nodemailer html):  ${r.rates.baselineMsgPerS} msg/s${each(r.rates.rounds.map((x) => x.baselineMsgPerS))}  (last: ${(b.cpuMs / b.sent).toFixed(3)} ms CPU/msg)`,
      `  Herald / baseline:           ${((r.ratio ?? 0) * 100).toFixed(0)} %  (target ≥ ${TARGET_RATIO * 100} %, stretch ${STRETCH_RATIO * 100} %)`,
    );
  }
  if (r.million) {
    const m = r.million;
    lines.push(
      `  1M recipients:               peak RSS ${m.worker.peakRssMb} MB (sampled max ${m.worker.peakSampledRssMb} MB, during fan-out ${m.worker.fanoutPeakRssMb} MB; target ≤ ${TARGET_RSS_MB} MB)`,
      `                               fan-out ${m.fanoutMs === null ? 'not finished' : `${(m.fanoutMs / 1000).toFixed(1)} s`}; ${m.stoppedAfter}`,
    );
  }
  lines.push(`  checks: ${Object.entries(r.checks).map(([k, v]) => `${k}=${v}`).join(' ')}`, '');
  process.stdout.write(lines.join('\n'));
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
