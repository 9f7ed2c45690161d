/**
 * CSV import benchmark: generated contact CSVs uploaded through POST /contacts/upload-csv of a
 * real `herald serve` (default settings, connected as the ordinary role that owns its
 * database), each against a baseline timed in the same run, alternating: a raw `COPY` of the
 * same file into an equally indexed table, or (into a list that holds contacts) a bare SQL
 * merge — `COPY` into a staging table, then `INSERT … ON CONFLICT DO UPDATE` into an equally
 * indexed table holding the same contacts, freshly analysed. Scenarios:
 *
 *   empty     1,000,000 new contacts into an empty list                   target ≥ 75 % of raw COPY
 *   existing  1,000,000 rows into a list of 1,000,000 (analysed): half
 *             of them name a contact of the list with other names, half
 *             are new                                                     target ≥ 75 % of the bare merge
 *   stale     the same file, imported into a fresh database right after
 *             the 1,000,000 contacts of the list were imported, with no
 *             ANALYZE between (contacts never analysed)                  target ≥ 75 % of the bare merge
 *   twice     1,000,000 rows into a list they were imported into just
 *             before (the same file twice in a row: nothing changes)      target ≥ 75 % of raw COPY
 *   repeated  1,000,000 rows into an empty list, 15 % of them naming an
 *             address of an earlier row again (the last row wins)          target ≥ 60 % of raw COPY
 *   big       (--big) a ~200 MB file into an empty list, once             it imports; peak RSS
 *
 * `empty` and `twice` run as the issue 33 review measured them: each run on a first start (a new
 * `herald serve`, so the timed import of `empty`, and the untimed first import of `twice`, is
 * the process's first) into a contact type created just before it. The ratio is PASS/FAIL per
 * scenario against its target above; the 1-minute load average before and after each run is
 * printed beside its figures (compare only within one run).
 *
 * Every Herald run must also keep Herald's peak RSS ≤ 200 MB, show its progress while it runs
 * (GET /contacts/imports: `running` with growing rows_read) and end with the expected counts.
 * Prints best and median per scenario and PASS/FAIL per target, writes bench/out/import.json,
 * exits 1 if a target is missed.
 *
 *   npm run bench:import -- [--rows 1000000] [--repeat 3] [--scenarios empty,existing,stale,twice,repeated]
 *                           [--big] [--big-mb 200] [--repeat-share 0.15] [--db herald_bench_import]
 *                           [--no-build] [--no-wait] [--keep] [--cpu-prof]
 *                           [--herald-node-args=--trace-gc] [--herald-log file]   (diagnostics)
 *
 * Ratios are baseline time / Herald time of the runs measured back to back; PASS is judged on
 * the median of those ratios. Each timed run first waits (up to 3 min) for the machine's CPUs
 * to be idle (--no-wait: don't). Run it under `flock /tmp/herald-bench.lock` on a shared
 * machine. See bench/README.md for what is measured and the figures.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { CSV_COLUMNS, generateCsv, type CsvShape, type GeneratedCsv } from './lib/csv-gen';
import { build, client, createAccount, log, startHerald, type Account, type Herald } from './lib/herald';
import { connect, databaseUrl, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { median, processCpu, resetPeakRss, samplePhases, sampleRss, seconds, waitForQuiet, writeResult } from './lib/sample';
import { addContactType, addCustomFields, args } from './lib/setup';

const TARGET_RSS_MB = 200;
const DEFAULT_IMPORT_MAX_BYTES = 200 * 1024 * 1024;

const opts = args();
const ROWS = Number(opts.get('rows') ?? 1_000_000);
const REPEAT = Math.max(1, Number(opts.get('repeat') ?? 3));
const DB = String(opts.get('db') ?? 'herald_bench_import');
const REPEAT_SHARE = Number(opts.get('repeat-share') ?? 0.15);
const BIG_MB = opts.has('big-mb') ? Number(opts.get('big-mb')) : opts.has('big') ? 200 : 0;
const SCENARIOS = String(opts.get('scenarios') ?? 'empty,existing,stale,twice,repeated').split(',');

type Key = 'empty' | 'existing' | 'stale' | 'twice' | 'repeated' | 'big';

interface Scenario {
  key: Key;
  label: string;
  /** Herald ≥ target × the baseline's speed (median of the runs' ratios); undefined: not judged on speed. */
  target?: number;
  /** raw `COPY` of the file, or the bare SQL merge of it into a table holding the seed. */
  baseline: 'copy' | 'merge';
  csv: string;
  gen: GeneratedCsv;
  /** The list holds the seed (1,000,000 contacts, analysed) before each run, and so does the baseline table. */
  existing: boolean;
  /**
   * What happens just before the timed import: nothing (the list as `existing` says), the same
   * file imported once into the empty list (`same-file`), or a fresh database whose list gets the
   * seed's file imported first (`fresh-database`).
   */
  before?: 'same-file' | 'fresh-database';
  /** Each run starts a new `herald serve` and a new contact type first (the run's first import is the process's first). */
  firstStart?: boolean;
  runs: number;
  expect: { inserted: number; updated: number; unchanged: number; skipped: number; contacts: number };
}

