import knexFactory, { type Knex } from 'knex';
import type { Logger } from '../logger';
import { restoreConstraintName } from './citus';
import { installTypeParsers } from './types';

export interface DbOptions {
  url: string;
  poolMax?: number;
  /** statement_timeout for every session; 0 disables it. */
  queryTimeoutMs?: number;
  applicationName?: string;
  /** Where knex's own warnings go (connection errors, …); they print to stdout otherwise. */
  logger?: Logger;
  /** More settings for every session (`-c name=value`). */
  settings?: Record<string, string>;
}

/**
 * One knex instance per process. Sessions are pinned to UTC so timestamps format the same
 * everywhere, and acquiring a connection gives up after a few seconds so a database outage
 * answers 503 instead of hanging requests.
 */
export function createDb(opts: DbOptions): Knex {
  installTypeParsers();
  const options = ['-c TimeZone=UTC'];
  if (opts.queryTimeoutMs) options.push(`-c statement_timeout=${opts.queryTimeoutMs}`);
  for (const [name, value] of Object.entries(opts.settings ?? {})) options.push(`-c ${name}=${value}`);
  const knex = knexFactory({
    client: 'pg',
    connection: {
      connectionString: opts.url,
      options: options.join(' '),
      application_name: opts.applicationName ?? 'herald',
      connectionTimeoutMillis: 5000,
      keepAlive: true,
    },
    pool: {
      min: 0,
      max: opts.poolMax ?? 10,
      idleTimeoutMillis: 30_000,
    },
    acquireConnectionTimeout: 5000,
    log: opts.logger ? knexLog(opts.logger) : undefined,
  });
  knex.on('query-error', restoreConstraintName);
  return knex;
}

/** knex's log hooks on pino: JSON lines like everything else, not console.log stack dumps. */
function knexLog(logger: Logger) {
  const text = (m: unknown) => (m instanceof Error ? m.message : typeof m === 'string' ? m : JSON.stringify(m));
  return {
    warn: (m: unknown) => logger.warn({ source: 'knex' }, text(m)),
    error: (m: unknown) => logger.error({ source: 'knex' }, text(m)),
    deprecate: (m: unknown) => logger.debug({ source: 'knex' }, text(m)),
    debug: (m: unknown) => logger.debug({ source: 'knex' }, text(m)),
  };
}
