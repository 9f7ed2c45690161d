import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';

/**
 * Countries, states and cities from the `country-state-city` package (≈250 / 5,000 / 150,000).
 *
 * Seeds run on every start, so the common case must be cheap: one query compares the row
 * counts with those the last seed recorded (in the `cities` table comment, with the package
 * version). Only when they differ is the package read (≈180 ms, ≈45 MB) and, in one
 * transaction, its rows go into temporary staging tables in batches and three set-based
 * INSERT … SELECTs add whatever is missing. Ids follow the package's order (on an empty
 * database country 1 is the package's first country), so ids are the same on every
 * installation. Existing rows are never renumbered or deleted: contacts and senders refer to them.
 */

type CountryRow = [name: string, isoCode: string, phoneCode: string];
type StateRow = [countryCode: string, isoCode: string, name: string];
type CityRow = [countryCode: string, stateCode: string, name: string];

interface GeographyData {
  countries: CountryRow[];
  states: StateRow[];
  cities: CityRow[];
}

interface Counts {
  countries: number;
  states: number;
  cities: number;
}

/** Bumped when this seed changes what it writes, so existing installations are topped up. */
const SEED_VERSION = 1;
/** Rows per staging INSERT: a few thousand keeps each statement small and the round trips few. */
const BATCH = 5000;

/**
 * The package's records in its order, without states of unknown countries or cities of
 * unknown states (the tables' foreign keys could not hold them).
 */
function readPackageData(): GeographyData {
  // Required lazily: the parsed package takes ≈180 ms and ≈45 MB, which a start that finds
  // the data in place should not pay.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const csc = require('country-state-city') as typeof import('country-state-city');
  const countries = csc.Country.getAllCountries().map((c): CountryRow => [c.name, c.isoCode, c.phonecode ?? '']);
  const countryCodes = new Set(countries.map((c) => c[1]));
  const states = csc.State.getAllStates()
    .filter((s) => countryCodes.has(s.countryCode))
    .map((s): StateRow => [s.countryCode, s.isoCode, s.name]);
  const stateKeys = new Set(states.map((s) => `${s[0]}|${s[1]}`));
  const cities = csc.City.getAllCities()
    .filter((c) => stateKeys.has(`${c.countryCode}|${c.stateCode}`))
    .map((c): CityRow => [c.countryCode, c.stateCode, c.name]);
  return { countries, states, cities };
}

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

/** Loads `rows` into a temporary table (dropped at commit), `BATCH` rows per statement. */
async function stage(trx: Knex.Transaction, table: string, columns: string, rows: Array<[string, string, string]>) {
  await trx.raw(`CREATE TEMP TABLE ${table} (pos int, ${columns}) ON COMMIT DROP`);
  for (let start = 0; start < rows.length; start += BATCH) {
    const batch = rows.slice(start, start + BATCH);
    // One array per column: a batch is one statement with four parameters, whatever its size.
    await trx.raw(`INSERT INTO ${table} SELECT * FROM unnest(?::int[], ?::text[], ?::text[], ?::text[])`, [
      batch.map((_, i) => start + i + 1),
      batch.map((r) => r[0]),
      batch.map((r) => r[1]),
      batch.map((r) => r[2]),
    ]);
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

async function fill(trx: Knex.Transaction, data: GeographyData): Promise<void> {
  await stage(trx, 'seed_countries', 'name text, iso_code text, phone_code text', data.countries);
  await stage(trx, 'seed_states', 'country_code text, iso_code text, name text', data.states);
  await stage(trx, 'seed_cities', 'country_code text, state_code text, name text', data.cities);
  await insertMissing(trx);
  await syncSequences(trx);
  // Fresh statistics, so the first filtered requests get index plans rather than guesses.
  await trx.raw('ANALYZE countries, states, cities');
}

export async function seed(knex: Knex): Promise<void> {
  if (await isUpToDate(knex)) return;
  await knex.transaction(async (trx) => {
    // Two servers starting together: the second waits here, then finds the work done.
    await trx.raw('LOCK TABLE countries, states, cities IN SHARE ROW EXCLUSIVE MODE');
    if (await isUpToDate(trx)) return;
    await fill(trx, readPackageData());
    await recordFingerprint(trx);
  });
}
