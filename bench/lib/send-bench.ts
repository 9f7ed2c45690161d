import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { build, createAccount, log } from './herald';
import { connect, databaseUrl, dropDatabase, recreateDatabase } from './pg';
import { makeFixture, type Fixture } from './send-fixture';
import { BENCH_LIB, type Child, cleanUpOnStop, killAll, nextMessage, spawnNode } from './send-procs';

/** The machine a result was measured on, as every result file records it. */
export function machineInfo() {
  return { cpus: os.cpus().length, model: os.cpus()[0]?.model, memoryGb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10, node: process.version };
}

/** What a benchmark that sends through `herald serve` into the sink starts from. */
export interface SendBench {
  /** DATA_DIR of the Herald processes (removed at the end). */
  dataDir: string;
  /** The SMTP sink (bench/lib/send-sink.ts) and its port. */
  sink: Child;
  port: number;
  /** The bench database, as the ordinary role that owns it. */
  url: string;
  c: Client;
  /** The same database as the superuser (VACUUM, CHECKPOINT, TRUNCATE between runs). */
  admin: Client;
  /** An account with a verified sender, a group and a custom field. */
  f: Fixture;
}

/**
 * Builds Herald (unless `--no-build`), starts the sink, makes the bench database and its account,
 * runs `run`, and cleans up — the sink, every child, the connections, the database (unless
 * `keep`), the data directory — whether it succeeds, fails or is interrupted.
 */
export async function withSendBench<T>(opts: { db: string; account: string; pin: boolean; keep: boolean; build: boolean }, run: (b: SendBench) => Promise<T>): Promise<T> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${opts.db.replace(/_/g, '-')}-`));
  let sink: Child | undefined;
  let c: Client | undefined;
  let admin: Client | undefined;
  let dbCreated = false;
  const cleanup = async () => {
    await sink?.stop(5_000).catch(() => undefined);
    killAll();
    await c?.end().catch(() => undefined);
    await admin?.end().catch(() => undefined);
    if (dbCreated && !opts.keep) await dropDatabase(opts.db).catch((err) => log(`could not drop ${opts.db}: ${err.message}`));
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  cleanUpOnStop(cleanup);
  try {
    if (opts.build) build();
    sink = spawnNode('sink', path.join(BENCH_LIB, 'send-sink.ts'), [], { ts: true, ipc: true, cpu: opts.pin ? '1' : undefined });
    const { port } = await nextMessage<{ port: number }>(sink, 'listening', 30_000);
    const url = await recreateDatabase(opts.db);
    dbCreated = true;
    const account = await createAccount(url, opts.account);
    c = await connect(url);
    admin = await connect(databaseUrl(opts.db));
    const f = await makeFixture(c, account);
    return await run({ dataDir, sink, port, url, c, admin, f });
  } finally {
    await cleanup();
  }
}
