import { Client } from 'pg';

/**
 * Server-level helpers for the benchmarks: each run gets a database of its own, dropped and
 * recreated, on the PostgreSQL named by BENCH_PG_URL (a maintenance database, default
 * postgres://postgres@127.0.0.1:5432/postgres).
 */
export const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The URL of database `name` on the same server as ADMIN_URL. */
export function databaseUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

const ident = (name: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`Unsafe database name: ${name}`);
  return name;
};

async function withAdmin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export function dropDatabase(name: string): Promise<void> {
  return withAdmin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
  });
}

export async function recreateDatabase(name: string): Promise<string> {
  await withAdmin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${ident(name)}`);
  });
  return databaseUrl(name);
}

/** A connected client on `url`; the caller ends it. */
export async function connect(url: string): Promise<Client> {
  const c = new Client({ connectionString: url, application_name: 'herald-bench' });
  await c.connect();
  return c;
}

/** The server's version and the settings that shape these figures, for the JSON result. */
export async function serverInfo(c: Client): Promise<Record<string, string>> {
  const names = ['server_version', 'shared_buffers', 'work_mem', 'maintenance_work_mem', 'max_parallel_workers_per_gather', 'max_wal_size', 'synchronous_commit', 'fsync'];
  const { rows } = await c.query<{ name: string; setting: string }>(
    `SELECT name, current_setting(name) AS setting FROM pg_settings WHERE name = ANY($1)`,
    [names],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
}