interface RawRun {
  ms: number;
  rows: number;
  /** 1-minute load average before and after the baseline's timed part. */
  load?: [number, number];
}

interface HeraldRun {
  ms: number;
  /** CPU seconds of the Herald process and of its PostgreSQL backends during the run (who was busy). */
  cpuSec: { herald: number; postgres: number };
  phasesMs: Record<string, number | undefined>;
  /** When each phase was first seen, from the upload's start. */
  firstAtMs?: Record<string, number>;
  rss: { peakSampledMb: number; peakAtMs: number; vmHwmMb: number; samples: number; timeline: Array<[number, number]> };
  record: { status: string; rows_read: number; inserted: number; updated: number; unchanged: number; skipped: number; duration_ms: number };
  contacts: number;
  /** GET /contacts/imports while it ran: status and rows_read of each answer. */
  progress: Array<{ ms: number; status: string; rowsRead: number; bytesRead: number }>;
  checks: Record<string, boolean>;
  /** 1-minute load average at the start of the timed import and at its end. */
  load?: [number, number];
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;

/**
 * The baseline: COPY … (FORMAT csv) of the file into `bench_contacts (LIKE contacts INCLUDING
 * ALL)`: contacts' columns and indexes, no triggers, no validation or lookups; raw text
 * columns hold what the CSV has that contacts keep elsewhere (country as written, the custom
 * values). Where the file names addresses the table already holds (existing) or names one
 * twice (repeated), the email index is not unique (same columns), else COPY would fail.
 */
async function rawCopy(app: Client, admin: Client, s: Scenario, userId: number, typeId: number): Promise<RawRun> {
  await app.query('DROP TABLE IF EXISTS bench_contacts');
  await app.query('CREATE TABLE bench_contacts (LIKE contacts INCLUDING ALL)');
  if (s.existing || s.key === 'repeated') {
    const { rows } = await app.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'bench_contacts' AND indexdef LIKE '%UNIQUE%lower(%'`);
    await app.query(`DROP INDEX ${rows[0].indexname}`);
    await app.query('CREATE INDEX bench_contacts_email ON bench_contacts (contact_type_id, lower(email), user_id) WHERE deleted_at IS NULL');
  }
  await app.query('CREATE SEQUENCE bench_contacts_id_seq OWNED BY bench_contacts.id');
  await app.query(`ALTER TABLE bench_contacts
    ALTER COLUMN id SET DEFAULT nextval('bench_contacts_id_seq'),
    ALTER COLUMN user_id SET DEFAULT ${Number(userId)},
    ALTER COLUMN contact_type_id SET DEFAULT ${Number(typeId)},
    ADD COLUMN country text, ADD COLUMN plan text, ADD COLUMN score text`);
  if (s.existing) {
    await app.query('INSERT INTO bench_contacts SELECT * FROM bench_seed ORDER BY id');
    await app.query(`SELECT setval('bench_contacts_id_seq', (SELECT max(id) FROM bench_contacts))`);
    await app.query('VACUUM ANALYZE bench_contacts');
  }
  await admin.query('CHECKPOINT');
  const notNull = ['first_name', 'last_name', 'state', 'city', 'address_line1', 'address_line2', 'state_province_region', 'postal_code'];
  const started = Date.now();
  await pipeline(
    fs.createReadStream(s.csv, { highWaterMark: 256 * 1024 }),
    app.query(copyFrom(`COPY bench_contacts (${CSV_COLUMNS.join(', ')}) FROM STDIN WITH (FORMAT csv, HEADER true, FORCE_NOT_NULL (${notNull.join(', ')}))`)),
  );
  const ms = Date.now() - started;
  const { rows } = await app.query<{ n: number }>('SELECT count(*)::int AS n FROM bench_contacts');
  await app.query('DROP TABLE bench_contacts');
  return { ms, rows: rows[0].n - (s.existing ? s.expect.contacts - s.expect.inserted : 0) };
}

/**
 * The bare SQL merge a person would write in psql, into `bench_contacts (LIKE contacts
 * INCLUDING ALL)` holding the seed (its unique address index kept, `VACUUM ANALYZE`d, the best
 * case for it): `COPY` of the file into a temporary staging table, then one
 * `INSERT … SELECT … ON CONFLICT (contact_type_id, lower(email), user_id) DO UPDATE` of every
 * column. No validation, no lookups (the country stays text, as in rawCopy), no unchanged rows
 * left alone, no last-row-wins; the custom values go in as one jsonb merge.
 */
async function bareMerge(app: Client, admin: Client, s: Scenario, userId: number, typeId: number, fieldIds: Record<string, number>): Promise<RawRun> {
  await app.query('DROP TABLE IF EXISTS bench_contacts');
  await app.query('CREATE TABLE bench_contacts (LIKE contacts INCLUDING ALL)');
  await app.query('CREATE SEQUENCE bench_contacts_id_seq OWNED BY bench_contacts.id');
  await app.query(`ALTER TABLE bench_contacts ALTER COLUMN id SET DEFAULT nextval('bench_contacts_id_seq'), ADD COLUMN country text`);
  await app.query('INSERT INTO bench_contacts SELECT * FROM bench_seed ORDER BY id');
  await app.query(`SELECT setval('bench_contacts_id_seq', (SELECT max(id) FROM bench_contacts))`);
  await app.query('VACUUM ANALYZE bench_contacts');
  await admin.query('CHECKPOINT');
  const columns = CSV_COLUMNS.filter((c) => c !== 'plan' && c !== 'score');
  const raw = new Set(['email', 'alt_email', 'country']);
  const values = columns.map((c) => (raw.has(c) ? c : `coalesce(${c}, '')`));
  const custom = `jsonb_strip_nulls(jsonb_build_object('${Number(fieldIds.plan)}', plan, '${Number(fieldIds.score)}', score))`;
  const started = Date.now();
  await app.query('BEGIN');
  await app.query(`CREATE TEMP TABLE bench_staging (${CSV_COLUMNS.map((c) => `${c} text`).join(', ')}) ON COMMIT DROP`);
  await pipeline(fs.createReadStream(s.csv, { highWaterMark: 256 * 1024 }), app.query(copyFrom(`COPY bench_staging FROM STDIN WITH (FORMAT csv, HEADER true)`)));
  const merged = await app.query(`INSERT INTO bench_contacts AS c (user_id, contact_type_id, ${columns.join(', ')}, custom_fields)
    SELECT ${Number(userId)}, ${Number(typeId)}, ${values.join(', ')}, ${custom}
    FROM bench_staging
    ON CONFLICT (contact_type_id, lower(email), user_id) WHERE deleted_at IS NULL DO UPDATE SET
      ${columns.map((col) => `${col} = EXCLUDED.${col}`).join(', ')}, custom_fields = c.custom_fields || EXCLUDED.custom_fields, updated_at = now()`);
  await app.query('COMMIT');
  const ms = Date.now() - started;
  await app.query('DROP TABLE bench_contacts');
  return { ms, rows: merged.rowCount ?? 0 };
}

/** The list as the scenario wants it before a run: empty, or holding the seed; nothing dirty in shared buffers. */
async function resetList(app: Client, admin: Client, s: Scenario): Promise<void> {
  await app.query('TRUNCATE contacts CASCADE');
  if (s.existing) {
    await app.query('INSERT INTO contacts SELECT * FROM bench_seed ORDER BY id');
    await app.query('VACUUM ANALYZE contacts');
  }
  await admin.query('CHECKPOINT');
}

const PHASES: Array<[RegExp, string]> = [
  [/^\s*COPY \(SELECT id, email/i, 'loadAddresses'],
  [/^\s*COPY contacts /i, 'copyIntoContacts'],
  [/^\s*COPY contact_import_/i, 'copyIntoStaging'],
  [/^\s*ANALYZE contacts/, 'analyze'],
  [/WITH last_rows/, 'merge'],
];

/** The database's own name (BENCH_DB_SUFFIX included), as pg_stat_activity shows it. */
async function databaseName(c: Client): Promise<string> {
  return (await c.query<{ d: string }>('SELECT current_database() AS d')).rows[0].d;
}

/** CPU seconds so far of Herald's backends on the benchmark database (the pool keeps them for the run). */
async function backendsCpu(admin: Client, db: string): Promise<number> {
  const { rows } = await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = 'herald'`, [db]);
  return rows.reduce((sum, r) => sum + processCpu(r.pid), 0);
}

/** A running Herald with its account's list, and connections to its database (as Herald's role and as the administrator). */
interface Target {
  account: Account;
  herald: Herald;
  api: ReturnType<typeof client>;
  app: Client;
  admin: Client;
  db: string;
  typeId: number;
}

/** --herald-log: everything a `herald serve` of this run writes, appended to that file. */
function logOutput(h: Herald): Herald {
  const file = opts.get('herald-log');
  if (typeof file === 'string') {
    const out = fs.createWriteStream(file, { flags: 'a' });
    h.child.stdout!.pipe(out);
    h.child.stderr!.pipe(out);
  }
  return h;
}

/**
 * A first start: the running `herald serve` stopped and a new one started on the same database,
 * and a new contact type for the next import (as a new installation's first import is).
 */
async function firstStart(t: Target, url: string, dataDir: string, env: Record<string, string>, nodeArgs: string[], n: number): Promise<void> {
  await t.herald.stop();
  t.herald = logOutput(await startHerald({ databaseUrl: url, dataDir, env, nodeArgs }));
  t.api = client(t.herald.baseUrl, t.account);
  t.typeId = await addContactType(t.api, `Bench import, first start #${n}`);
}

/** One upload, timed from the request's start to the answer, with memory, phases and progress sampled meanwhile. */
async function heraldImport(t: Target, s: Scenario): Promise<HeraldRun> {
  const { herald, api, app, admin, typeId } = t;
  const hwmReset = resetPeakRss(herald.pid);
  const cpu0 = { herald: processCpu(herald.pid), postgres: await backendsCpu(admin, t.db) };
  const form = new FormData();
  form.append('contact_type_id', String(typeId));
  form.append('file', await fs.openAsBlob(s.csv, { type: 'text/csv' }), path.basename(s.csv));
  const load0 = os.loadavg()[0];
  const t0 = Date.now();
  const rss = sampleRss(herald.pid, 100);
  const phases = samplePhases(app, t.db, t0, (q) => PHASES.find(([re]) => re.test(q))?.[1]);
  const progress: HeraldRun['progress'] = [];
  let answered = false;
  const polling = (async () => {
    while (!answered) {
      await new Promise((r) => setTimeout(r, 250));
      const res = (await api.get('/contacts/imports?page=1&per_page=1').catch(() => undefined)) as
        | { message: { imports: Array<{ status: string; rows_read: number; bytes_read: number }> } }
        | undefined;
      const rec = res?.message.imports[0];
      if (rec && !answered) progress.push({ ms: Date.now() - t0, status: rec.status, rowsRead: rec.rows_read, bytesRead: rec.bytes_read });
    }
  })();
  await api.multipart('/contacts/upload-csv', form);
  const ms = Date.now() - t0;
  answered = true;
  const cpuSec = { herald: processCpu(herald.pid) - cpu0.herald, postgres: (await backendsCpu(admin, t.db)) - cpu0.postgres };
  await polling;
  const mem = rss.stop();
  if (!hwmReset) mem.vmHwmMb = 0;
  const p = phases.stop();
  const span = (name: string) => (p[name] ? p[name].lastMs - p[name].firstMs + 100 : undefined);
  const record = ((await api.get('/contacts/imports?page=1&per_page=1')) as { message: { imports: HeraldRun['record'][] } }).message.imports[0];
  const contacts = (await app.query<{ n: number }>('SELECT count(*)::int AS n FROM contacts WHERE contact_type_id = $1 AND deleted_at IS NULL', [typeId])).rows[0].n;
  const running = progress.filter((x) => x.status === 'running' && x.rowsRead > 0);
  const checks: Record<string, boolean> = {
    counts:
      record.status === 'completed' &&
      record.inserted === s.expect.inserted &&
      record.updated === s.expect.updated &&
      record.unchanged === s.expect.unchanged &&
      record.skipped === s.expect.skipped &&
      record.rows_read === s.gen.rows,
    contacts: contacts === s.expect.contacts,
    progress: running.length >= 2 && running[running.length - 1].rowsRead > running[0].rowsRead,
  };
  if (s.existing && s.before !== 'fresh-database') {
    const { rows } = await app.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts c JOIN bench_seed s ON s.id = c.id WHERE (c.first_name, c.last_name) IS DISTINCT FROM (s.first_name, s.last_name)',
    );
    checks.renamed = rows[0].n === s.gen.renamed;
  }
  return {
    ms,
    load: [load0, os.loadavg()[0]],
    cpuSec,
    phasesMs: { uploadAndSetup: (p.loadAddresses ?? p.copyIntoContacts ?? p.copyIntoStaging)?.firstMs, ...Object.fromEntries(PHASES.map(([, n]) => [n, span(n)])) },
    firstAtMs: Object.fromEntries(Object.entries(p).map(([k, v]) => [k, v.firstMs])),
    rss: mem,
    record,
    contacts,
    progress,
    checks,
  };
}

