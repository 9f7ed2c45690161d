/**
 * Segment benchmark: 1,000,000 contacts of one contact type, a segment of three rules (text
 * `contains` on a reserved field, custom number `is greater than`, custom datetime `is
 * after`), timed through the HTTP API of a real `herald serve`: saving it, its member count
 * (cold, then cached) and the first page of members. Two extra segments show the edges: one
 * with almost no members (the first page must scan everything) and one on the country.
 * Prints a summary and writes bench/out/segment.json.
 *
 *   npx tsx bench/segment.ts [--rows 1000000] [--repeat 3] [--no-build] [--no-wait] [--keep] [--explain]
 *
 * Each timed run waits (up to 3 min) for the machine's CPUs to be idle first (--no-wait: don't).
 *
 * See bench/README.md for what is measured and the figures.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import type { Client } from 'pg';
import { compileRules, parseRules, type RuleField } from '../src/contacts/segment-rules';
import { build, client, createAccount, log, startHerald, type Herald } from './lib/herald';
import { connect, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { median, seconds, waitForQuiet, writeResult } from './lib/sample';
import { addContactType, addCustomFields, args } from './lib/setup';

const TARGET_MS = 2000;
const opts = args();
const ROWS = Number(opts.get('rows') ?? 1_000_000);
const REPEAT = Math.max(1, Number(opts.get('repeat') ?? 3));
const DB = String(opts.get('db') ?? 'herald_bench_segment');

interface Scenario {
  key: string;
  label: string;
  /** Judged against the target (the segment); the others are extra evidence. */
  judged: boolean;
  rules: (f: Record<string, number>) => { select_field: number[]; select_operator: string[]; value: string[] };
  /** The same rules in plain SQL, to cross-check the count. $1 type, $2 score id, $3 last_seen id. */
  sql: string;
}

const SCENARIOS: Scenario[] = [
  {
    key: 'main',
    label: 'email contains "smith" AND score > 500 AND last_seen after 2025-06-01',
    judged: true,
    rules: (f) => ({ select_field: [f.email, f.score, f.last_seen], select_operator: ['contains', 'is greater than', 'is after'], value: ['smith', '500', '2025-06-01T00:00'] }),
    sql: `email ILIKE '%smith%' AND (custom_fields ->> $2)::numeric > 500 AND (custom_fields ->> $3)::timestamp > '2025-06-01T00:00'`,
  },
  {
    key: 'sparse',
    label: 'email contains "smith" AND score > 990 AND last_seen after 2026-05-01 (almost nobody)',
    judged: false,
    rules: (f) => ({ select_field: [f.email, f.score, f.last_seen], select_operator: ['contains', 'is greater than', 'is after'], value: ['smith', '990', '2026-05-01T00:00'] }),
    sql: `email ILIKE '%smith%' AND (custom_fields ->> $2)::numeric > 990 AND (custom_fields ->> $3)::timestamp > '2026-05-01T00:00'`,
  },
  {
    key: 'country',
    label: 'country is "france" AND score > 500',
    judged: false,
    rules: (f) => ({ select_field: [f.country, f.score], select_operator: ['is', 'is greater than'], value: ['france', '500'] }),
    sql: `country_id = (SELECT id FROM countries WHERE lower(name) = 'france') AND (custom_fields ->> $2)::numeric > 500 AND $3::text IS NOT NULL`,
  },
];

/**
 * A million contacts in one statement (setup, not measured): names, addresses and countries
 * drawn like bench/lib/csv-gen.ts does, custom values as the API stores them (strings keyed by
 * field id; datetimes `YYYY-MM-DDTHH:MM`); one in ten without a score or a last-seen date.
 */
