import { Country as PackageCountry } from 'country-state-city';
import request, { type Response } from 'supertest';
import { seed } from '../../seeds/02_geography';
import { cityRecord, countryRecord, stateRecord } from '../../src/resources/geography/geography.schemas';
import { geographyBody } from '../../src/resources/geography/geography.service';
import { createDb } from '../../src/db/knex';
import { api, expectShape, makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { isolatedUrl } from '../setup/isolated';
import { expectAuthMissing, expectSuccess, expectVal } from '../helpers/expect';

const { app, db } = setupApp();
const PATH = '/get/country-state-city';

interface Country {
  id: number;
  name: string;
  iso_code: string;
  phone_code: string;
}
interface State {
  id: number;
  country_id: number;
  name: string;
  iso_code: string;
}
interface City {
  id: number;
  country_id: number;
  state_id: number;
  name: string;
}
interface Geography {
  countries: Country[];
  states: State[];
  cities: City[];
}

let a: TestAccount;
/** The unfiltered answer, fetched once: it is several MB. */
let all: Geography;
let allRes: Response;

async function fetchGeography(query = ''): Promise<Geography> {
  const res = await api(app, a).get(`${PATH}${query}`);
  expectSuccess(res);
  return res.body.message as Geography;
}

const byIso = (countries: Country[], iso: string) => countries.find((c) => c.iso_code === iso) as Country;
const stateOf = (g: Geography, countryId: number, iso: string) =>
  g.states.find((s) => s.country_id === countryId && s.iso_code === iso) as State;

beforeAll(async () => {
  a = await makeAccount(db);
  allRes = await api(app, a).get(PATH);
  expectSuccess(allRes);
  all = allRes.body.message as Geography;
});

describe('GET /get/country-state-city', () => {
  it('answers the envelope with the three lists, every record with its fields and types', () => {
    expect(Object.keys(allRes.body)).toEqual(['status', 'message']);
    expect(Object.keys(all)).toEqual(['countries', 'states', 'cities']);
    for (const c of all.countries) expectShape(countryRecord, c);
    for (const s of all.states) expectShape(stateRecord, s);
    for (const c of all.cities) expectShape(cityRecord, c);
    expect(allRes.headers['content-type']).toMatch(/^application\/json/);
  });

  it('holds the whole package: plausible counts, ids ascending and unique', () => {
    expect(all.countries.length).toBeGreaterThanOrEqual(200);
    expect(all.states.length).toBeGreaterThanOrEqual(4000);
    expect(all.cities.length).toBeGreaterThanOrEqual(100_000);
    for (const list of [all.countries, all.states, all.cities]) {
      const ids = list.map((r) => r.id);
      expect(ids.every((id, i) => i === 0 || id > ids[i - 1])).toBe(true);
    }
  });

  it('links every state to a country and every city to a state of its own country', () => {
    const countryIds = new Set(all.countries.map((c) => c.id));
    const stateCountry = new Map(all.states.map((s) => [s.id, s.country_id]));
    expect(all.states.filter((s) => !countryIds.has(s.country_id))).toEqual([]);
    expect(all.cities.filter((c) => stateCountry.get(c.state_id) !== c.country_id)).toEqual([]);
  });

  it('numbers countries in the package’s order, so ids are the same on every installation', () => {
    expect(all.countries.map((c) => c.iso_code)).toEqual(PackageCountry.getAllCountries().map((c) => c.isoCode));
    expect(all.countries[0]).toEqual({ id: 1, name: 'Afghanistan', iso_code: 'AF', phone_code: '93' });
  });

  it('has the United Kingdom and the United States with their states and cities', () => {
    const gb = byIso(all.countries, 'GB');
    expect(gb).toMatchObject({ name: 'United Kingdom', phone_code: '44' });
    expect(byIso(all.countries, 'US')).toMatchObject({ name: 'United States', phone_code: '1' });
    const england = stateOf(all, gb.id, 'ENG');
    expect(england.name).toBe('England');
    expect(all.states.filter((s) => s.country_id === gb.id).map((s) => s.name)).toEqual(
      expect.arrayContaining(['England', 'Scotland', 'Wales', 'Northern Ireland']),
    );
    const london = all.cities.find((c) => c.name === 'London' && c.state_id === england.id);
    expect(london).toMatchObject({ country_id: gb.id });
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get(PATH));
  });
});

