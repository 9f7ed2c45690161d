/**
 * API throughput benchmark (issue 9): `GET /contacts-type` and `GET /contacts/list` of a
 * 50-contact list, measured with autocannon (50 connections, 10 s per measurement) against
 * Herald and against a bare express + pg endpoint that runs the same SQL on the same database
 * in the same run (bench/lib/api-baseline.ts), alternating. Target: Herald ≥ 50 % of the bare
 * endpoint's requests per second, for each of the two.
 *
 * Herald runs as `npm start` runs it: `node bin/herald.js serve` with its defaults (worker
 * inside, LOG_LEVEL info with one JSON line per request, DB_POOL_MAX 10, the default rate
 * limit), connected as the benchmark database's owner, an ordinary role (bench/lib/pg.ts). Its
 * environment holds only where things are (DATABASE_URL, PORT, DATA_DIR) besides PATH, HOME
 * and the locale, so no setting of the caller's shell changes a default; its log goes to a
 * file, as under a process manager.
 *
 * The rate limit: RATE_LIMIT_PER_MINUTE (6000 per key pair a minute, 100 a second) would
 * answer 429 to a single key pair long before 10 s at these rates, so the load comes from many
 * accounts, as on a real multi-tenant server: each connection carries its own account's key
 * pair, and each measurement of Herald uses accounts no earlier measurement used (every
 * account has the same data: 3 contact types, 50 contacts in one, two custom fields). The
 * limiter still counts every request. Any answer other than 2xx, error or timeout fails the
 * measurement, and the benchmark.
 *
 *   npx tsx bench/api.ts [--runs 3] [--duration 10] [--connections 50] [--contacts 50]
 *                        [--only contacts-type|contacts-list] [--no-build] [--no-wait] [--keep]
 *                        [--cpu-prof]   (both servers write V8 CPU profiles into bench/out/api-profile/)
 *                        [--bare-prepared]   (the bare endpoint prepares its statement too, as Herald does)
 *
 * Run it under `flock /tmp/herald-bench.lock` so no other benchmark shares the machine. Each
 * measurement waits (up to 1 min) for idle CPUs first (--no-wait: don't). Prints a summary and
 * writes bench/out/api.json; exits non-zero on FAIL. See bench/README.md for the figures.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import knexFactory, { type Knex } from 'knex';
import { createAccount as createAccountRow } from '../src/accounts/accounts.service';
import { loadConfig } from '../src/config';
import type { Ctx } from '../src/context';
import { contactTypesQuery } from '../src/resources/contact-types/contact-types.service';
import { contactListQuery } from '../src/resources/contacts/contacts.service';
import { freePort } from '../test/helpers/net';
import { USER_ID, type BaselineParams, type BaselineRoute } from './lib/api-baseline';
import { build, createAccount, log, ROOT, type Account } from './lib/herald';
import { startLoggedHerald } from './lib/herald-logged';
import { connect, databaseUrl, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { median, procStatus, waitForQuiet, writeResult } from './lib/sample';
import { BENCH_LIB, cpuMs, killAll, nextMessage, spawnNode, type Child } from './lib/send-procs';
import { args } from './lib/setup';

const TARGET = 0.5;
const opts = args();
const RUNS = Math.max(1, Number(opts.get('runs') ?? 3));
const DURATION = Math.max(1, Number(opts.get('duration') ?? 10));
const CONNECTIONS = Math.max(1, Number(opts.get('connections') ?? 50));
const CONTACTS = Math.max(1, Number(opts.get('contacts') ?? 50));
const WARMUP_S = 3;
const DB = String(opts.get('db') ?? 'herald_bench_api');
const PROFILE_DIR = path.join(ROOT, 'bench', 'out', 'api-profile');
/** Herald's pool size when DB_POOL_MAX is not set; the baseline's pool gets the same. */
const POOL_MAX = loadConfig({}).dbPoolMax;

interface Endpoint {
  key: 'contacts-type' | 'contacts-list';
  path: string;
  listKey: string;
  /** Rows every account's answer holds. */
  rows: number;
  /** The SQL Herald runs for the list, from its own query builder. */
  query: (ctx: Ctx) => Knex.QueryBuilder;
}

const ALL_ENDPOINTS: Endpoint[] = [
  { key: 'contacts-type', path: '/contacts-type', listKey: 'contactTypes', rows: 3, query: (ctx) => contactTypesQuery(ctx) },
  // The first keyset batch of the streamed list holds the whole 50-contact list.
  { key: 'contacts-list', path: '/contacts/list', listKey: 'contacts', rows: CONTACTS, query: (ctx) => contactListQuery(ctx, 5000) },
];
const ENDPOINTS = ALL_ENDPOINTS.filter((e) => !opts.has('only') || opts.get('only') === e.key);