async function loadContacts(c: Client, userId: number, typeId: number, f: Record<string, number>): Promise<number> {
  const started = Date.now();
  const first = "'{James,Mary,John,Patricia,Robert,Jennifer,Michael,Linda,William,Elizabeth,David,Barbara,Richard,Susan,Joseph,Jessica,Thomas,Sarah,Charles,Karen,Daniel,Lisa,Matthew,Nancy,Anthony,Betty,Mark,Sandra,Paul,Emily,Zoë,José}'::text[]";
  const last = "'{Smith,Johnson,Williams,Brown,Jones,Garcia,Miller,Davis,Rodriguez,Martinez,Hernandez,Lopez,Gonzalez,Wilson,Anderson,Thomas,Taylor,Moore,Jackson,Martin,Lee,Perez,Thompson,White,Harris,Sanchez,Clark,Ramirez,Lewis,Robinson,Walker,Young,Allen,King,Wright,Scott,Torres,Nguyen,Hill,Flores,Green,Adams,Nelson,Baker,Hall,Rivera,Campbell,Mitchell,Carter,Roberts,Gomez,Phillips,Evans,Turner,Diaz,Parker,Cruz,Edwards,Collins,Reyes,Stewart,Morris,Morales,Murphy,Cook,Rogers,Gutierrez,Ortiz,Morgan,Cooper,Peterson,Bailey,Reed,Kelly,Howard,Ramos,Kim,Cox,Ward,Richardson,Watson,Brooks,Chavez,Wood,James,Bennett,Gray,Mendoza,Ruiz,Hughes,Price,Alvarez,Castillo,Sanders,Patel,Myers,Long,Ross,Foster,Müller}'::text[]";
  const domains = "'{gmail.com,gmail.com,gmail.com,yahoo.com,outlook.com,hotmail.com,icloud.com,proton.me,example.com,acme-corp.io}'::text[]";
  const cities = "'{London,Paris,Berlin,Madrid,Rome,New York,Chicago,Toronto,Sydney,Mumbai,Amsterdam,Dublin,Lisbon,Vienna,Prague,Warsaw,Oslo,Austin,Boston,Seattle}'::text[]";
  const plans = "'{free,free,free,free,starter,starter,pro,pro,pro,enterprise}'::text[]";
  await c.query(`SELECT setseed(0.20261122)`);
  await c.query(
    `INSERT INTO contacts (user_id, contact_type_id, first_name, last_name, email, country_id, city, state, postal_code, custom_fields)
     SELECT $1, $2, fn, ln,
            lower(fn || '.' || ln) || i || '@' || (${domains})[1 + floor(random() * 10)::int],
            1 + floor(random() * 240)::int,
            (${cities})[1 + floor(random() * 20)::int], '', (10000 + floor(random() * 89999))::text,
            jsonb_strip_nulls(jsonb_build_object(
              $3::text, (${plans})[1 + floor(random() * 10)::int],
              $4::text, CASE WHEN random() < 0.9 THEN CASE WHEN random() < 0.8 THEN floor(random() * 1000)::text ELSE round((random() * 1000)::numeric, 1)::text END END,
              $5::text, CASE WHEN random() < 0.9 THEN to_char(timestamp '2024-01-01' + random() * interval '900 days', 'YYYY-MM-DD"T"HH24:MI') END
            ))
     FROM (
       SELECT i, (${first})[1 + floor(random() * 32)::int] AS fn, (${last})[1 + floor(random() * 100)::int] AS ln
       FROM generate_series(1, $6::int) AS i
     ) g`,
    [userId, typeId, String(f.plan), String(f.score), String(f.last_seen), ROWS],
  );
  // What autovacuum would have done by the time anyone builds a segment on these contacts.
  await c.query('VACUUM (ANALYZE) contacts');
  return Date.now() - started;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, value };
}

/** The plans PostgreSQL picks for a scenario's count and first page (`--explain`). */
async function explain(c: Client, userId: number, typeId: number, f: Record<string, number>, scenario: Scenario) {
  // The SQL the service builds (segments.sql.ts), compiled from the rules as stored.
  const knex = knexFactory({ client: 'pg' });
  const fields = new Map<number, RuleField>();
  const { rows } = await c.query<RuleField>(`SELECT id, field_name, field_type, is_reserved FROM fields WHERE user_id IS NULL OR user_id = $1`, [userId]);
  for (const r of rows) fields.set(r.id, r);
  const r = scenario.rules(f);
  const parsed = parseRules({ select_field: r.select_field.map(String), select_operator: r.select_operator, value: r.value }, fields);
  if (!('rules' in parsed)) throw new Error(`invalid rules: ${JSON.stringify(parsed.errors)}`);
  const where = compileRules(knex, parsed.rules, 'and').toSQL().toNative();
  const base = `FROM contacts c WHERE c.user_id = ${Number(userId)} AND c.contact_type_id = ${Number(typeId)} AND c.deleted_at IS NULL AND ${where.sql}`;
  const out: Record<string, string> = {};
  for (const [name, sql] of [
    ['count', `SELECT count(*) ${base}`],
    ['firstPage', `SELECT c.id ${base} ORDER BY c.id DESC LIMIT 50`],
  ]) {
    const plan = await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, where.bindings as unknown[]);
    out[name] = plan.rows.map((x: Record<string, string>) => x['QUERY PLAN']).join('\n');
  }
  await knex.destroy();
  return out;
}


