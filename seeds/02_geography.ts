import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Knex } from 'knex';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/**
 * Countries, states and cities from the `country-state-city` package (≈250 / 5,000 / 150,000).
 *
 * Seeds run on every start, so the common case must be cheap: one query compares the row
 * counts with those the last seed recorded (in the `cities` table comment, with the package
 * version). Only when they differ is the package read — by a child process (≈180 ms, ≈45 MB
 * that this process never holds) whose rows flow through pipes into COPY — and, in one
 * transaction, staged in temporary tables, three set-based INSERT … SELECTs add whatever is
 * missing. Ids follow the package's order (on an empty database country 1 is the
 * package's first country), so ids are the same on every installation. Existing rows are never
 * renumbered or deleted: contacts and senders refer to them.
 */

interface Counts {
  countries: number;
  states: number;
  cities: number;
}

/** Bumped when this seed changes what it writes, so existing installations are topped up. */
const SEED_VERSION = 1;

function packageDir(): string {
  return path.dirname(require.resolve('country-state-city/package.json'));
}

/** What the last seed recorded: the seed and package versions, and the counts it left. */
function fingerprint(n: Counts): string {
  const pkg = JSON.parse(fs.readFileSync(path.join(packageDir(), 'package.json'), 'utf8')) as { version: string };
  return `geography seed v${SEED_VERSION}, country-state-city@${pkg.version}: ${n.countries} countries, ${n.states} states, ${n.cities} cities`;
}

async function readState(db: Knex): Promise<{ counts: Counts; mark: string | null }> {
  const { rows } = await db.raw<{ rows: Array<Counts & { mark: string | null }> }>(
    `SELECT (SELECT count(*) FROM countries) AS countries,
            (SELECT count(*) FROM states) AS states,
            (SELECT count(*) FROM cities) AS cities,
            obj_description('cities'::regclass, 'pg_class') AS mark`,
  );
  const { mark, ...counts } = rows[0];
  return { counts, mark };
}

/** Up to date: same seed, same package, and nobody added or removed rows since. */
async function isUpToDate(db: Knex): Promise<boolean> {
  const { counts, mark } = await readState(db);
  return mark === fingerprint(counts);
}

async function recordFingerprint(trx: Knex.Transaction): Promise<void> {
  const { counts } = await readState(trx);
  // COMMENT takes a literal, not a parameter; the text is digits and a semver, quotes doubled anyway.
  await trx.raw(`COMMENT ON TABLE cities IS '${fingerprint(counts).replace(/'/g, "''")}'`);
}

/** Staging tables (dropped at commit) in the order seeds/geography/rows writes them, on fds 3, 4, 5. */
const STAGING = [
  'seed_countries (pos int, name text, iso_code text, phone_code text)',
  'seed_states (pos int, country_code text, iso_code text, name text)',
  'seed_cities (pos int, country_code text, state_code text, name text)',
];

/**
 * Stages the package's rows: seeds/geography/rows (a child process, so the parsed package never
 * enters this one) writes each table as COPY text on a pipe of its own, and each pipe flows
 * straight into a COPY on the transaction's connection.
 */
async function stage(trx: Knex.Transaction): Promise<void> {
  for (const table of STAGING) await trx.raw(`CREATE TEMP TABLE ${table} ON COMMIT DROP`);
  const conn = (await trx.client.acquireConnection()) as pg.Client;
  const ts = __filename.endsWith('.ts');
  const script = path.join(__dirname, 'geography', ts ? 'rows.ts' : 'rows.js');
  // From the TypeScript sources (tests, tsx) the child needs tsx's loader too.
  const loader = ts ? ['--require', require.resolve('tsx/cjs')] : [];
  const child = spawn(process.execPath, [...loader, script], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  });
  try {
    for (const [i, table] of STAGING.entries()) {
      const name = table.slice(0, table.indexOf(' '));
      await pipeline(child.stdio[3 + i] as Readable, conn.query(copyFrom(`COPY ${name} FROM STDIN`)));
    }
    const code = await exited;
    if (code !== 0) throw new Error(`reading the country-state-city package failed (exit ${code}): ${stderr.trim()}`);
  } finally {
    if (child.exitCode === null) child.kill();
  }
}

/**
 * New rows are numbered after the current highest id in the package's order, which on an
 * empty table makes id = position in the package.
 */
async function insertMissing(trx: Knex.Transaction): Promise<void> {
  await trx.raw(`
    INSERT INTO countries (id, name, iso_code, phone_code)
    SELECT (SELECT coalesce(max(id), 0) FROM countries) + row_number() OVER (ORDER BY s.pos),
           s.name, s.iso_code, s.phone_code
      FROM seed_countries s
     WHERE NOT EXISTS (SELECT 1 FROM countries c WHERE c.iso_code = s.iso_code)`);
  await trx.raw(`
    INSERT INTO states (id, country_id, name, iso_code)
    SELECT (SELECT coalesce(max(id), 0) FROM states) + row_number() OVER (ORDER BY s.pos),
           c.id, s.name, s.iso_code
      FROM seed_states s
      JOIN countries c ON c.iso_code = s.country_code
     WHERE NOT EXISTS (SELECT 1 FROM states t WHERE t.country_id = c.id AND t.iso_code = s.iso_code)`);
  await trx.raw(`
    INSERT INTO cities (id, country_id, state_id, name)
    SELECT (SELECT coalesce(max(id), 0) FROM cities) + row_number() OVER (ORDER BY s.pos),
           st.country_id, st.id, s.name
      FROM seed_cities s
      JOIN countries c ON c.iso_code = s.country_code
      JOIN states st ON st.country_id = c.id AND st.iso_code = s.state_code
     WHERE NOT EXISTS (SELECT 1 FROM cities t WHERE t.state_id = st.id AND t.name = s.name)`);
}

/** Explicit ids leave the serial sequences behind; move them past the data. */
async function syncSequences(trx: Knex.Transaction): Promise<void> {
  for (const table of ['countries', 'states', 'cities']) {
    await trx.raw(
      `SELECT setval(pg_get_serial_sequence(?, 'id'), coalesce(max(id), 1), max(id) IS NOT NULL) FROM ??`,
      [table, table],
    );
  }
}

async function fill(trx: Knex.Transaction): Promise<void> {
  await stage(trx);
  await insertMissing(trx);
  await syncSequences(trx);
}

export async function seed(knex: Knex): Promise<void> {
  if (await isUpToDate(knex)) return;
  const filled = await knex.transaction(async (trx) => {
    // Two servers starting together: the second waits here, then finds the work done.
    await trx.raw('LOCK TABLE countries, states, cities IN SHARE ROW EXCLUSIVE MODE');
    if (await isUpToDate(trx)) return false;
    await fill(trx);
    await recordFingerprint(trx);
    return true;
  });
  // Fresh statistics, so the first filtered requests get index plans rather than guesses. After
  // the commit: on Citus these are reference tables, and ANALYZE cannot follow writes to them
  // in one transaction.
  if (filled) await knex.raw('ANALYZE countries, states, cities');
}