/** Compiles Herald's query for an account-independent SQL text; the account id becomes USER_ID. */
function baselineRoute(e: Endpoint): BaselineRoute {
  const knex = knexFactory({ client: 'pg' });
  const SENTINEL = 987_654_321;
  const { sql, bindings } = e.query({ userId: SENTINEL, db: knex }).toSQL().toNative();
  if (!bindings.includes(SENTINEL)) throw new Error(`${e.key}: the query does not filter by account`);
  const name = opts.has('bare-prepared') ? `bare_${e.key.replace(/-/g, '_')}` : undefined;
  return { key: e.listKey, sql, name, bindings: bindings.map((b) => (b === SENTINEL ? USER_ID : b)) };
}

/**
 * Every account's data, set-based: contact types Customers (with the contacts), Newsletter and
 * Leads; custom fields plan (text) and score (number), set on every contact.
 */
async function loadData(db: Knex, userIds: number[]): Promise<void> {
  await db.raw(
    `INSERT INTO contact_types (user_id, name)
     SELECT u, n FROM unnest(?::int[]) AS u, unnest(ARRAY['Customers', 'Newsletter', 'Leads']) WITH ORDINALITY AS t(n, o) ORDER BY u, o`,
    [userIds],
  );
  await db.raw(
    `INSERT INTO custom_fields (user_id, field_name, field_type)
     SELECT u, f, t FROM unnest(?::int[]) AS u, (VALUES ('plan', 'text'), ('score', 'number')) AS v(f, t) ORDER BY u, f`,
    [userIds],
  );
  await db.raw(`SELECT setseed(0.2026)`);
  await db.raw(
    `INSERT INTO contacts (user_id, contact_type_id, first_name, last_name, email, country_id, city, postal_code, custom_fields)
     SELECT ct.user_id, ct.id, fn, ln, lower(fn || '.' || ln) || i || '@example.com', 1 + floor(random() * 240)::int,
            (ARRAY['London', 'Paris', 'Berlin', 'Madrid', 'Toronto'])[1 + floor(random() * 5)::int], (10000 + i)::text,
            jsonb_build_object(plan.id::text, (ARRAY['free', 'starter', 'pro'])[1 + floor(random() * 3)::int],
                               score.id::text, floor(random() * 1000)::text)
       FROM contact_types ct
       JOIN custom_fields plan ON plan.user_id = ct.user_id AND plan.field_name = 'plan'
       JOIN custom_fields score ON score.user_id = ct.user_id AND score.field_name = 'score'
       CROSS JOIN LATERAL generate_series(1, ?::int) AS i
       CROSS JOIN LATERAL (SELECT (ARRAY['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'José'])[1 + (i % 6)] AS fn,
                                  (ARRAY['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Müller'])[1 + (i % 5)] AS ln) names
      WHERE ct.user_id = ANY(?::int[]) AND ct.name = 'Customers'
      ORDER BY ct.user_id, i`,
    [CONTACTS, userIds],
  );
}

interface Server {
  name: 'herald' | 'bare';
  baseUrl: string;
  pid: number;
  stop(): Promise<void>;
}

async function startHerald(url: string, dataDir: string, logFile: string): Promise<Server> {
  const nodeArgs = opts.has('cpu-prof') ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, '--cpu-prof-name=herald.cpuprofile'] : [];
  const h = await startLoggedHerald({ port: await freePort(), env: { DATABASE_URL: url, DATA_DIR: dataDir }, logFile, nodeArgs });
  return { name: 'herald', baseUrl: h.baseUrl, pid: h.pid, stop: h.stop };
}

async function startBaseline(params: Omit<BaselineParams, 'port'>, dir: string): Promise<Server & { child: Child }> {
  const port = await freePort();
  const file = path.join(dir, 'baseline.json');
  fs.writeFileSync(file, JSON.stringify({ ...params, port }));
  const nodeArgs = opts.has('cpu-prof') ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const child = spawnNode('bare express + pg', path.join(BENCH_LIB, 'api-baseline.ts'), [], { ts: true, ipc: true, nodeArgs, env: { BENCH_API_BASELINE: file } });
  await nextMessage(child, 'ready', 60_000);
  return { name: 'bare', baseUrl: `http://127.0.0.1:${port}`, pid: child.pid, child, stop: async () => void (await child.stop(10_000)) };
}