async function makeScenarios(dir: string): Promise<Scenario[]> {
  const out: Scenario[] = [];
  const gen = async (key: Key, rows: number, shape: CsvShape) => {
    const file = path.join(dir, `${key}.csv`);
    log(`generating ${key}: ${rows.toLocaleString('en')} rows → ${file}`);
    const g = await generateCsv(file, rows, shape);
    log(`  ${(g.bytes / 1e6).toFixed(1)} MB in ${seconds(g.ms)} s`);
    return { file, g };
  };
  const half = Math.floor(ROWS / 2);
  const wants = (...keys: Key[]) => keys.some((k) => SCENARIOS.includes(k));
  // The seed's file: the empty scenario's, imported once to fill the list of existing/stale, and twice by twice.
  if (wants('empty', 'existing', 'stale', 'twice')) {
    const { file, g } = await gen('empty', ROWS, {});
    const fresh = { csv: file, gen: g, existing: false, runs: REPEAT, baseline: 'copy' as const };
    if (wants('empty'))
      out.push({ ...fresh, key: 'empty', label: 'into an empty list, a new contact type, on a first start', target: 0.75, firstStart: true, expect: { inserted: ROWS, updated: 0, unchanged: 0, skipped: 0, contacts: ROWS } });
    if (wants('twice')) {
      out.push({
        ...fresh,
        key: 'twice',
        label: 'the same file again, right after it was imported into a new contact type on a first start (nothing changes)',
        target: 0.75,
        before: 'same-file',
        firstStart: true,
        expect: { inserted: 0, updated: 0, unchanged: ROWS, skipped: 0, contacts: ROWS },
      });
    }
  }
  if (wants('existing', 'stale')) {
    const { file, g } = await gen('existing', ROWS, { from: half + 1, renameUpTo: ROWS });
    const halfMatching = { csv: file, gen: g, existing: true, runs: REPEAT, baseline: 'merge' as const, target: 0.75, expect: { inserted: ROWS - half, updated: half, unchanged: 0, skipped: 0, contacts: ROWS + (ROWS - half) } };
    if (wants('existing')) out.push({ ...halfMatching, key: 'existing', label: `into a list of ${ROWS.toLocaleString('en')} (analysed), half the rows matching (other names)` });
    if (wants('stale')) {
      out.push({
        ...halfMatching,
        key: 'stale',
        label: `the same, into a fresh database right after its list of ${ROWS.toLocaleString('en')} was imported (no ANALYZE between)`,
        before: 'fresh-database',
      });
    }
  }
  if (wants('repeated')) {
    const { file, g } = await gen('repeated', ROWS, { repeat: REPEAT_SHARE });
    const distinct = ROWS - g.repeated;
    out.push({
      key: 'repeated',
      label: `into an empty list, ${pct(g.repeated / ROWS)} of the rows repeating an address`,
      target: 0.6,
      baseline: 'copy',
      csv: file,
      gen: g,
      existing: false,
      runs: REPEAT,
      expect: { inserted: distinct, updated: 0, unchanged: 0, skipped: g.repeated, contacts: distinct },
    });
  }
  if (BIG_MB > 0) {
    const perRow = 118.8;
    const rows = Math.floor((BIG_MB * 1e6) / perRow);
    const { file, g } = await gen('big', rows, { seed: 7 });
    out.push({ key: 'big', label: `a ${(g.bytes / 1e6).toFixed(0)} MB file into an empty list`, baseline: 'copy', csv: file, gen: g, existing: false, runs: 1, expect: { inserted: rows, updated: 0, unchanged: 0, skipped: 0, contacts: rows } });
  }
  return out;
}

