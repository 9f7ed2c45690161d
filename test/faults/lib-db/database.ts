import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import pino from 'pino';
import { startEmbedded, type EmbeddedDb } from '../../../src/db/embedded';
import { createDb } from '../../../src/db/knex';
import { prepareDatabase } from '../../../src/server';
import { testDatabaseUrl } from '../../helpers/app';
import { databaseName } from '../../setup/isolated';
import { freePort } from '../../helpers/net';

export interface FreshDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A database of this file's own on the test server, created empty and migrated + seeded with
 * prepareDatabase (what `herald serve` does). Used by files that run a worker but may not
 * share the isolated clones other files own: a worker claims every due message in its
 * database. (Cloning the prepared test database with TEMPLATE is not possible here: other
 * files are connected to it while this one runs.)
 */
export async function freshDatabase(suffix: string): Promise<FreshDatabase> {
  const base = testDatabaseUrl();
  const name = `${databaseName(base)}_${suffix}`.slice(0, 63);
  const admin = new URL(base);
  admin.pathname = '/postgres';
  const adminDb = createDb({ url: admin.toString(), poolMax: 1 });
  try {
    await adminDb.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [name]);
    await adminDb.raw('CREATE DATABASE ??', [name]);
  } finally {
    await adminDb.destroy();
  }
  const url = new URL(base);
  url.pathname = `/${encodeURIComponent(name)}`;
  const db = createDb({ url: url.toString(), poolMax: 2 });
  try {
    await prepareDatabase(db, pino({ level: 'silent' }));
  } finally {
    await db.destroy();
  }
  return {
    url: url.toString(),
    async drop() {
      const again = createDb({ url: admin.toString(), poolMax: 1 });
      try {
        await again.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [name]);
      } finally {
        await again.destroy();
      }
    },
  };
}

/**
 * A PostgreSQL cluster of this test's own (embedded, fsync off) that the test can stop and
 * start again on the same data directory and port, as an operator restarting the server
 * would. Nothing else uses it, so stopping it hurts no other test file.
 */
export interface RestartableCluster {
  url: string;
  port: number;
  dataDir: string;
  /** Whether PostgreSQL is up (between start() and stop()). */
  readonly up: boolean;
  /** Stops PostgreSQL (fast shutdown); resolves once it has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same folder and port. */
  start(): Promise<void>;
  /** Stops it if up and removes its folder. */
  destroy(): Promise<void>;
}

export async function startCluster(database = 'herald_faults'): Promise<RestartableCluster> {
  // The embedded PostgreSQL runs as the `postgres` OS user when we are root: it must be able
  // to enter the folder (mkdtemp makes it 0700).
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-dbfaults-'));
  fs.chmodSync(root, 0o755);
  const dataDir = path.join(root, 'db');
  const port = await freePort();
  let current: EmbeddedDb | undefined = await startEmbedded({ dataDir, port, database, fast: true });
  const url = current.url;
  const cluster: RestartableCluster = {
    url,
    port,
    dataDir,
    get up() {
      return current !== undefined;
    },
    async stop() {
      const db = current;
      current = undefined;
      await db?.stop();
    },
    async start() {
      if (current) return;
      current = await startEmbedded({ dataDir, port, database, fast: true });
    },
    async destroy() {
      await cluster.stop();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
  return cluster;
}

/** Migrates and seeds a database (what `herald serve` does before it listens). */
export async function prepare(db: Knex): Promise<void> {
  await prepareDatabase(db, pino({ level: 'silent' }));
}