interface Measurement {
  server: 'herald' | 'bare';
  endpoint: string;
  run: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** CPU time of the server process per request (ms). */
  cpuMsPerRequest: number;
  rssMb: number;
  cpuBusyBefore: number | null;
}

/** One autocannon measurement; each connection carries the key pair of one of `accounts`. */
async function measure(server: Server, e: Endpoint, accounts: Account[], seconds: number): Promise<Omit<Measurement, 'run' | 'cpuBusyBefore'>> {
  let next = 0;
  const cpu0 = cpuMs(server.pid);
  const result = await autocannon({
    url: server.baseUrl + e.path,
    connections: CONNECTIONS,
    duration: seconds,
    timeout: 10,
    headers: { Accept: 'application/json' },
    setupClient: (client) => {
      const a = accounts[next++ % accounts.length];
      client.setHeaders({ Accept: 'application/json', PublicKey: a.public_key, SecretKey: a.secret_key });
    },
  });
  const cpu = cpuMs(server.pid) - cpu0;
  const requests = result.requests.total;
  return {
    server: server.name,
    endpoint: e.path,
    reqPerSec: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    requests,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    cpuMsPerRequest: requests ? Math.round((cpu / requests) * 1000) / 1000 : NaN,
    rssMb: Math.round(((procStatus(server.pid).VmRSS ?? 0) / 1024) * 10) / 10,
  };
}

/** Both servers answer the same rows for an account before anything is timed. */
async function checkAnswers(herald: Server, bare: Server, e: Endpoint, a: Account): Promise<void> {
  const headers = { Accept: 'application/json', PublicKey: a.public_key, SecretKey: a.secret_key };
  const get = async (s: Server) => {
    const res = await fetch(s.baseUrl + e.path, { headers });
    const body = (await res.json()) as { status: string; message: Record<string, Array<{ id: number }>> };
    if (res.status !== 200 || body.status !== 'success') throw new Error(`${s.name} ${e.path}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 500)}`);
    return body.message[e.listKey].map((r) => r.id);
  };
  const [h, b] = [await get(herald), await get(bare)];
  if (h.length !== e.rows || JSON.stringify(h) !== JSON.stringify(b)) {
    throw new Error(`${e.path}: Herald listed ${h.length} rows, the baseline ${b.length}, expected ${e.rows} in the same order`);
  }
}

const best = (xs: number[]) => Math.max(...xs);
const pct = (x: number) => `${Math.round(x * 100)} %`;