/** The empty scenario's file into an empty list, as the first of two imports in a row (not timed). */
function seedScenario(dir: string): Scenario {
  return {
    key: 'empty',
    label: 'seed',
    baseline: 'copy',
    csv: path.join(dir, 'empty.csv'),
    gen: { bytes: 0, ms: 0, rows: ROWS, repeated: 0, renamed: 0 },
    existing: false,
    runs: 1,
    expect: { inserted: ROWS, updated: 0, unchanged: 0, skipped: 0, contacts: ROWS },
  };
}

/** The list of the existing scenario: the empty scenario's file imported once by Herald, kept as `bench_seed`. */
async function ensureSeed(t: Target, dir: string) {
  if ((await t.app.query(`SELECT to_regclass('bench_seed') AS t`)).rows[0].t) return;
  log('seeding the existing list: importing the empty scenario’s file once (not timed)');
  const seed = seedScenario(dir);
  await resetList(t.app, t.admin, seed);
  await heraldImport(t, seed);
  await t.app.query('CREATE TABLE bench_seed AS SELECT * FROM contacts');
}

/** What the planner knows of contacts just before a timed import (stale: never analysed, or changed since). */
async function contactsStatistics(app: Client) {
  const { rows } = await app.query<{ reltuples: number; n_mod_since_analyze: number; analysed: boolean }>(
    `SELECT c.reltuples::float8 AS reltuples, s.n_mod_since_analyze::float8 AS n_mod_since_analyze, (s.last_analyze IS NOT NULL OR s.last_autoanalyze IS NOT NULL) AS analysed
     FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = 'contacts'::regclass`,
  );
  return rows[0];
}

