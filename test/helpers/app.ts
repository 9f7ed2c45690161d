import os from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import type { Knex } from 'knex';
import request from 'supertest';
import type { z } from 'zod';
import { createAccount } from '../../src/accounts/accounts.service';
import { createApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config';
import { createDb } from '../../src/db/knex';
import { createLogger } from '../../src/logger';
import { isolatedUrl, type IsolatedName } from '../setup/isolated';
import { routerCheckedDb, unroutedStatements } from '../citus/router-check';
import { memoryMailer, type MemoryMailer } from './mail';
import { TEST_MASTER_KEY } from './master-key';

export interface TestApp {
  app: Express;
  db: Knex;
  config: Config;
  mailer: MemoryMailer;
}

export function testDatabaseUrl(): string {
  const url = process.env.HERALD_TEST_DATABASE_URL;
  if (!url) throw new Error('HERALD_TEST_DATABASE_URL is not set: run the tests through jest (globalSetup)');
  return url;
}

/**
 * The app on the test database, one per test file; the pool closes after the file.
 * `env` overrides configuration (e.g. small body limits) for that file.
 */
export function setupApp(env: Record<string, string> = {}, isolated?: IsolatedName): TestApp {
  const url = isolated ? isolatedUrl(testDatabaseUrl(), isolated) : testDatabaseUrl();
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'silent',
    DATA_DIR: path.join(os.tmpdir(), `herald-test-${process.pid}`),
    PUBLIC_URL: 'http://herald.test',
    HERALD_MASTER_KEY: TEST_MASTER_KEY,
    ...env,
  });
  const db = createDb({ url, poolMax: 4, logger: createLogger('silent') });
  const mailer = memoryMailer();
  // test:citus: the app's statements on a pool of their own, each checked to run on one node (test/citus/router-check.ts).
  const appDb = process.env.HERALD_TEST_ROUTER_CHECK === '1' ? routerCheckedDb(url) : db;
  const app = createApp({ config, db: appDb, logger: createLogger('silent'), mailer });
  afterAll(() => closePool(db));
  if (appDb !== db) {
    // Tests that watch the app's statements listen on `db`.
    for (const event of ['query', 'query-error', 'query-response']) appDb.on(event, (...args: unknown[]) => db.emit(event, ...args));
    afterAll(async () => {
      await closePool(appDb);
      expect(unroutedStatements(appDb)).toEqual([]);
    });
  }
  return { app, db, config, mailer };
}

/** Connections of a pool that a query still holds (knex's tarn pool; pg clients). */
type PoolInUse = { used: Array<{ resource: { connection?: { stream?: { destroy(): void } } } }> };

/**
 * Closes a test file's pool. knex waits for every connection in use to be released first, so
 * one stuck query (an import that hangs) would hang the file's end and leave jest a worker
 * that fails to exit. Past `graceMs` the connections still in use are cut: their queries
 * fail, their holders let go, and the pool closes; the hook then fails, saying so.
 */
export async function closePool(db: Knex, graceMs = 10_000): Promise<void> {
  const pool = (db.client as { pool?: PoolInUse }).pool;
  const destroyed = db.destroy();
  let timer: NodeJS.Timeout | undefined;
  const inTime = await Promise.race([destroyed.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)))]);
  clearTimeout(timer);
  if (inTime) return;
  const stuck = pool?.used.length ?? 0;
  for (const u of pool?.used ?? []) u.resource.connection?.stream?.destroy();
  await destroyed;
  throw new Error(`${stuck} database connection(s) were still in use ${graceMs} ms after the tests of this file ended (a stuck query): cut`);
}

export interface TestAccount {
  id: number;
  public_key: string;
  secret_key: string;
  headers: { PublicKey: string; SecretKey: string };
}

let seq = 0;

/** A fresh account with its keys; every test file makes its own. */
export async function makeAccount(db: Knex, name = 'Test'): Promise<TestAccount> {
  seq += 1;
  const a = await createAccount(db, { name: `${name} ${seq}`, email: `owner${seq}.${process.pid}@example.com` });
  return { ...a, headers: { PublicKey: a.public_key, SecretKey: a.secret_key } };
}

/** supertest calls carrying an account's keys. Form bodies go as multipart like the spec. */
export function api(app: Express, account?: TestAccount) {
  const withKeys = (t: request.Test) => (account ? t.set(account.headers) : t);
  return {
    get: (url: string) => withKeys(request(app).get(url)),
    delete: (url: string) => withKeys(request(app).delete(url)),
    /** multipart/form-data with each field (arrays as `name[i]`). */
    form: (url: string, fields: Record<string, unknown>) => {
      let t = withKeys(request(app).post(url));
      let any = false;
      for (const [k, v] of Object.entries(fields)) {
        if (Array.isArray(v)) v.forEach((x, i) => (t = t.field(`${k}[${i}]`, String(x))));
        else if (v !== undefined) t = t.field(k, String(v));
        any = true;
      }
      // An empty multipart body still needs a multipart content type.
      return any ? t : t.type('form').send('');
    },
    /** application/x-www-form-urlencoded (the spec's bulk-delete encoding). */
    urlencoded: (url: string, body: string) => withKeys(request(app).post(url)).type('form').send(body),
    json: (url: string, body: unknown) => withKeys(request(app).post(url)).send(body as object),
  };
}

/** Asserts a record matches its schema exactly (every field, no extras), with a readable diff. */
export function expectShape<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new Error(`record does not match its schema:\n${JSON.stringify(r.error.issues, null, 2)}\n${JSON.stringify(value, null, 2)}`);
  }
  return r.data;
}
