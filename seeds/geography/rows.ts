/**
 * The `country-state-city` package's rows for seeds/02_geography.ts, written by a process of
 * its own: the parsed package (≈45 MB) and the garbage of turning it into rows would otherwise
 * stay in Herald's heap for as long as it runs (172 MB idle after a first start, 92 MB after a
 * restart). Writes PostgreSQL COPY text, `pos, a, b, c` per line in the package's order:
 * countries (name, ISO code, phone code) to fd 3, then states (country ISO, ISO code, name) to
 * fd 4, then cities (country ISO, state ISO, name) to fd 5, each closed when done; states of
 * unknown countries and cities of unknown states are left out (the foreign keys could not
 * hold them). The seed reads the three in the same order, so the pipes never block for good.
 */
import net from 'node:net';
import { City, Country, State } from 'country-state-city';

type Row = [string, string, string];

/** COPY's text format: backslash, tab and line breaks escaped. */
const field = (v: string) => v.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!);

function write(fd: number, rows: Row[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = new net.Socket({ fd, readable: false });
    out.once('error', reject);
    const CHUNK = 2000;
    let next = 0;
    const more = () => {
      while (next < rows.length) {
        const lines = rows
          .slice(next, next + CHUNK)
          .map((r, i) => `${next + i + 1}\t${field(r[0])}\t${field(r[1])}\t${field(r[2])}\n`)
          .join('');
        next += CHUNK;
        if (!out.write(lines)) {
          out.once('drain', more);
          return;
        }
      }
      out.end(resolve);
    };
    more();
  });
}

async function main(): Promise<void> {
  const countries = Country.getAllCountries().map((c): Row => [c.name, c.isoCode, c.phonecode ?? '']);
  const countryCodes = new Set(countries.map((c) => c[1]));
  const states = State.getAllStates()
    .filter((s) => countryCodes.has(s.countryCode))
    .map((s): Row => [s.countryCode, s.isoCode, s.name]);
  const stateKeys = new Set(states.map((s) => `${s[0]}|${s[1]}`));
  const cities = City.getAllCities()
    .filter((c) => stateKeys.has(`${c.countryCode}|${c.stateCode}`))
    .map((c): Row => [c.countryCode, c.stateCode, c.name]);
  await write(3, countries);
  await write(4, states);
  await write(5, cities);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`geography rows: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
