import fs from 'node:fs';
import { once } from 'node:events';
import { RESERVED_COLUMNS } from '../../src/contacts/columns';

/**
 * A contacts CSV with every reserved column and two custom ones (`plan` text, `score`
 * number), shaped like a real export: quoted addresses with commas, blank optional cells,
 * countries given by name or ISO code in mixed case, real state/city names for them.
 * Deterministic (seeded PRNG), emails unique (case-insensitively) by construction unless
 * `repeat` asks for repeated addresses.
 */
/** Herald's own reserved columns (the sample CSV's header), then the two custom ones. */
export const CSV_COLUMNS = [...RESERVED_COLUMNS, 'plan', 'score'];

function mulberry32(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = 'James Mary John Patricia Robert Jennifer Michael Linda William Elizabeth David Barbara Richard Susan Joseph Jessica Thomas Sarah Charles Karen Christopher Nancy Daniel Lisa Matthew Betty Anthony Margaret Mark Sandra Donald Ashley Steven Kimberly Paul Emily Andrew Donna Joshua Michelle Kenneth Carol Kevin Amanda Brian Melissa George Deborah Timothy Stephanie Ronald Rebecca Jason Sharon Edward Laura Jeffrey Cynthia Ryan Kathleen Jacob Amy Gary Angela Nicholas Shirley Eric Anna Jonathan Brenda Stephen Pamela Larry Emma Justin Nicole Scott Helen Brandon Samantha Benjamin Katherine Samuel Christine Gregory Debra Alexander Rachel Frank Carolyn Patrick Janet Raymond Catherine Jack Maria Dennis Heather Jerry Diane Tyler Ruth Aaron Julie José Zoë Renée François Søren Łukasz Aoife Siobhán Mónica'.split(' ');
const LAST = "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes Stewart Morris Morales Murphy Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed Kelly Howard Ramos Kim Cox Ward Richardson Watson Brooks Chavez Wood James Bennett Gray Mendoza Ruiz Hughes Price Alvarez Castillo Sanders Patel Myers Long Ross Foster O'Brien Müller Dupont Kowalski Rossi Silva".split(' ');
const DOMAINS = ['gmail.com', 'gmail.com', 'gmail.com', 'yahoo.com', 'outlook.com', 'hotmail.com', 'icloud.com', 'proton.me', 'example.com', 'acme-corp.io', 'mail.co.uk', 'web.de', 'orange.fr'];
const STREETS = ['Main', 'High', 'Oak', 'Maple', 'Park', 'Church', 'Station', 'Victoria', 'Mill', 'Elm', 'Washington', 'Lake', 'Hill', 'Bridge', 'King', 'Queen', 'Baker', 'Cedar', 'Pine', 'Sunset'];
const SUFFIX = ['Street', 'St.', 'Road', 'Avenue', 'Lane', 'Drive', 'Way', 'Close', 'Boulevard'];
const UNITS = ['Apt 4B', 'Suite 210', 'Floor 3', 'Unit 12', 'Flat 7', 'Building C', 'PO Box 118'];
const PLANS = ['free', 'free', 'free', 'free', 'starter', 'starter', 'pro', 'pro', 'pro', 'enterprise'];
/** Where most contacts live; the rest come from anywhere in the package's list. */
const COMMON = ['US', 'US', 'US', 'GB', 'GB', 'DE', 'FR', 'IN', 'CA', 'AU', 'BR', 'ES', 'IT', 'NL', 'MX', 'JP', 'IE', 'SE', 'PL', 'ZA'];

interface Place {
  name: string;
  iso: string;
  states: Array<{ name: string; cities: string[] }>;
}

function loadPlaces(): { common: Place[]; all: Place[] } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const csc = require('country-state-city') as typeof import('country-state-city');
  const countries = csc.Country.getAllCountries();
  const byIso = new Map(countries.map((c) => [c.isoCode, c]));
  const place = (iso: string): Place => {
    const c = byIso.get(iso)!;
    const states = csc.State.getStatesOfCountry(iso)
      .slice(0, 60)
      .map((s) => ({ name: s.name, cities: csc.City.getCitiesOfState(iso, s.isoCode).slice(0, 40).map((x) => x.name) }))
      .filter((s) => s.cities.length > 0);
    return { name: c.name, iso, states };
  };
  return { common: COMMON.map(place), all: countries.map((c) => ({ name: c.name, iso: c.isoCode, states: [] })) };
}