/**
 * The stale scenario's run: a fresh database (migrated by `herald account create`), its own
 * `herald serve`, the list's 1,000,000 contacts imported, then at once the timed import, with
 * no ANALYZE between (autovacuum's, if it came first, is reported: the run is then not stale).
 */
async function staleRun(s: Scenario, dir: string, env: Record<string, string>, nodeArgs: string[]): Promise<HeraldRun> {
  const name = `${DB}_stale`;
  const url = await recreateDatabase(name);
  const account = await createAccount(url, 'Bench stale');
  const herald = await startHerald({ databaseUrl: url, dataDir: path.join(dir, 'data-stale'), env, nodeArgs });
  const app = await connect(url);
  const admin = await connect(databaseUrl(name));
  try {
    const api = client(herald.baseUrl, account);
    const typeId = await addContactType(api, 'Bench stale');
    await addCustomFields(api, [
      ['plan', 'text'],
      ['score', 'number'],
    ]);
    const t: Target = { account, herald, api, app, admin, db: await databaseName(app), typeId };
    const first = await heraldImport(t, seedScenario(dir));
    const stats = await contactsStatistics(app);
    log(`  stale: first import ${seconds(first.ms)} s; contacts before the second: ${JSON.stringify(stats)}`);
    const run = await heraldImport(t, s);
    run.checks.staleBefore = !stats.analysed;
    return run;
  } finally {
    await app.end();
    await admin.end();
    await herald.stop();
    await dropDatabase(name).catch((e) => log(`could not drop ${name}: ${e}`));
  }
}