describe('filters (Herald extension)', () => {
  it('?country_id= narrows states and cities to that country; countries stay whole', async () => {
    const gb = byIso(all.countries, 'GB');
    const g = await fetchGeography(`?country_id=${gb.id}`);
    expect(g.countries).toEqual(all.countries);
    expect(g.states).toEqual(all.states.filter((s) => s.country_id === gb.id));
    expect(g.cities).toEqual(all.cities.filter((c) => c.country_id === gb.id));
    expect(g.cities.length).toBeGreaterThan(1000);
  });

  it('?state_id= narrows cities to that state and states to its country', async () => {
    const us = byIso(all.countries, 'US');
    const california = stateOf(all, us.id, 'CA');
    const g = await fetchGeography(`?state_id=${california.id}`);
    expect(g.countries).toEqual(all.countries);
    expect(g.states).toEqual(all.states.filter((s) => s.country_id === us.id));
    expect(g.cities).toEqual(all.cities.filter((c) => c.state_id === california.id));
    expect(g.cities.map((c) => c.name)).toContain('Los Angeles');
  });

  it('both filters together: a state of another country gives empty lists', async () => {
    const us = byIso(all.countries, 'US');
    const gb = byIso(all.countries, 'GB');
    const california = stateOf(all, us.id, 'CA');
    const same = await fetchGeography(`?country_id=${us.id}&state_id=${california.id}`);
    expect(same.cities).toEqual(all.cities.filter((c) => c.state_id === california.id));
    const other = await fetchGeography(`?country_id=${gb.id}&state_id=${california.id}`);
    expect(other).toEqual({ countries: all.countries, states: [], cities: [] });
  });

  it('an unknown but well-formed id gives empty lists', async () => {
    expect(await fetchGeography('?country_id=2147483000')).toEqual({ countries: all.countries, states: [], cities: [] });
    expect(await fetchGeography('?state_id=2147483000')).toEqual({ countries: all.countries, states: [], cities: [] });
  });

  it('an empty filter is no filter', async () => {
    const res = await api(app, a).get(`${PATH}?country_id=`);
    expectSuccess(res);
    expect(res.headers.etag).toBe(allRes.headers.etag);
  });

  it('refuses a filter that is not a positive integer with VAL', async () => {
    expectVal(await api(app, a).get(`${PATH}?country_id=abc`), { country_id: ['The country id must be an integer.'] });
    expectVal(await api(app, a).get(`${PATH}?state_id=1.5`), { state_id: ['The state id must be an integer.'] });
    expectVal(await api(app, a).get(`${PATH}?country_id=0`), { country_id: ['The country id must be at least 1.'] });
    expectVal(await api(app, a).get(`${PATH}?country_id=1&country_id=2`), {
      country_id: ['The country id must be an integer.'],
    });
  });
});