async function main() {
  const started = Date.now();
  const load = [os.loadavg()[0]];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-segment-'));
  let herald: Herald | undefined;
  let admin: Client | undefined;
  try {
    if (!opts.has('no-build')) build();
    const url = await recreateDatabase(DB);
    log(`database ${DB} created; migrating and seeding through \`herald account create\``);
    const account = await createAccount(url, 'Bench segment');
    herald = await startHerald({ databaseUrl: url, dataDir: path.join(tmp, 'data') });
    const api = client(herald.baseUrl, account);
    const typeId = await addContactType(api, 'Bench segment');
    const fields = await addCustomFields(api, [
      ['plan', 'text'],
      ['score', 'number'],
      ['last_seen', 'datetime-local'],
    ]);
    admin = await connect(url);
    const pg = await serverInfo(admin);
    log(`loading ${ROWS.toLocaleString('en')} contacts (INSERT … SELECT generate_series, then VACUUM ANALYZE)`);
    const loadMs = await loadContacts(admin, account.id, typeId, fields);
    log(`loaded in ${seconds(loadMs)} s`);
    const indexes = (await admin.query<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE tablename = 'contacts' ORDER BY indexname`)).rows.map((r) => r.indexdef);

    type Run = { saveMs: number; detailsColdMs: number; detailsWarmMs: number; firstPageMs: number; firstPageColdMs: number; count: number; pageRows: number };
    const keys = ['saveMs', 'detailsColdMs', 'detailsWarmMs', 'firstPageMs', 'firstPageColdMs'] as const;
    type Key = (typeof keys)[number];
    const stat = (runs: Run[], f: (xs: number[]) => number) => Object.fromEntries(keys.map((k) => [k, Math.round(f(runs.map((x) => x[k])) * 10) / 10])) as Record<Key, number>;
    const results = [];
    const busy: number[] = [];
    for (const scenario of SCENARIOS) {
      const rules = scenario.rules(fields);
      const runs: Run[] = [];
      for (let r = 1; r <= REPEAT; r += 1) {
        if (!opts.has('no-wait')) busy.push(await waitForQuiet());
        const name = `${scenario.key} ${r}`;
        const save = await timed(() => api.form('/segment/save', { segment_name: name, contact_type_id: typeId, ...rules }));
        const segmentId = (await admin.query<{ id: number }>(`SELECT id FROM segments WHERE user_id = $1 AND segment_name = $2`, [account.id, name])).rows[0].id;
        const cold = await timed(() => api.get(`/segment/details?segment_id=${segmentId}`));
        const warm = await timed(() => api.get(`/segment/details?segment_id=${segmentId}`));
        const page = await timed(() => api.get(`/segment/email/list?segment_id=${segmentId}&page=1&per_page=50`));
        // The first page when the count is not cached (any contact write of the type
        // invalidates it): the page and its `pagination.total` both computed.
        await admin.query('UPDATE contact_types SET contacts_version = contacts_version + 1 WHERE id = $1', [typeId]);
        const pageCold = await timed(() => api.get(`/segment/email/list?segment_id=${segmentId}&page=1&per_page=50`));
        const count = (cold.value.message as { segment: { segment_emails_count: number } }).segment.segment_emails_count;
        const warmCount = (warm.value.message as { segment: { segment_emails_count: number } }).segment.segment_emails_count;
        const listed = page.value.message as { contactEmails: unknown[]; pagination: { total: number } };
        const listedCold = pageCold.value.message as { pagination: { total: number } };
        if (warmCount !== count || listed.pagination.total !== count || listedCold.pagination.total !== count) {
          throw new Error(`${scenario.key}: counts disagree: ${count} / ${warmCount} / ${listed.pagination.total} / ${listedCold.pagination.total}`);
        }
        runs.push({ saveMs: save.ms, detailsColdMs: cold.ms, detailsWarmMs: warm.ms, firstPageMs: page.ms, firstPageColdMs: pageCold.ms, count, pageRows: listed.contactEmails.length });
        log(
          `${scenario.key} [${r}/${REPEAT}] save ${save.ms.toFixed(0)} ms, details cold ${cold.ms.toFixed(0)} / cached ${warm.ms.toFixed(0)} ms, ` +
            `first page ${page.ms.toFixed(0)} ms (uncached count ${pageCold.ms.toFixed(0)} ms), ${count} members`,
        );
      }
      const check = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM contacts WHERE contact_type_id = $1 AND deleted_at IS NULL AND ${scenario.sql}`,
        [typeId, String(fields.score), String(fields.last_seen)],
      );
      const worst = stat(runs, (xs) => Math.max(...xs));
      results.push({
        key: scenario.key,
        label: scenario.label,
        judged: scenario.judged,
        rules,
        members: runs[0].count,
        medianMs: stat(runs, median),
        bestMs: stat(runs, (xs) => Math.min(...xs)),
        worstMs: worst,
        runs,
        pass: {
          ...Object.fromEntries(keys.map((k) => [k, worst[k] <= TARGET_MS])),
          countMatchesSql: runs.every((x) => x.count === check.rows[0].n),
          firstPageFull: runs.every((x) => x.pageRows === Math.min(50, x.count)),
        } as Record<string, boolean>,
        plans: opts.has('explain') ? await explain(admin, account.id, typeId, fields, scenario) : undefined,
      });
    }
    load.push(os.loadavg()[0]);

    const judged = results.filter((x) => x.judged);
    const result = {
      benchmark: 'segment',
      date: new Date().toISOString(),
      machine: { cpus: os.cpus().length, memGb: Math.round(os.totalmem() / 2 ** 30), node: process.version, loadAvg1m: load, cpuBusyBeforeRuns: busy },
      postgres: pg,
      contacts: ROWS,
      loadMs,
      indexes,
      repeat: REPEAT,
      targetMs: TARGET_MS,
      scenarios: results,
      pass: judged.every((x) => Object.values(x.pass).every(Boolean)),
      totalRunSec: seconds(Date.now() - started),
    };
    const file = writeResult('segment', result);
    const ok = (b: boolean) => (b ? 'PASS' : 'FAIL');
    const lines = ['', `Segment benchmark — ${ROWS.toLocaleString('en')} contacts of one type (${os.cpus().length} cores, PostgreSQL ${pg.server_version}); median of ${REPEAT} (worst), target ≤ ${TARGET_MS} ms each`];
    for (const x of results) {
      const row = (label: string, k: Key) =>
        `  ${label.padEnd(44)} ${x.medianMs[k].toFixed(0).padStart(6)} ms  (${x.worstMs[k].toFixed(0)})   ${x.judged ? ok(x.worstMs[k] <= TARGET_MS) : x.worstMs[k] <= TARGET_MS ? 'ok' : 'over'}`;
      lines.push(
        '',
        `${x.judged ? '' : '[extra] '}${x.label} → ${x.members.toLocaleString('en')} members`,
        row('POST /segment/save', 'saveMs'),
        row('GET /segment/details (count, cold)', 'detailsColdMs'),
        row('GET /segment/details (count, cached)', 'detailsWarmMs'),
        row('GET /segment/email/list page 1 (50)', 'firstPageMs'),
        row('  … page 1 with the count not cached', 'firstPageColdMs'),
        `  count = plain SQL count                      ${ok(x.pass.countMatchesSql)}`,
      );
      if (x.plans) lines.push('  count plan:', x.plans.count.replace(/^/gm, '    '), '  first page plan:', x.plans.firstPage.replace(/^/gm, '    '));
    }
    lines.push(
      '',
      `  load average (1 min) ${load.map((x) => x.toFixed(1)).join(' → ')}; result: ${path.relative(process.cwd(), file)}   (total ${seconds(Date.now() - started).toFixed(0)} s)`,
      '',
    );
    process.stdout.write(lines.join('\n'));
    if (!result.pass) process.exitCode = 1;
  } finally {
    await admin?.end();
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