interface ScenarioResult {
  key: Key;
  label: string;
  baseline: Scenario['baseline'];
  csv: { rows: number; bytes: number; repeated: number; renamed: number };
  raw: RawRun[];
  herald: HeraldRun[];
  ratios: number[];
  bestRatio: number;
  medianRatio: number;
  target?: number;
  peakRssMb: number;
  pass: Record<string, boolean>;
}

function summarize(s: Scenario, raw: RawRun[], herald: HeraldRun[]): ScenarioResult {
  const ratios = herald.map((h, i) => (raw[i] ? raw[i].ms / h.ms : NaN)).filter((r) => !Number.isNaN(r));
  const peakRssMb = Math.max(...herald.map((h) => Math.max(h.rss.peakSampledMb, h.rss.vmHwmMb)));
  const checks = Object.keys(herald[0].checks);
  const pass: Record<string, boolean> = { peakRss: peakRssMb <= TARGET_RSS_MB };
  if (s.target !== undefined) pass.speed = median(ratios) >= s.target;
  for (const c of checks) pass[c] = herald.every((h) => h.checks[c]);
  pass.rawRows = raw.every((r) => r.rows === s.gen.rows);
  return {
    key: s.key,
    label: s.label,
    baseline: s.baseline,
    csv: { rows: s.gen.rows, bytes: s.gen.bytes, repeated: s.gen.repeated, renamed: s.gen.renamed },
    raw,
    herald,
    ratios,
    bestRatio: Math.max(...ratios),
    medianRatio: median(ratios),
    target: s.target,
    peakRssMb,
    pass,
  };
}