describe('caching and compression', () => {
  it('serves a strong ETag and answers 304 to If-None-Match', async () => {
    const etag = allRes.headers.etag as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{20,}"$/);
    expect(allRes.headers['cache-control']).toBe('private, no-cache');
    const again = await api(app, a).get(PATH).set('If-None-Match', etag);
    expect(again.status).toBe(304);
    expect(again.text ?? '').toBe('');
    expect(again.headers.etag).toBe(etag);
    const listed = await api(app, a).get(PATH).set('If-None-Match', `"other", ${etag}`);
    expect(listed.status).toBe(304);
  });

  it('answers 200 with the body when the client’s ETag is stale or for another filter', async () => {
    const stale = await api(app, a).get(PATH).set('If-None-Match', '"stale"');
    expectSuccess(stale);
    expect(stale.headers.etag).toBe(allRes.headers.etag);
    const filtered = await api(app, a).get(`${PATH}?country_id=1`).set('If-None-Match', allRes.headers.etag as string);
    expectSuccess(filtered);
    expect(filtered.headers.etag).not.toBe(allRes.headers.etag);
  });

  it('builds each answer once: a second request for a filter is served from the same bytes, without a query', async () => {
    const ctx = { userId: a.id, db };
    const first = await geographyBody(ctx, { country_id: 1 });
    const statements: string[] = [];
    const record = (q: { sql: string }) => statements.push(q.sql);
    db.on('query', record);
    try {
      const again = await geographyBody(ctx, { country_id: 1 });
      expect(again).toBe(first);
    } finally {
      db.off('query', record);
    }
    expect(statements).toEqual([]);
    const res = await api(app, a).get(`${PATH}?country_id=1`).set('Accept-Encoding', 'identity');
    expect(res.headers.etag).toBe(first.etag);
    expect(Buffer.from(res.text).equals(first.body)).toBe(true);
  });

  it('still checks the keys before answering 304', async () => {
    expectAuthMissing(await api(app).get(PATH).set('If-None-Match', allRes.headers.etag as string));
  });

  it('compresses the body for clients that accept gzip, and not for those that do not', async () => {
    const gz = await api(app, a).get(PATH).set('Accept-Encoding', 'gzip');
    expectSuccess(gz);
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers.vary).toMatch(/Accept-Encoding/i);
    expect(gz.body.message.cities).toHaveLength(all.cities.length);
    const plain = await api(app, a).get(`${PATH}?country_id=1`).set('Accept-Encoding', 'identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
  });

  it('answers HEAD with the headers only', async () => {
    const res = await api(app, a).get(PATH).set('Accept-Encoding', 'identity');
    const head = await request(app).head(PATH).set(a.headers);
    expect(head.status).toBe(200);
    expect(head.headers.etag).toBe(res.headers.etag);
  });
});

describe('seeds/02_geography', () => {
  async function counts() {
    const { rows } = await db.raw(
      `SELECT (SELECT count(*) FROM countries) AS countries, (SELECT count(*) FROM states) AS states,
              (SELECT count(*) FROM cities) AS cities, (SELECT id FROM countries WHERE iso_code = 'GB') AS gb`,
    );
    return rows[0] as Record<string, number>;
  }

  it('fills a fresh database with the same rows (read from the package by a child process)', async () => {
    // The isolated template database is created and seeded afresh by every test run (global-setup.ts).
    const fresh = createDb({ url: isolatedUrl(testDatabaseUrl(), 'template'), poolMax: 1 });
    const digest = async (k: typeof db) => {
      const { rows } = await k.raw(
        `SELECT (SELECT md5(string_agg(concat_ws('|', id, name, iso_code, phone_code), ',' ORDER BY id)) FROM countries) AS countries,
                (SELECT md5(string_agg(concat_ws('|', id, country_id, name, iso_code), ',' ORDER BY id)) FROM states) AS states,
                (SELECT md5(string_agg(concat_ws('|', id, country_id, state_id, name), ',' ORDER BY id)) FROM cities) AS cities`,
      );
      return rows[0] as Record<string, string>;
    };
    try {
      expect(await digest(fresh)).toEqual(await digest(db));
    } finally {
      await fresh.destroy();
    }
  });

  it('is idempotent and cheap when the data is in place: one query, nothing read, nothing written', async () => {
    const before = await counts();
    const statements: string[] = [];
    const record = (q: { sql: string }) => statements.push(q.sql);
    db.on('query', record);
    try {
      await seed(db);
    } finally {
      db.off('query', record);
    }
    // Only the fingerprint check: no transaction, no lock, no child process reading the package.
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/^SELECT \(SELECT count\(\*\) FROM countries\)/);
    expect(await counts()).toEqual(before);
    expect(before).toMatchObject({ countries: all.countries.length, states: all.states.length, cities: all.cities.length });
  });
});
