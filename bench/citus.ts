/**
 * Citus benchmark (issue 21): the same work on the local three-node Citus cluster (a coordinator
 * and two workers, each its own PostgreSQL 15 on this one machine: scripts/citus/up.sh) and on
 * the single PostgreSQL server (BENCH_PG_URL), in one run, alternating step by step:
 *
 *   import    a 1,000,000-row CSV (bench/lib/csv-gen.ts) through POST /contacts/upload-csv of a
 *             real `herald serve` into an empty list
 *   segment   a three-rule segment's member count over those contacts, GET /segment/details with
 *             the count not cached (--repeat times), against plain SQL on the coordinator
 *   fan-out   the send's audience written as the delivery worker writes it: src/delivery/audience.ts
 *             fanOutChunk, chunk after chunk (chunkSize), each in its own transaction — the
 *             statements themselves, called directly (the send step below runs the worker's
 *             whole loop)
 *   send      (--send N, default 100,000) a single send of N recipients into an SMTP sink, `herald
 *             serve` with its worker, create call → completed. On both (the worker's
 *             per-account claims on the cluster, docs/scaling.md); --no-citus-send skips the
 *             cluster's
 *
 * PASS when every step works on both and their results are equal (counts of the import, the
 * segment — also equal to plain SQL — and the fan-out; every message once into the sink). No
 * speed target: every node shares the machine's 2 cores, so no speed-up is expected; the
 * overhead (cluster ÷ single server) is reported per step. Writes bench/out/citus.json.
 *
 *   npm run bench:citus -- [--contacts 1000000] [--rounds 1] [--repeat 3] [--send 100000]
 *                          [--no-citus-send] [--no-build] [--no-wait] [--keep]
 *
 * The cluster: CITUS_PORT (default 9700; the nodes use it and the next two ports), started when
 * it is not running and then stopped at the end (scripts/citus/down.sh); a running one is reused
 * and only the benchmark's database (herald_bench_citus) is dropped from it. Run it under
 * `flock /tmp/herald-bench.lock` on a shared machine. See bench/README.md, "Citus".
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Client } from 'pg';
import { chunkSize, fanOutChunk } from '../src/delivery/audience';
import { createDb } from '../src/db/knex';
import { generateCsv } from './lib/csv-gen';
import { build, checksLine, client, createAccount, finishRun, log, ROOT, runMain, startHerald, type Account, type Herald } from './lib/herald';
import { connect, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { bestMedian, waitForQuiet, writeResult } from './lib/sample';
import { addContactType, addCustomFields, args } from './lib/setup';
import { machineInfo } from './lib/send-bench';
import { makeFixture, makeList, type Fixture } from './lib/send-fixture';
import { createSend, sendRow, startServe } from './lib/send-herald';
import { ask, BENCH_LIB, type Child, cleanUpOnStop, killAll, nextMessage, spawnNode } from './lib/send-procs';
import type { SinkStats } from './lib/send-sink';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);
const CONTACTS = num('contacts', 1_000_000);
const ROUNDS = Math.max(1, num('rounds', 1));
const REPEAT = Math.max(1, num('repeat', 3));
const SEND = num('send', 100_000);
const SEND_ON_CITUS = !opts.has('no-citus-send');
const DB = 'herald_bench_citus';
const CITUS_PORT = Number(process.env.CITUS_PORT ?? 9700);
const PUBLIC_URL = 'https://herald.bench.test';

type Name = 'single' | 'citus';
const NAMES: Name[] = ['single', 'citus'];

interface Target {
  name: Name;
  url: string;
  account: Account;
  c: Client;
  db: Knex;
  f: Fixture;
  herald: Herald;
  api: ReturnType<typeof client>;
  fields: Record<string, number>;
  lists: number[];
  settings: Record<string, string>;
}

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const load = () => round(os.loadavg()[0], 2);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A quiet moment before a timed step (unless --no-wait); the CPUs' busy share seen last. */
async function quiet(): Promise<number> {
  return opts.has('no-wait') ? NaN : waitForQuiet(60_000);
}

