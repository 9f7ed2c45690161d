import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import type { GeographyFilter } from './geography.schemas';

/**
 * `/get/country-state-city`: ≈250 countries, ≈5,000 states and ≈150,000 cities, ≈10 MB of
 * JSON (≈1.5 MB gzipped). PostgreSQL writes the JSON text (no 150k row objects in node),
 * and the finished body is kept in memory per filter: the tables are reference data that
 * only the seed changes, and the seed runs before the server listens.
 */

export interface GeographyBody {
  /** The whole envelope, UTF-8 (a JS string of it would take twice the memory). */
  body: Buffer;
  /** Strong validator: a digest of exactly these bytes. */
  etag: string;
}

/** Room for the full answer (≈10 MB) and many filtered ones (the largest, the US, ≈1.4 MB). */
const MAX_CACHED_BYTES = 32 * 1024 * 1024;

/** Bodies by filter key, least recently used first (a Map keeps insertion order; a hit re-inserts). */
class BodyCache {
  private readonly entries = new Map<string, GeographyBody>();
  private bytes = 0;
  /** Concurrent first requests for the same filter share one query. */
  readonly building = new Map<string, Promise<GeographyBody>>();

  get(key: string): GeographyBody | undefined {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  set(key: string, entry: GeographyBody): void {
    if (this.entries.has(key)) return;
    this.entries.set(key, entry);
    this.bytes += entry.body.length;
    for (const [oldKey, old] of this.entries) {
      if (this.bytes <= MAX_CACHED_BYTES) break;
      this.entries.delete(oldKey);
      this.bytes -= old.body.length;
    }
  }
}

/** One cache per database, so two apps in one process (tests) never see each other's data. */
const caches = new WeakMap<Knex, BodyCache>();

function cacheFor(db: Knex): BodyCache {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new BodyCache()));
  return cache;
}

function countriesQuery(db: Knex): Knex.QueryBuilder {
  return db('countries').select('id', 'name', 'iso_code', 'phone_code');
}

function statesQuery(db: Knex, f: GeographyFilter): Knex.QueryBuilder {
  const q = db('states').select('id', 'country_id', 'name', 'iso_code');
  if (f.country_id !== undefined) q.where('country_id', f.country_id);
  // A state filter shows the states of that state's country (the choices beside it).
  if (f.state_id !== undefined) q.where('country_id', db('states').select('country_id').where('id', f.state_id));
  return q;
}

function citiesQuery(db: Knex, f: GeographyFilter): Knex.QueryBuilder {
  const q = db('cities').select('id', 'country_id', 'state_id', 'name');
  if (f.country_id !== undefined) q.where('country_id', f.country_id);
  if (f.state_id !== undefined) q.where('state_id', f.state_id);
  return q;
}

/**
 * A JSON array of the query's rows, in id order, as text. row_to_json keeps the column
 * order and writes no whitespace (json_agg would add a newline per element).
 */
function jsonArray(db: Knex, q: Knex.QueryBuilder): Knex.Raw {
  return db.raw(`SELECT '[' || coalesce(string_agg(row_to_json(t)::text, ',' ORDER BY t.id), '') || ']' FROM ? AS t`, [q]);
}

/** The `message` object as JSON text, built in one query. */
async function messageJson(db: Knex, f: GeographyFilter): Promise<string> {
  const { rows } = await db.raw<{ rows: Array<{ countries: string; states: string; cities: string }> }>(
    'SELECT (?) AS countries, (?) AS states, (?) AS cities',
    [jsonArray(db, countriesQuery(db)), jsonArray(db, statesQuery(db, f)), jsonArray(db, citiesQuery(db, f))],
  );
  const { countries, states, cities } = rows[0];
  return `{"countries":${countries},"states":${states},"cities":${cities}}`;
}

/**
 * The success envelope around a message that is already JSON text; going through ok() would
 * mean parsing and re-serialising megabytes. Same shape as http/envelope.ts ok().
 */
function successBody(message: string): Buffer {
  return Buffer.from(`{"status":"success","message":${message}}`, 'utf8');
}

async function buildBody(ctx: Ctx, f: GeographyFilter): Promise<GeographyBody> {
  const body = successBody(await messageJson(ctx.db, f));
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
}

/** The serialized answer for this filter, from memory when it was built before. */
export async function geographyBody(ctx: Ctx, f: GeographyFilter): Promise<GeographyBody> {
  const cache = cacheFor(ctx.db);
  const key = `${f.country_id ?? ''}:${f.state_id ?? ''}`;
  const hit = cache.get(key);
  if (hit) return hit;
  let pending = cache.building.get(key);
  if (!pending) {
    pending = buildBody(ctx, f).finally(() => cache.building.delete(key));
    cache.building.set(key, pending);
  }
  const entry = await pending;
  cache.set(key, entry);
  return entry;
}
