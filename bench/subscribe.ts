/**
 * Public subscribe endpoint benchmark (issue 35): `POST /subscribe/<form public id>` of a double
 * opt-in form, every submission a new address, against Herald as `npm start` runs it — `node
 * bin/herald.js serve`, worker inside (it mails the confirmations, into the discarding SMTP sink,
 * while the submissions come in), LOG_LEVEL info with one JSON line per request, to a file —
 * connected as the ordinary role that owns the benchmark's database.
 *
 * The load: a generator in this process on loopback, `--connections` keep-alive connections, each
 * sending its next submission when the last one is answered, for `--duration` seconds; a request
 * in flight at the end is waited for, so every submission sent has its answer. Half the
 * submissions are JSON (`Content-Type` and `Accept: application/json`: the envelope, 200), half
 * form-encoded as the HTML snippet posts them (the "check your inbox" page, 200). Each carries
 * email (distinct: `s<run>-<n>@subscribers.bench-news.test`), first_name, a custom field, the
 * consent box and the empty honeypot, as a browser sends the snippet.
 *
 * The per-address limit is not what is measured: Herald trusts no proxy header (req.ip is the
 * socket's address), so the run sets SUBSCRIBE_LIMIT_PER_HOUR=1000000 — the limit is still
 * counted on every submission, one upsert of `subscribe_limits` — and each connection comes from
 * its own loopback source address (127.0.0.2 … 127.0.0.<1 + connections>), so the counter is one
 * row per client address as with real visitors, not one hot row.
 *
 * Target: ≥ 500 submissions/s (the median run), every answer 200, and after each run every
 * accepted submission has exactly one pending subscription and exactly one `optin_confirmation`
 * job, and the form's stats count every submission.
 *
 *   npx tsx bench/subscribe.ts [--runs 3] [--duration 10] [--connections 32] [--no-worker] [--no-build] [--no-wait] [--keep] [--cpu-prof <dir>]
 *
 * --no-worker: WORKER=0, the confirmations stay queued (the endpoint's own cost, without the
 * mailing in the same process; not how `npm start` runs).
 *
 * Run it under `flock /tmp/herald-bench.lock`. The machine may be shared: the load average is
 * recorded beside every figure. Prints a summary, writes bench/out/subscribe.json and exits 1 on
 * a FAIL.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { freePort } from '../test/helpers/net';
import { build, client, createAccount, log, ROOT } from './lib/herald';
import { startLoggedHerald, type LoggedHerald } from './lib/herald-logged';
import { connect, databaseUrl, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { median, waitForQuiet, writeResult } from './lib/sample';
import { makeFixture, type Fixture } from './lib/send-fixture';
import { cpuMs, killAll, nextMessage, spawnNode, BENCH_LIB, type Child } from './lib/send-procs';
import { args } from './lib/setup';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);
const RUNS = Math.max(1, num('runs', 3));
const DURATION = Math.max(1, num('duration', 10));
const CONNECTIONS = Math.min(200, Math.max(1, num('connections', 32)));
const WARMUP_S = 3;
const DB = 'herald_bench_subscribe';
const TARGET = 500;
const DOMAIN = 'subscribers.bench-news.test';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const loadavg = () => os.loadavg().map((x) => round(x));

/** A double opt-in form through the API: email, first name and the custom field `plan`, on one list. */
async function makeForm(baseUrl: string, f: Fixture, listId: number): Promise<{ id: number; publicId: string }> {
  const body = new URLSearchParams({
    name: 'Bench newsletter',
    'contact_type_ids[0]': String(listId),
    'fields[0][field_name]': 'email',
    'fields[1][field_name]': 'first_name',
    'fields[2][field_name]': 'plan',
    double_opt_in: '1',
    consent_text: 'Yes, send me the newsletter. I can unsubscribe at any time.',
    confirmation_sender_id: String(f.senderId),
  });
  const api = client(baseUrl, f.account);
  const res = await fetch(`${baseUrl}/forms/save`, { method: 'POST', headers: api.headers, body });
  const json = (await res.json()) as { status: string; message: { id: number; public_id: string } };
  if (!res.ok || json.status !== 'success') throw new Error(`/forms/save → ${res.status} ${JSON.stringify(json)}`);
  return { id: json.message.id, publicId: json.message.public_id };
}