function citusScript(script: string, args: string[] = []): string {
  const res = spawnSync('bash', [path.join(ROOT, 'scripts', 'citus', script), ...args], {
    cwd: ROOT,
    env: { ...process.env, CITUS_PORT: String(CITUS_PORT), CITUS_DB: DB },
    encoding: 'utf8',
  });
  if (res.status !== 0) throw new Error(`scripts/citus/${script} failed (${res.status}):\n${res.stderr}`);
  return res.stdout;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** The segment: the count compared, and the same rules as plain SQL ($1 user, $2 type, $3 score's field id, $4 plan's). */
const SEGMENT = {
  label: 'email contains "smith" AND score > 500 AND plan is "pro"',
  rules: (f: Record<string, number>) => ({ select_field: [f.email, f.score, f.plan], select_operator: ['contains', 'is greater than', 'is'], value: ['smith', '500', 'pro'] }),
  sql: `SELECT count(*)::int AS n FROM contacts WHERE user_id = $1 AND contact_type_id = $2 AND deleted_at IS NULL
        AND email ILIKE '%smith%' AND (custom_fields ->> $3)::numeric > 500 AND lower(custom_fields ->> $4) = 'pro'`,
};

async function prepare(name: Name, url: string, dataDir: string): Promise<Target> {
  const t = Date.now();
  // `herald account create` migrates, distributes (on Citus) and seeds first.
  const account = await createAccount(url, `Bench citus ${name}`);
  const c = await connect(url);
  const f = await makeFixture(c, account);
  const herald = await startHerald({ databaseUrl: url, dataDir: path.join(dataDir, name) });
  const api = client(herald.baseUrl, account);
  const fields = await addCustomFields(api, [['score', 'number']]);
  const settings = await serverInfo(c);
  log(`${name}: database ready in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return { name, url, account, c, db: createDb({ url, poolMax: 2 }), f, herald, api, fields, lists: [], settings };
}

/** One import of the CSV into a new list, through the API; the record's and the list's counts. */
async function importOnce(t: Target, csv: string, r: number) {
  const busy = await quiet();
  const typeId = await addContactType(t.api, `Imported ${r}`);
  t.lists.push(typeId);
  const form = new FormData();
  form.append('contact_type_id', String(typeId));
  form.append('file', await fs.openAsBlob(csv, { type: 'text/csv' }), 'contacts.csv');
  const loadBefore = load();
  const t0 = Date.now();
  await t.api.multipart('/contacts/upload-csv', form);
  const ms = Date.now() - t0;
  const rec = ((await t.api.get('/contacts/imports?page=1&per_page=1')) as { message: { imports: Array<{ status: string; rows_read: number; inserted: number; updated: number; skipped: number }> } }).message
    .imports[0];
  const { rows } = await t.c.query<{ n: number }>('SELECT count(*)::int AS n FROM contacts WHERE user_id = $1 AND contact_type_id = $2 AND deleted_at IS NULL', [t.account.id, typeId]);
  log(`${t.name}: import ${r}: ${(ms / 1000).toFixed(1)} s, ${rec.inserted} inserted, ${rows[0].n} in the list (load ${loadBefore} → ${load()})`);
  return { ms, busy, load: [loadBefore, load()], record: { status: rec.status, rowsRead: rec.rows_read, inserted: rec.inserted, updated: rec.updated, skipped: rec.skipped }, contacts: rows[0].n };
}

/** The segment's member count, not cached (each time after bumping the list's version, as any contact write does). */
async function segmentCounts(t: Target) {
  const typeId = t.lists[0];
  await t.c.query('VACUUM ANALYZE contacts');
  await t.api.form('/segment/save', { segment_name: 'Bench segment', contact_type_id: typeId, ...SEGMENT.rules(t.fields) });
  const { rows: seg } = await t.c.query<{ id: number }>(`SELECT id FROM segments WHERE user_id = $1 AND segment_name = 'Bench segment'`, [t.account.id]);
  const runs: Array<{ ms: number; count: number; busy: number }> = [];
  for (let i = 0; i < REPEAT; i += 1) {
    await t.c.query('UPDATE contact_types SET contacts_version = contacts_version + 1 WHERE id = $1 AND user_id = $2', [typeId, t.account.id]);
    const busy = await quiet();
    const t0 = Date.now();
    const res = (await t.api.get(`/segment/details?segment_id=${seg[0].id}`)) as { message: { segment: { segment_emails_count: number } } };
    runs.push({ ms: Date.now() - t0, count: res.message.segment.segment_emails_count, busy });
  }
  const sql = await t.c.query<{ n: number }>(SEGMENT.sql, [t.account.id, typeId, String(t.fields.score), String(t.fields.plan)]);
  log(`${t.name}: segment count ${runs.map((x) => `${x.ms} ms`).join(', ')} → ${runs[0].count} members (plain SQL ${sql.rows[0].n})`);
  return { runs, sqlCount: sql.rows[0].n };
}

/**
 * The audience of a send to the first list, written by the delivery worker's own statements
 * (src/delivery/audience.ts: fanOutChunk, chunk sizes by chunkSize), each chunk in a transaction
 * of its own as the scheduler runs them — the statements alone, without the scheduler's claim
 * and the sender beside them (the send step runs the whole worker).
 */
async function fanOnce(t: Target, r: number) {
  const typeId = t.lists[0];
  const { rows: send } = await t.c.query<{ id: number }>(
    `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader, from_sender, reply_to, status)
     VALUES ($1, $2, 2, $3, $4, $5, 's', 'p', 'news@bench-news.test', 'reply@bench-news.test', 0) RETURNING id`,
    [t.account.id, randomUUID(), t.f.senderId, t.f.groupId, `fan-out ${r}`],
  );
  const target = { userId: t.account.id, singleSendId: send[0].id, groupId: t.f.groupId, sources: [{ table: 'contacts_' as const, id: String(typeId) }], exclusions: [], hold: false };
  const busy = await quiet();
  const loadBefore = load();
  const t0 = Date.now();
  let cursor = { source: 0, after: 0 };
  let written = 0;
  let chunks = 0;
  for (;;) {
    const size = chunkSize(written);
    const step = await t.db.transaction((trx) => fanOutChunk(trx, target, cursor, size));
    written += step.inserted;
    chunks += 1;
    if (!step.next || step.next.source >= target.sources.length) break;
    cursor = step.next;
  }
  const ms = Date.now() - t0;
  const { rows } = await t.c.query<{ n: number }>('SELECT count(*)::int AS n FROM deliveries WHERE user_id = $1 AND single_send_id = $2', [t.account.id, send[0].id]);
  log(`${t.name}: fan-out ${r}: ${(ms / 1000).toFixed(1)} s, ${chunks} chunks, ${written} written, ${rows[0].n} rows (load ${loadBefore} → ${load()})`);
  // Written as queued: gone again before anything else runs, or a worker (the send step's) would send them.
  await t.c.query('TRUNCATE deliveries');
  await t.c.query('DELETE FROM single_sends WHERE user_id = $1 AND id = $2', [t.account.id, send[0].id]);
  return { ms, busy, load: [loadBefore, load()], chunks, written, rows: rows[0].n };
}

/** A single send of SEND recipients through `herald serve` with its worker, into the sink: create call → completed. */
async function sendOnce(t: Target, sink: Child, port: number, dataDir: string) {
  const typeId = await makeList(t.c, t.f, 'Send list', 'm-', SEND);
  await t.c.query('VACUUM ANALYZE');
  await t.herald.stop();
  const serve = await startServe({ databaseUrl: t.url, smtpPort: port, dataDir: path.join(dataDir, `${t.name}-send`), publicUrl: PUBLIC_URL });
  try {
    await ask(sink, { type: 'reset', keep: 0 });
    const busy = await quiet();
    const loadBefore = load();
    const { utr, calledAt } = await createSend(serve.baseUrl, t.f.account, { senderId: t.f.senderId, groupId: t.f.groupId, typeId, name: `Bench send ${t.name}` });
    let row = await sendRow(t.c, utr);
    // Bounded by progress, not by a total: a send that stops moving (no worker, on Citus before
    // it runs there) fails after two minutes, saying so, instead of waiting for nothing.
    let moved = { at: Date.now(), delivered: -1, triggered: -1 };
    while (row.status !== 3) {
      if (serve.child.exitCode !== null) throw new Error(`herald serve exited with ${serve.child.exitCode}:\n${serve.output()}`);
      if (row.delivered !== moved.delivered || row.triggered !== moved.triggered) moved = { at: Date.now(), delivered: row.delivered, triggered: row.triggered };
      if (Date.now() - moved.at > 120_000) throw new Error(`${t.name}: the send made no progress for 2 minutes: ${JSON.stringify(row)}\n${serve.output().slice(-2000)}`);
      await sleep(200);
      row = await sendRow(t.c, utr);
    }
    // A string, not a Date: createDb (src/db/knex.ts) installs Herald's type parsers in this process.
    const ms = new Date(row.completed_at as unknown as string).getTime() - calledAt;
    const seen = await ask<SinkStats>(sink, { type: 'stats' });
    log(`${t.name}: send of ${SEND}: ${(ms / 1000).toFixed(1)} s, ${Math.round((row.delivered / ms) * 1000)} msg/s (load ${loadBefore} → ${load()})`);
    return { ms, busy, load: [loadBefore, load()], msgPerS: Math.round((row.delivered / ms) * 1000), delivered: row.delivered, sink: { received: seen.received, unique: seen.unique, duplicates: seen.duplicates } };
  } finally {
    await serve.stop(60_000);
  }
}

async function main() {
  const started = Date.now();
  const loadAtStart = load();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-citus-'));
  const targets: Partial<Record<Name, Target>> = {};
  let sink: Child | undefined;
  let singleCreated = false;
  let clusterStarted = false;
  let clusterDb = false;
  const cleanup = async () => {
    for (const t of Object.values(targets)) {
      await t.herald.stop().catch(() => undefined);
      await t.db.destroy().catch(() => undefined);
      await t.c.end().catch(() => undefined);
    }
    await sink?.stop(5_000).catch(() => undefined);
    killAll();
    if (!opts.has('keep')) {
      if (singleCreated) await dropDatabase(DB).catch((err) => log(`could not drop ${DB}: ${err.message}`));
      if (clusterStarted) citusScript('down.sh');
      else if (clusterDb) citusScript('dropdb.sh', [DB]);
    } else log(`kept ${DB} on the single server and on the cluster (port ${CITUS_PORT})`);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  cleanUpOnStop(cleanup);
  try {
    if (!opts.has('no-build')) build();
    const csv = path.join(dataDir, 'contacts.csv');
    const gen = await generateCsv(csv, CONTACTS);
    log(`${CONTACTS.toLocaleString('en')}-row CSV (${(gen.bytes / 1e6).toFixed(0)} MB) in ${(gen.ms / 1000).toFixed(1)} s`);

    const singleUrl = await recreateDatabase(DB);
    singleCreated = true;
    clusterStarted = !(await listening(CITUS_PORT));
    log(clusterStarted ? `starting the Citus cluster on ${CITUS_PORT}–${CITUS_PORT + 2}` : `reusing the Citus cluster running on ${CITUS_PORT}`);
    const citusUrl = citusScript('up.sh').trim().split('\n').pop()!;
    clusterDb = true;
    targets.single = await prepare('single', singleUrl, dataDir);
    targets.citus = await prepare('citus', citusUrl, dataDir);
    const both = [targets.single, targets.citus];

    const imports: Record<Name, Awaited<ReturnType<typeof importOnce>>[]> = { single: [], citus: [] };
    for (let r = 1; r <= ROUNDS; r += 1) for (const t of both) imports[t.name].push(await importOnce(t, csv, r));
    const segments = { single: await segmentCounts(targets.single), citus: await segmentCounts(targets.citus) };
    const fanouts: Record<Name, Awaited<ReturnType<typeof fanOnce>>[]> = { single: [], citus: [] };
    for (let r = 1; r <= ROUNDS; r += 1) for (const t of both) fanouts[t.name].push(await fanOnce(t, r));

    const sends: Partial<Record<Name, Awaited<ReturnType<typeof sendOnce>>>> = {};
    if (SEND > 0) {
      sink = spawnNode('sink', path.join(BENCH_LIB, 'send-sink.ts'), [], { ts: true, ipc: true });
      const { port } = await nextMessage<{ port: number }>(sink, 'listening', 30_000);
      sends.single = await sendOnce(targets.single, sink, port, dataDir);
      if (SEND_ON_CITUS) sends.citus = await sendOnce(targets.citus, sink, port, dataDir);
      else log('citus: send on the cluster skipped (--no-citus-send)');
    }

    const ms = (xs: Array<{ ms: number }>) => bestMedian(xs.map((x) => x.ms));
    const overhead = (a: number, b: number) => round(b / a, 2);
    const steps = {
      import: { single: ms(imports.single), citus: ms(imports.citus) },
      segmentCount: { single: ms(segments.single.runs), citus: ms(segments.citus.runs) },
      fanout: { single: ms(fanouts.single), citus: ms(fanouts.citus) },
      send: sends.single ? { single: sends.single.ms, citus: sends.citus?.ms ?? null } : null,
    };
    const overheads = {
      import: overhead(steps.import.single.median, steps.import.citus.median),
      segmentCount: overhead(steps.segmentCount.single.median, steps.segmentCount.citus.median),
      fanout: overhead(steps.fanout.single.median, steps.fanout.citus.median),
      send: sends.single && sends.citus ? overhead(sends.single.ms, sends.citus.ms) : null,
    };
    const everyImport = [...imports.single, ...imports.citus];
    const counts = NAMES.map((n) => segments[n].runs.map((x) => x.count));
    const checks: Record<string, boolean | undefined> = {
      importsComplete: everyImport.every((x) => x.record.status === 'completed' && x.record.rowsRead === CONTACTS && x.record.inserted === CONTACTS && x.contacts === CONTACTS),
      segmentEqualsSql: NAMES.every((n) => segments[n].runs.every((x) => x.count === segments[n].sqlCount)),
      segmentEqualOnBoth: new Set(counts.flat()).size === 1,
      fanoutComplete: [...fanouts.single, ...fanouts.citus].every((x) => x.written === CONTACTS && x.rows === CONTACTS),
      sendComplete: SEND > 0 ? Object.values(sends).every((s) => s.delivered === SEND && s.sink.received === SEND && s.sink.unique === SEND) : undefined,
    };
    if (checks.sendComplete === undefined) delete checks.sendComplete;
    const pass = Object.values(checks).every(Boolean);
    const nodes = await targets.citus.c.query<{ node_port: number }>('SELECT node_port FROM citus_get_active_worker_nodes() ORDER BY 1');
    const placed = await targets.citus.c.query<{ nodeport: number }>(
      `SELECT nodeport FROM citus_shards WHERE table_name = 'contacts'::regclass AND shardid = get_shard_id_for_distribution_column('contacts', $1::int)`,
      [targets.citus.account.id],
    );
    const result = {
      benchmark: 'citus',
      when: new Date().toISOString(),
      machine: { ...machineInfo(), loadAvg1m: { start: loadAtStart, end: load() } },
      postgres: { single: targets.single.settings, citus: targets.citus.settings },
      cluster: { coordinatorPort: CITUS_PORT, workers: nodes.rows.map((r) => r.node_port), accountOnWorker: placed.rows[0]?.nodeport },
      contacts: CONTACTS,
      rounds: ROUNDS,
      repeat: REPEAT,
      send: { recipients: SEND, onCitus: SEND_ON_CITUS },
      steps,
      overheads,
      checks,
      pass,
      runs: { imports, segments, fanouts, sends },
      totalMs: Date.now() - started,
    };
    const file = writeResult('citus', result);
    const line = (label: string, x: { single: { best: number; median: number; runs: number[] }; citus: { best: number; median: number; runs: number[] } }, o: number) =>
      `  ${label.padEnd(40)} single ${x.single.median} ms [${x.single.runs.join(', ')}]   citus ${x.citus.median} ms [${x.citus.runs.join(', ')}]   citus ÷ single ${o} ×`;
    const sendLine =
      SEND > 0
        ? `  ${`send of ${SEND.toLocaleString('en')}, create → completed`.padEnd(40)} single ${sends.single?.ms} ms (${sends.single?.msgPerS} msg/s)   citus ${sends.citus ? `${sends.citus.ms} ms (${sends.citus.msgPerS} msg/s), ÷ single ${overheads.send} ×` : 'not run (--no-citus-send)'}`
        : '  send: not run (--send 0)';
    const summary = [
      `Citus benchmark — ${CONTACTS.toLocaleString('en')} contacts; a coordinator and two workers (ports ${CITUS_PORT}–${CITUS_PORT + 2}) vs one PostgreSQL, same machine (${os.cpus().length} cores), same run; medians [runs]`,
      line('import (POST /contacts/upload-csv)', steps.import, overheads.import),
      line(`segment count, not cached (×${REPEAT})`, steps.segmentCount, overheads.segmentCount),
      line('fan-out (the worker’s chunk statements)', steps.fanout, overheads.fanout),
      sendLine,
      `  segment members: single ${counts[0].join('/')}, citus ${counts[1].join('/')}; plain SQL ${segments.single.sqlCount} / ${segments.citus.sqlCount}`,
      checksLine(checks),
      `  result: ${pass ? 'PASS' : 'FAIL'} (it works and the results are equal; no speed target); load average (1 min) ${loadAtStart} → ${load()}`,
    ];
    process.stdout.write(`\n${summary.join('\n')}\n`);
    finishRun(file, started, pass, checks);
  } finally {
    await cleanup();
  }
}

runMain(main);