function report(results: ScenarioResult[], pg: Record<string, string>, load: number[]): string {
  const ok = (b: boolean) => (b ? 'PASS' : 'FAIL');
  const all = (xs: number[]) => xs.map((x) => seconds(x).toFixed(1)).join(', ');
  const lines = ['', `CSV import — PostgreSQL ${pg.server_version}, ${os.cpus().length} cores, Herald with default settings as an ordinary role; best / median of the runs`];
  for (const r of results) {
    const rawMs = r.raw.map((x) => x.ms);
    const herMs = r.herald.map((x) => x.ms);
    lines.push(`  ${r.key}: ${r.label} — ${r.csv.rows.toLocaleString('en')} rows, ${(r.csv.bytes / 1e6).toFixed(1)} MB`);
    const baseline = r.baseline === 'merge' ? 'bare SQL merge' : 'raw COPY      ';
    if (rawMs.length) lines.push(`    ${baseline}        ${seconds(Math.min(...rawMs)).toFixed(1)} / ${seconds(median(rawMs)).toFixed(1)} s   (runs: ${all(rawMs)} s)`);
    lines.push(`    Herald upload-csv     ${seconds(Math.min(...herMs)).toFixed(1)} / ${seconds(median(herMs)).toFixed(1)} s   (runs: ${all(herMs)} s; ${Math.round(r.csv.rows / (Math.min(...herMs) / 1000)).toLocaleString('en')} rows/s at best)`);
    const best = r.herald.reduce((a, b) => (b.ms < a.ms ? b : a));
    lines.push(
      `      phases of the best run ≈ ${Object.entries(best.phasesMs)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k} ${seconds(v!)} s`)
        .join(', ')}; CPU: Herald ${best.cpuSec.herald.toFixed(1)} s, its PostgreSQL backends ${best.cpuSec.postgres.toFixed(1)} s`,
    );
    if (r.ratios.length) {
      const verdict = r.target !== undefined ? `   target ≥ ${pct(r.target)}   ${ok(r.pass.speed)}` : '';
      lines.push(`    Herald / baseline     ${pct(r.bestRatio)} / ${pct(r.medianRatio)}   (runs: ${r.ratios.map(pct).join(', ')})${verdict}`);
    }
    const loads = (xs: Array<{ load?: [number, number] }>) => xs.map((x) => (x.load ? x.load.map((l) => l.toFixed(2)).join('→') : '?')).join(', ');
    lines.push(`    load (1 min) per run  baseline ${loads(r.raw)}; Herald ${loads(r.herald)}`);
    const peaks = r.herald.map((h) => `${Math.max(h.rss.peakSampledMb, h.rss.vmHwmMb)} MB at ${seconds(h.rss.peakAtMs).toFixed(1)} s`).join(', ');
    lines.push(`    peak RSS (herald)     ${r.peakRssMb} MB   target ≤ ${TARGET_RSS_MB} MB   ${ok(r.pass.peakRss)}   (runs: ${peaks}; time of the sampled peak)`);
    const rec = best.record;
    lines.push(`    counts                read ${rec.rows_read} inserted ${rec.inserted} updated ${rec.updated} unchanged ${rec.unchanged} skipped ${rec.skipped}   ${ok(r.pass.counts && r.pass.contacts && (r.pass.renamed ?? true) && r.pass.rawRows)}`);
    const prog = best.progress.filter((p) => p.status === 'running');
    lines.push(`    progress while running ${prog.map((p) => p.rowsRead).filter((n, i, xs) => i === 0 || n !== xs[i - 1]).slice(0, 8).join(' → ')} …   ${ok(r.pass.progress)}`);
  }
  lines.push(`  load average (1 min) ${load.map((x) => x.toFixed(1)).join(' → ')}`, '');
  return lines.join('\n');
}

async function main() {
  const started = Date.now();
  const load = [os.loadavg()[0]];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-import-'));
  let herald: Herald | undefined;
  try {
    const scenarios = await makeScenarios(tmp);
    if (!opts.has('no-build')) build();
    const url = await recreateDatabase(DB);
    log(`database ${DB} created; migrating and seeding through \`herald account create\``);
    const account = await createAccount(url, 'Bench import');
    const env: Record<string, string> = {};
    // Default settings; only a file past the default upload limit (a bigger --big-mb) raises it.
    const largest = Math.max(...scenarios.map((s) => s.gen.bytes));
    if (largest > DEFAULT_IMPORT_MAX_BYTES) env.IMPORT_MAX_BYTES = String(largest + 1024 * 1024);
    const extra = typeof opts.get('herald-node-args') === 'string' ? String(opts.get('herald-node-args')).split(/\s+/).filter(Boolean) : [];
    const nodeArgs = [...(opts.has('cpu-prof') ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve('bench/out/cpu-prof')}`] : []), ...extra];
    herald = logOutput(await startHerald({ databaseUrl: url, dataDir: path.join(tmp, 'data'), env, nodeArgs }));
    const api = client(herald.baseUrl, account);
    const typeId = await addContactType(api, 'Bench import');
    const fieldIds = await addCustomFields(api, [
      ['plan', 'text'],
      ['score', 'number'],
    ]);
    const app = await connect(url);
    const admin = await connect(databaseUrl(DB));
    const pg = await serverInfo(admin);
    const busy: number[] = [];
    const quiet = async () => {
      if (opts.has('no-wait')) return;
      busy.push(await waitForQuiet());
      if (busy[busy.length - 1] > 0.2) log(`the machine stayed busy (${(busy[busy.length - 1] * 100).toFixed(0)} % CPU): figures are disturbed`);
    };
    const raws = new Map<Key, RawRun[]>(scenarios.map((s) => [s.key, []]));
    const runs = new Map<Key, HeraldRun[]>(scenarios.map((s) => [s.key, []]));
    const target: Target = { account, herald, api, app, admin, db: await databaseName(app), typeId };
    let starts = 0;
    if (scenarios.some((s) => s.existing)) await ensureSeed(target, tmp);
    // The baseline and Herald alternate, scenario by scenario, so a busy moment hits both alike.
    for (let r = 1; r <= REPEAT; r += 1) {
      for (const s of scenarios.filter((x) => x.runs >= r)) {
        await resetList(app, admin, s);
        await quiet();
        const load0 = os.loadavg()[0];
        const raw = s.baseline === 'merge' ? await bareMerge(app, admin, s, account.id, typeId, fieldIds) : await rawCopy(app, admin, s, account.id, typeId);
        raw.load = [load0, os.loadavg()[0]];
        raws.get(s.key)!.push(raw);
        log(`[${r}/${s.runs}] ${s.key}: ${s.baseline === 'merge' ? 'bare SQL merge' : 'raw COPY'} ${seconds(raw.ms)} s, load ${raw.load.map((x) => x.toFixed(2)).join(' → ')}`);
        let run: HeraldRun;
        if (s.before === 'fresh-database') {
          await quiet();
          run = await staleRun(s, tmp, env, nodeArgs);
        } else {
          await resetList(app, admin, s);
          if (s.firstStart) {
            await firstStart(target, url, path.join(tmp, 'data'), env, nodeArgs, (starts += 1));
            herald = target.herald;
          }
          // The first of two imports in a row, straight before the timed one (no ANALYZE between).
          if (s.before === 'same-file') await heraldImport(target, seedScenario(tmp));
          await quiet();
          run = await heraldImport(target, s);
        }
        runs.get(s.key)!.push(run);
        // The other scenarios' list (and bench_seed's contacts) stay on the first contact type.
        target.typeId = typeId;
        log(
          `[${r}/${s.runs}] ${s.key}: Herald ${seconds(run.ms)} s (${pct(raw.ms / run.ms)} of the baseline), peak RSS ${Math.max(run.rss.peakSampledMb, run.rss.vmHwmMb)} MB, ` +
            `load ${run.load!.map((x) => x.toFixed(2)).join(' → ')}, checks ${JSON.stringify(run.checks)}`,
        );
      }
    }
    await app.end();
    await admin.end();
    load.push(os.loadavg()[0]);
    const results = scenarios.map((s) => summarize(s, raws.get(s.key)!, runs.get(s.key)!));
    const result = {
      benchmark: 'import',
      date: new Date().toISOString(),
      machine: { cpus: os.cpus().length, memGb: Math.round(os.totalmem() / 2 ** 30), node: process.version, loadAvg1m: load, cpuBusyBeforeRuns: busy },
      postgres: pg,
      settings: { heraldEnv: env, role: 'ordinary (owner of its database)', repeat: REPEAT, repeatShare: REPEAT_SHARE },
      scenarios: results,
      pass: Object.fromEntries(results.flatMap((r) => Object.entries(r.pass).map(([k, v]) => [`${r.key}.${k}`, v]))),
      totalRunSec: seconds(Date.now() - started),
    };
    const file = writeResult('import', result);
    process.stdout.write(report(results, pg, load) + `  result: ${path.relative(process.cwd(), file)} (total ${seconds(Date.now() - started).toFixed(0)} s)\n`);
    if (!Object.values(result.pass).every(Boolean)) process.exitCode = 1;
  } finally {
    await herald?.stop();
    if (!opts.has('keep')) {
      await dropDatabase(DB).catch((e) => log(`could not drop ${DB}: ${e}`));
      fs.rmSync(tmp, { recursive: true, force: true });
    } else {
      log(`kept database ${DB} and ${tmp}`);
    }
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
