import path from 'node:path';
import pino from 'pino';
import { startEmbedded, type EmbeddedDb } from '../../src/db/embedded';
import { createDb } from '../../src/db/knex';
import { ROOT } from '../../src/paths';
import { prepareDatabase } from '../../src/server';
import { databaseName, ISOLATED_DATABASES, isolatedUrl } from './isolated';
import { freePort } from '../helpers/net';

declare global {
  var __HERALD_EMBEDDED__: EmbeddedDb | undefined;
}

/**
 * One database for the whole run: TEST_DATABASE_URL or DATABASE_URL when set, otherwise a
 * throwaway embedded cluster (fsync off) in data/test-db. Migrated and seeded once here;
 * each test file then makes its own accounts, so files run in parallel.
 */
export default async function globalSetup(): Promise<void> {
  let url = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (!url) {
    const db = await startEmbedded({
      dataDir: path.join(ROOT, 'data', 'test-db'),
      port: await freePort(),
      database: 'herald_test',
      fast: true,
    });
    globalThis.__HERALD_EMBEDDED__ = db;
    url = db.url;
  }
  process.env.HERALD_TEST_DATABASE_URL = url;
  const knex = createDb({ url });
  try {
    await prepareDatabase(knex, pino({ level: 'silent' }));
  } finally {
    await knex.destroy();
  }
  await cloneIsolated(url);
}

/**
 * Clones for the files that run a worker (see isolated.ts), made from a freshly migrated and
 * seeded template, not from the shared database: a developer's database keeps the sends of
 * earlier runs, which a clone's worker would otherwise pick up and send.
 */
async function cloneIsolated(url: string): Promise<void> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const knex = createDb({ url: admin.toString() });
  try {
    const templateUrl = isolatedUrl(url, 'template');
    const template = databaseName(templateUrl);
    await knex.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [template]);
    await knex.raw('CREATE DATABASE ??', [template]);
    const prepared = createDb({ url: templateUrl });
    try {
      await prepareDatabase(prepared, pino({ level: 'silent' }));
    } finally {
      await prepared.destroy();
    }
    for (const name of ISOLATED_DATABASES) {
      if (name === 'template') continue;
      const clone = databaseName(isolatedUrl(url, name));
      await knex.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [clone]);
      await knex.raw('CREATE DATABASE ?? TEMPLATE ??', [clone, template]);
    }
  } finally {
    await knex.destroy();
  }
}