interface Answer {
  status: number;
  ms: number;
  email: string;
}

/** One submission on `agent`'s connection; JSON or form-encoded. */
function submit(url: URL, agent: http.Agent, email: string, json: boolean): Promise<Answer> {
  const fields = { email, first_name: 'Ada', plan: 'pro', consent: '1', website: '' };
  const body = json
    ? JSON.stringify({ email, first_name: fields.first_name, custom_field: { plan: fields.plan }, consent: '1', website: '' })
    : new URLSearchParams({ email, first_name: fields.first_name, 'custom_field[plan]': fields.plan, consent: '1', website: '' }).toString();
  const headers = json
    ? { 'Content-Type': 'application/json', Accept: 'application/json' }
    : { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'text/html' };
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'Content-Length': Buffer.byteLength(body), 'User-Agent': 'herald-bench' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, email }));
    });
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, ms: performance.now() - t0, email }));
    req.end(body);
  });
}

const pct = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN);

/**
 * Herald's PostgreSQL sessions (its pool's backends: every session on the benchmark's database
 * but this script's own) with their CPU so far, and the database's committed transactions: the
 * server's side of a submission, read from /proc beside Herald's own CPU (the server runs here).
 */
async function serverSide(c: Client): Promise<{ cpu: Map<number, number>; commits: number }> {
  const { rows } = await c.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
  const stat = await c.query<{ n: string }>(`SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()`);
  return { cpu: new Map(rows.map((r) => [r.pid, cpuMs(r.pid)])), commits: Number(stat.rows[0].n) };
}

/** `seconds` of load: every connection from its own loopback address, one submission after another. */
async function load(c: Client, h: LoggedHerald, publicId: string, tag: string, seconds: number) {
  const url = new URL(`${h.baseUrl}/subscribe/${publicId}`);
  const answers: Answer[] = [];
  let n = 0;
  // pg_stat_database is a snapshot per transaction, and lags by up to PGSTAT's flush interval: cleared and waited for.
  await c.query('SELECT pg_stat_clear_snapshot()');
  const pg0 = await serverSide(c);
  const cpu0 = cpuMs(h.pid);
  const t0 = Date.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, i) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1, localAddress: `127.0.0.${2 + i}` });
      try {
        while (Date.now() < end) {
          n += 1;
          answers.push(await submit(url, agent, `${tag}-${n}@${DOMAIN}`, n % 2 === 0));
        }
      } finally {
        agent.destroy();
      }
    }),
  );
  const elapsed = (Date.now() - t0) / 1000;
  const cpu = cpuMs(h.pid) - cpu0;
  await sleep(1100);
  await c.query('SELECT pg_stat_clear_snapshot()');
  const pg1 = await serverSide(c);
  // Backends that lived through the run (knex keeps its pool's connections open).
  let pgCpu = 0;
  for (const [pid, before] of pg0.cpu) {
    const after = pg1.cpu.get(pid);
    if (after !== undefined && Number.isFinite(after - before)) pgCpu += after - before;
  }
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  const statusCodes: Record<string, number> = {};
  for (const a of answers) statusCodes[a.status] = (statusCodes[a.status] ?? 0) + 1;
  const accepted = answers.filter((a) => a.status === 200).map((a) => a.email);
  return {
    submissions: answers.length,
    seconds: round(elapsed),
    perSec: Math.round(answers.length / elapsed),
    p50Ms: round(pct(ms, 50), 1),
    p99Ms: round(pct(ms, 99), 1),
    maxMs: round(ms[ms.length - 1] ?? NaN, 1),
    statusCodes,
    accepted,
    heraldCpuMsPerSubmission: answers.length ? round(cpu / answers.length, 3) : NaN,
    postgresCpuMsPerSubmission: answers.length ? round(pgCpu / answers.length, 3) : NaN,
    commitsPerSubmission: answers.length ? round((pg1.commits - pg0.commits) / answers.length, 2) : NaN,
  };
}