const needsQuote = /[",\r\n]/;
const cell = (v: string) => (needsQuote.test(v) ? `"${v.replace(/"/g, '""')}"` : v);

export interface CsvShape {
  /** Number of the first row written: rows before it are drawn but not written, so row i has the same address in every file. */
  from?: number;
  /** Rows numbered up to this one get other names (same address): a file that changes contacts a list already holds. */
  renameUpTo?: number;
  /** Share of rows (0–1) that name the address of an earlier row of the file again (in other letter case, half of the time). */
  repeat?: number;
  seed?: number;
}

export interface GeneratedCsv {
  bytes: number;
  ms: number;
  rows: number;
  /** Rows that repeat an earlier row's address; distinct addresses = rows − repeated. */
  repeated: number;
  /** Rows whose address got other names (renameUpTo). */
  renamed: number;
}

/** `rows` rows numbered from `shape.from` (default 1) into `file`. */
export async function generateCsv(file: string, rows: number, shape: CsvShape = {}): Promise<GeneratedCsv> {
  const started = Date.now();
  const from = shape.from ?? 1;
  const rnd = mulberry32(shape.seed ?? 20261122);
  // Renames and repeats draw from streams of their own, so the main stream (and with it
  // every row's address) stays the same whatever they do.
  const other = mulberry32((shape.seed ?? 20261122) ^ 0x5bd1e995);
  const pick = <T>(xs: readonly T[], r = rnd): T => xs[Math.floor(r() * xs.length)];
  const { common, all } = loadPlaces();
  const out = fs.createWriteStream(file);
  // Addresses written so far, for repeats (a ring: repeats name a row up to ~200,000 rows back).
  const recent: string[] = [];
  const RECENT_MAX = 200_000;
  let repeated = 0;
  let renamed = 0;
  let chunk = CSV_COLUMNS.join(',') + '\n';
  for (let i = 1; i < from + rows; i += 1) {
    let first = pick(FIRST);
    let last = pick(LAST);
    const local = `${first}.${last}`.normalize('NFD').replace(/[^A-Za-z.]/g, '');
    const domain = pick(DOMAINS);
    // Unique by the row number; some addresses keep the capitals people type.
    let email = rnd() < 0.15 ? `${local}${i}@${domain}` : `${local}${i}@${domain}`.toLowerCase();
    const alt = rnd() < 0.2 ? `${last.toLowerCase().replace(/[^a-z]/g, '')}.${i}@${pick(DOMAINS)}` : '';
    const r = rnd();
    const p = r < 0.9 ? pick(common) : pick(all);
    const state = p.states.length ? pick(p.states) : undefined;
    const countryRoll = rnd();
    const country =
      countryRoll < 0.04 ? '' : countryRoll < 0.5 ? p.name : countryRoll < 0.9 ? p.iso : countryRoll < 0.95 ? p.iso.toLowerCase() : p.name.toUpperCase();
    const city = state && state.cities.length ? pick(state.cities) : '';
    const house = 1 + Math.floor(rnd() * 2000);
    const line1 = rnd() < 0.1 ? `${house} ${pick(STREETS)} ${pick(SUFFIX)}, ${pick(UNITS)}` : `${house} ${pick(STREETS)} ${pick(SUFFIX)}`;
    const line2 = rnd() < 0.25 ? pick(UNITS) : '';
    const region = state && rnd() < 0.5 ? state.name : '';
    const postal = p.iso === 'GB' ? `SW${1 + Math.floor(rnd() * 20)} ${Math.floor(rnd() * 10)}AB` : String(10000 + Math.floor(rnd() * 89999));
    const scoreRoll = rnd();
    const score = scoreRoll < 0.05 ? '' : scoreRoll < 0.25 ? (rnd() * 1000).toFixed(1) : String(Math.floor(rnd() * 1000));
    const plan = pick(PLANS);
    if (i < from) continue;
    if (shape.renameUpTo !== undefined && i <= shape.renameUpTo) {
      const [f, l] = [first, last];
      while (first === f && last === l) [first, last] = [pick(FIRST, other), pick(LAST, other)];
      renamed += 1;
    }
    if (shape.repeat && recent.length > 0 && other() < shape.repeat) {
      const earlier = recent[Math.floor(other() * recent.length)];
      email = other() < 0.5 ? earlier : earlier.toUpperCase();
      repeated += 1;
    } else if (shape.repeat) {
      if (recent.length < RECENT_MAX) recent.push(email);
      else recent[Math.floor(other() * RECENT_MAX)] = email;
    }
    chunk +=
      [first, last, email, alt, country, state?.name ?? '', city, line1, line2, region, postal, plan, score].map(cell).join(',') + '\n';
    if (i % 5000 === 0) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
  return { bytes: fs.statSync(file).size, ms: Date.now() - started, rows, repeated, renamed };
}
