import { Client } from 'pg';

/**
 * Server-level helpers for the benchmarks: each run gets a database of its own, dropped and
 * recreated, on the PostgreSQL named by BENCH_PG_URL (a maintenance database, default
 * postgres://postgres@127.0.0.1:5432/postgres), owned by an ordinary role (BENCH_PG_ROLE,
 * default herald_bench: LOGIN, not a superuser, no CREATEDB/CREATEROLE), and Herald connects
 * as that role, as a production deployment does (README, "A least-privilege role"). The
 * baselines and checks connect as the administrator.
 */
export const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const APP_ROLE = process.env.BENCH_PG_ROLE ?? 'herald_bench';
const APP_PASSWORD = 'herald_bench';

/** The URL of database `name` on the same server as ADMIN_URL, as the administrator. */
export function databaseUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${own(name)}`;
  return u.toString();
}

/** The URL Herald uses: database `name` as the ordinary role that owns it. */
export function appDatabaseUrl(name: string): string {
  const u = new URL(databaseUrl(name));
  u.username = APP_ROLE;
  u.password = APP_PASSWORD;
  return u.toString();
}

const ident = (name: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`Unsafe database name: ${name}`);
  return name;
};

/**
 * A benchmark's database as named, plus BENCH_DB_SUFFIX when set: two people benchmarking on one
 * server at once (each with their own suffix) do not drop each other's database.
 */
const own = (name: string) => ident(name + (process.env.BENCH_DB_SUFFIX ?? ''));

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
    await c.query(`DROP DATABASE IF EXISTS ${own(name)} WITH (FORCE)`);
  });
}

/**
 * Drops and creates database `name`, owned by APP_ROLE (created when missing, and checked to
 * be an ordinary role), and returns the URL Herald connects with (as APP_ROLE).
 */
export async function recreateDatabase(name: string): Promise<string> {
  await withAdmin(async (c) => {
    const role = ident(APP_ROLE);
    const { rows } = await c.query<{ rolsuper: boolean }>('SELECT rolsuper FROM pg_roles WHERE rolname = $1', [role]);
    if (rows.length === 0) {
      await c.query(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '${APP_PASSWORD}'`);
    } else if (rows[0].rolsuper) {
      throw new Error(`BENCH_PG_ROLE ${role} is a superuser; the benchmarks measure an ordinary role`);
    }
    await c.query(`DROP DATABASE IF EXISTS ${own(name)} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${own(name)} OWNER ${role}`);
  });
  return appDatabaseUrl(name);
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