/**
 * What the run left in the database: a pending subscription per accepted address (and none
 * other of this run), exactly one confirmation job per pending subscription, and the form's
 * submissions counter moved by as many.
 */
async function verify(c: Client, f: Fixture, formId: number, tag: string, accepted: string[], submissionsBefore: number) {
  const pending = await c.query<{ email: string; id: string }>(
    `SELECT email, id FROM pending_subscriptions WHERE user_id = $1 AND form_id = $2 AND email LIKE $3`,
    [f.userId, formId, `${tag}-%`],
  );
  const emails = new Set(pending.rows.map((r) => r.email));
  const onePendingEach = pending.rows.length === accepted.length && emails.size === accepted.length && accepted.every((e) => emails.has(e));
  const jobs = await c.query<{ pending: number; with_one: number; jobs: number }>(
    `SELECT count(*)::int AS pending, count(*) FILTER (WHERE j.n = 1)::int AS with_one, coalesce(sum(j.n), 0)::int AS jobs
       FROM pending_subscriptions p
       CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM jobs
                            WHERE jobs.user_id = p.user_id AND jobs.kind = 'optin_confirmation' AND (jobs.payload->>'pendingId')::bigint = p.id) j
      WHERE p.user_id = $1 AND p.form_id = $2 AND p.email LIKE $3`,
    [f.userId, formId, `${tag}-%`],
  );
  const j = jobs.rows[0];
  const submissions = await formSubmissions(c, f.userId, formId);
  return {
    pendingRows: pending.rows.length,
    confirmationJobs: j.jobs,
    onePendingEach,
    oneJobEach: j.pending === accepted.length && j.with_one === j.pending && j.jobs === j.pending,
    statsCounted: submissions - submissionsBefore === accepted.length,
    submissionsCounted: submissions - submissionsBefore,
  };
}

async function formSubmissions(c: Client, userId: number, formId: number): Promise<number> {
  const { rows } = await c.query<{ n: number }>(`SELECT coalesce(sum(submissions), 0)::int AS n FROM form_stats_daily WHERE user_id = $1 AND form_id = $2`, [userId, formId]);
  return rows[0].n;
}

async function measure(c: Client, f: Fixture, h: LoggedHerald, form: { id: number; publicId: string }, tag: string, seconds: number) {
  const before = await formSubmissions(c, f.userId, form.id);
  const m = await load(c, h, form.publicId, tag, seconds);
  const checks = await verify(c, f, form.id, tag, m.accepted, before);
  const { accepted, ...rest } = m;
  const ok = Object.keys(m.statusCodes).every((s) => s === '200') && checks.onePendingEach && checks.oneJobEach && checks.statsCounted;
  return { ...rest, acceptedCount: accepted.length, checks, ok };
}