async function main(): Promise<number> {
  const started = Date.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-api-'));
  const servers: Server[] = [];
  let db: Knex | undefined;
  try {
    if (!opts.has('no-build')) build();
    const url = await recreateDatabase(DB);
    log(`database ${DB} created; migrating and seeding through \`herald account create\``);
    // Accounts: one slice of CONNECTIONS per Herald measurement (warm-up included), plus one for checks.
    const slices = ENDPOINTS.length * (RUNS + 1) + 1;
    const accounts: Account[] = [await createAccount(url, 'Bench api 0')];
    db = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 4 } });
    for (let i = 1; i < slices * CONNECTIONS; i += 1) accounts.push(await createAccountRow(db, { name: `Bench api ${i}`, email: `api${i}@bench.test` }));
    await loadData(db, accounts.map((a) => a.id));
    const admin = await connect(databaseUrl(DB));
    await admin.query('VACUUM (ANALYZE)');
    const pgInfo = await serverInfo(admin);
    await admin.end();
    log(`${accounts.length} accounts, ${CONTACTS} contacts each`);
    const slice = (i: number) => accounts.slice(i * CONNECTIONS, (i + 1) * CONNECTIONS);

    const herald = await startHerald(url, path.join(tmp, 'data'), path.join(tmp, 'herald.log'));
    servers.push(herald);
    const bare = await startBaseline(
      { databaseUrl: url, poolMax: POOL_MAX, accounts: Object.fromEntries(accounts.map((a) => [a.public_key, a.id])), routes: Object.fromEntries(ENDPOINTS.map((e) => [e.path, baselineRoute(e)])) },
      tmp,
    );
    servers.push(bare);
    log(`herald pid ${herald.pid} at ${herald.baseUrl}; bare express + pg pid ${bare.pid} at ${bare.baseUrl} (pool ${POOL_MAX})`);

    const measurements: Measurement[] = [];
    const warmups: Array<Awaited<ReturnType<typeof measure>>> = [];
    let sliceNo = 1;
    for (const e of ENDPOINTS) {
      await checkAnswers(herald, bare, e, accounts[0]);
      // Warm-up (JIT, caches, pools), not counted.
      const warm = slice(sliceNo++);
      warmups.push(await measure(herald, e, warm, WARMUP_S));
      warmups.push(await measure(bare, e, warm, WARMUP_S));
      for (let run = 1; run <= RUNS; run += 1) {
        const own = slice(sliceNo++);
        // Alternate which goes first, so a drift of the machine does not favour one side.
        for (const s of run % 2 ? [herald, bare] : [bare, herald]) {
          const busy = opts.has('no-wait') ? null : await waitForQuiet(60_000);
          const m = { ...(await measure(s, e, own, DURATION)), run, cpuBusyBefore: busy };
          measurements.push(m);
          log(`${e.path} run ${run} ${s.name}: ${m.reqPerSec} req/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms, ${m.cpuMsPerRequest} ms CPU/request${m.non2xx + m.errors + m.timeouts ? `, ${m.non2xx} non-2xx, ${m.errors} errors, ${m.timeouts} timeouts` : ''}`);
        }
      }
    }

    const summary = ENDPOINTS.map((e) => {
      const of = (name: string) => measurements.filter((m) => m.endpoint === e.path && m.server === name);
      const h = of('herald');
      const b = of('bare');
      const ratios = h.map((m) => m.reqPerSec / (b.find((x) => x.run === m.run)?.reqPerSec ?? NaN));
      const clean = [...h, ...b].every((m) => m.non2xx === 0 && m.errors === 0 && m.timeouts === 0);
      const ratio = median(ratios);
      const side = (ms: Measurement[]) => ({
        bestReqPerSec: best(ms.map((m) => m.reqPerSec)),
        medianReqPerSec: median(ms.map((m) => m.reqPerSec)),
        medianP50Ms: median(ms.map((m) => m.p50Ms)),
        medianP99Ms: median(ms.map((m) => m.p99Ms)),
        bestP99Ms: Math.min(...ms.map((m) => m.p99Ms)),
        medianCpuMsPerRequest: median(ms.map((m) => m.cpuMsPerRequest)),
      });
      return { endpoint: e.path, herald: side(h), bare: side(b), ratios, medianRatio: ratio, bestRatio: best(ratios), clean, pass: clean && ratio >= TARGET };
    });

    const lines = [
      '',
      `API throughput: autocannon, ${CONNECTIONS} connections, ${DURATION} s per measurement, ${RUNS} runs (best / median)`,
      ...summary.flatMap((s) => [
        '',
        `  ${s.endpoint}`,
        `    Herald           ${s.herald.bestReqPerSec} / ${s.herald.medianReqPerSec} req/s   p50 ${s.herald.medianP50Ms} ms   p99 ${s.herald.medianP99Ms} ms (best ${s.herald.bestP99Ms})   ${s.herald.medianCpuMsPerRequest} ms CPU/req`,
        `    bare express+pg  ${s.bare.bestReqPerSec} / ${s.bare.medianReqPerSec} req/s   p50 ${s.bare.medianP50Ms} ms   p99 ${s.bare.medianP99Ms} ms (best ${s.bare.bestP99Ms})   ${s.bare.medianCpuMsPerRequest} ms CPU/req`,
        `    Herald / bare    ${s.ratios.map(pct).join(', ')} → median ${pct(s.medianRatio)} (target ≥ ${pct(TARGET)})${s.clean ? '' : ', NOT ALL 2xx'}  ${s.pass ? 'PASS' : 'FAIL'}`,
      ]),
      '',
    ];
    process.stdout.write(lines.join('\n') + '\n');
    const pass = summary.every((s) => s.pass);
    const file = writeResult('api', {
      when: new Date().toISOString(),
      pass,
      target: `Herald ≥ ${TARGET * 100} % of the bare endpoint's req/s (median of the runs' ratios)`,
      settings: { connections: CONNECTIONS, durationS: DURATION, runs: RUNS, contactsPerList: CONTACTS, accounts: accounts.length, poolMax: POOL_MAX, barePrepared: opts.has('bare-prepared') },
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
      postgres: pgInfo,
      sql: Object.fromEntries(ENDPOINTS.map((e) => [e.path, baselineRoute(e).sql])),
      summary,
      measurements,
      warmups,
      totalS: Math.round((Date.now() - started) / 1000),
    });
    log(`wrote ${path.relative(ROOT, file)}`);
    return pass ? 0 : 1;
  } finally {
    for (const s of servers.reverse()) await s.stop().catch(() => undefined);
    await db?.destroy();
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