async function main(): Promise<number> {
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-subscribe-'));
  let sink: Child | undefined;
  let herald: LoggedHerald | undefined;
  let c: Client | undefined;
  try {
    if (!opts.has('no-build')) build();
    sink = spawnNode('sink', path.join(BENCH_LIB, 'send-sink.ts'), [], { ts: true, ipc: true });
    const { port: smtpPort } = await nextMessage<{ port: number }>(sink, 'listening', 30_000);
    const url = await recreateDatabase(DB);
    const account = await createAccount(url, 'Bench subscribe');
    c = await connect(url);
    const f = await makeFixture(c, account);
    const list = await c.query<{ id: number }>(`INSERT INTO contact_types (user_id, name) VALUES ($1, 'Newsletter') RETURNING id`, [f.userId]);
    const admin = await connect(databaseUrl(DB));
    const pgInfo = await serverInfo(admin);
    await admin.end();

    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    herald = await startLoggedHerald({
      port,
      env: {
        DATABASE_URL: url,
        DATA_DIR: path.join(tmp, 'data'),
        SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
        PUBLIC_URL: baseUrl,
        SUBSCRIBE_LIMIT_PER_HOUR: '1000000',
        ...(opts.has('no-worker') ? { WORKER: '0' } : {}),
      },
      logFile: path.join(tmp, 'herald.log'),
      // --cpu-prof <dir>: Herald's V8 CPU profile, written there when it exits (NODE_OPTIONS refuses --cpu-prof).
      ...(opts.has('cpu-prof') ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${path.resolve(String(opts.get('cpu-prof')))}`] } : {}),
    });
    const form = await makeForm(baseUrl, f, list.rows[0].id);
    log(`form ${form.id} (${form.publicId}); ${CONNECTIONS} connections from 127.0.0.2–127.0.0.${1 + CONNECTIONS}; load average ${loadavg().join(' ')}`);

    const warmup = await measure(c, f, herald, form, 'w', WARMUP_S);
    log(`warm-up: ${warmup.perSec}/s, answers ${JSON.stringify(warmup.statusCodes)}, checks ${JSON.stringify(warmup.checks)}`);
    const runs: Array<Awaited<ReturnType<typeof measure>> & { run: number; cpuBusyBefore: number | null; loadavg: number[] }> = [];
    for (let r = 1; r <= RUNS; r += 1) {
      const busy = opts.has('no-wait') ? null : await waitForQuiet(60_000);
      const la = loadavg();
      const m = { ...(await measure(c, f, herald, form, `s${r}`, DURATION)), run: r, cpuBusyBefore: busy, loadavg: la };
      runs.push(m);
      log(
        `run ${r}: ${m.perSec} submissions/s (${m.submissions} in ${m.seconds} s), p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms, ${m.heraldCpuMsPerSubmission} ms Herald CPU each, ${m.postgresCpuMsPerSubmission} ms PostgreSQL, ${m.commitsPerSubmission} commits; ` +
          `answers ${JSON.stringify(m.statusCodes)}; pending ${m.checks.pendingRows}, confirmation jobs ${m.checks.confirmationJobs}, counted ${m.checks.submissionsCounted}; ` +
          `load ${la.join(' ')} (CPU busy before ${busy ?? 'not waited'})`,
      );
    }
    // The worker mailed the confirmations meanwhile; how far it got (shown, not judged).
    await sleep(1000);
    const jobStates = await c.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM jobs WHERE user_id = $1 AND kind = 'optin_confirmation' GROUP BY status`, [f.userId]);
    const mailed = Object.fromEntries(jobStates.rows.map((r) => [r.status, r.n]));

    const rate = median(runs.map((m) => m.perSec));
    const everyOk = runs.every((m) => m.ok) && warmup.ok;
    const pass = rate >= TARGET && everyOk;
    const v = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
    const la = runs.map((m) => m.loadavg[0]);
    process.stdout.write(
      [
        '',
        `Subscribe: POST /subscribe/<id> (double opt-in, JSON and form-encoded alternately, distinct addresses), worker ${opts.has('no-worker') ? 'off' : 'inside'}, ${CONNECTIONS} connections, ${DURATION} s per run, ${RUNS} runs`,
        `  ${Math.max(...runs.map((m) => m.perSec))} / ${rate} submissions/s best / median (target ≥ ${TARGET}) ${v(rate >= TARGET)}; ` +
          `p50 ${median(runs.map((m) => m.p50Ms))} ms, p99 ${median(runs.map((m) => m.p99Ms))} ms; load average (1 min) during runs ${la.join(', ')}`,
        `  every submission 200, one pending subscription, one confirmation job, counted in the form's stats (${runs.reduce((a, m) => a + m.acceptedCount, 0)} submissions): ${v(everyOk)}`,
        `  confirmation jobs by state at the end (the worker mails them meanwhile): ${JSON.stringify(mailed)}`,
        `  ${v(pass)}`,
        '',
      ].join('\n'),
    );
    const file = writeResult('subscribe', {
      when: new Date().toISOString(),
      pass,
      target: { submissionsPerSec: TARGET, everySubmissionOnePendingOneJob: true },
      settings: { worker: !opts.has('no-worker'), connections: CONNECTIONS, durationS: DURATION, runs: RUNS, subscribeLimitPerHour: 1_000_000, clientAddresses: CONNECTIONS },
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavgAtEnd: os.loadavg() },
      postgres: pgInfo,
      medianSubmissionsPerSec: rate,
      confirmationJobsByState: mailed,
      runs,
      warmup,
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
