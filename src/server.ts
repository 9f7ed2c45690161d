import type { Server } from 'node:http';
import type { Knex } from 'knex';
import { KeyCache } from './accounts/key-cache';
import { countAccounts, createAccount } from './accounts/accounts.service';
import { createApp } from './app';
import { ConfigError, type Config } from './config';
import { createDb } from './db/knex';
import { masterKey } from './dkim/master-key';
import type { Mailer } from './mail/mailer';
import { createMailer } from './routes/create-mailer';
import { dnsFor } from './dns';
import { startMetricsServer } from './metrics';
import { Worker } from './worker/worker';
import { migrateLatest } from './db/migrate';
import { resolveDatabase, type ResolvedDatabase } from './db/resolve';
import { runSeeds } from './db/seed';
import type { Logger } from './logger';
import { startInboundSmtp, type InboundSmtp } from './bounces/inbound-smtp';
import { stopRunningImports } from './resources/contacts/running-imports';
import { CLI_ACTOR, createUserWithSetupLink } from './resources/users/users.service';

export interface Running {
  server: Server;
  db: Knex;
  database: ResolvedDatabase;
  /** Drains and stops everything; resolves when it is safe to exit. */
  shutdown(reason: string): Promise<void>;
}

/** Migrations and idempotent seeds: what `herald serve` does before it listens. */
export async function prepareDatabase(db: Knex, logger: Logger): Promise<void> {
  const ran = await migrateLatest(db, logger);
  if (ran.length) logger.info({ migrations: ran }, 'migrations applied');
  await runSeeds(db);
}

/** The first account's address, and its owner's until they set their own on the setup page. */
const FIRST_EMAIL = 'admin@localhost';

/**
 * On an empty database the first start creates an account and its owner (the account's email; no
 * password yet), and prints the keys and the owner's one-time setup link (24 hours) once.
 */
async function ensureFirstAccount(db: Knex, config: Pick<Config, 'publicUrl'>, print: (text: string) => void): Promise<void> {
  if ((await countAccounts(db)) > 0) return;
  await createFirstAccount(db, config, print);
}

/** The first start's account and owner, in one transaction, and what it prints. */
export async function createFirstAccount(db: Knex, config: Pick<Config, 'publicUrl'>, print: (text: string) => void): Promise<{ id: number }> {
  const { account, owner } = await db.transaction(async (trx) => {
    const made = await createAccount(trx, { name: 'Herald', email: FIRST_EMAIL });
    return { account: made, owner: await createUserWithSetupLink(trx, config, made.id, { email: FIRST_EMAIL, role: 'owner' }, { ...CLI_ACTOR, label: 'Herald (first start)' }) };
  });
  print(
    [
      '',
      '  Herald created your first account. Keep these keys: the SecretKey is shown only this once.',
      '',
      `    PublicKey: ${account.public_key}`,
      `    SecretKey: ${account.secret_key}`,
      '',
      '  Open this link to set up the account’s owner (your address and password); it works once, for 24 hours:',
      '',
      `    ${owner.setup_link}`,
      '',
      `  (A new link: herald user link --account ${account.id} --email ${FIRST_EMAIL}. More accounts: herald account create`,
      '  --name NAME --email EMAIL; ./bin/herald.js in a clone)',
      '',
    ].join('\n'),
  );
  return { id: account.id };
}

function listen(app: ReturnType<typeof createApp>, config: Config): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(config.port, config.host);
    server.once('listening', () => resolve(server));
    server.once('error', reject);
  });
}

export interface RunningWorker {
  shutdown(reason: string): Promise<void>;
  database: ResolvedDatabase;
}

/** `herald worker`: the delivery worker alone (no HTTP), for running several beside the API. */
export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  const database = await resolveDatabase(config, logger, true);
  const db = createDb({ url: database.url, poolMax: config.dbPoolMax, queryTimeoutMs: config.dbQueryTimeoutMs, applicationName: 'herald-worker', logger });
  try {
    await prepareDatabase(db, logger);
  } catch (err) {
    await db.destroy();
    await database.stop();
    throw err;
  }
  masterKey(config); // made on first start (DATA_DIR/master.key), not at the first message
  // METRICS_PORT: this process's own /metrics (its counters are its own); a port taken fails the start.
  let metrics: { close(): Promise<void> } | undefined;
  try {
    if (config.metricsPort) metrics = await startMetricsServer({ config, db, logger }, config.metricsPort);
  } catch (err) {
    await db.destroy();
    await database.stop();
    throw err;
  }
  const mailer = createMailer(config, { db, logger, dns: dnsFor(config) });
  const worker = new Worker({ config, db, logger, mailer });
  worker.start();
  logger.info({ mail: mailer.target, sendRate: config.sendRate }, 'Herald worker started');
  let stopping: Promise<void> | undefined;
  return {
    database,
    shutdown(reason) {
      stopping ??= (async () => {
        logger.info({ reason }, 'worker stopping: finishing messages in flight');
        await metrics?.close();
        await worker.stop();
        await mailer.close();
        await db.destroy();
        await database.stop();
        logger.info('worker stopped');
      })();
      return stopping;
    },
  };
}

/** `herald inbound`: the inbound SMTP server alone (bounces and complaints for BOUNCE_DOMAIN). */
export async function startInbound(config: Config, logger: Logger): Promise<RunningWorker> {
  // Before the database: nothing starts that would only stop again.
  if (!config.bounceDomain) throw new ConfigError('Invalid configuration:\n  herald inbound needs BOUNCE_DOMAIN: the domain whose bounces it receives');
  const database = await resolveDatabase(config, logger, true);
  const db = createDb({ url: database.url, poolMax: config.dbPoolMax, queryTimeoutMs: config.dbQueryTimeoutMs, applicationName: 'herald-inbound', logger });
  let inbound: InboundSmtp;
  try {
    await prepareDatabase(db, logger);
    inbound = await startInboundSmtp({ config, db, logger }, { port: config.inboundSmtpPort ?? 25 });
  } catch (err) {
    await db.destroy();
    await database.stop();
    throw err;
  }
  let stopping: Promise<void> | undefined;
  return {
    database,
    shutdown(reason) {
      stopping ??= (async () => {
        logger.info({ reason }, 'inbound SMTP stopping: finishing messages in flight');
        await inbound.close();
        await db.destroy();
        await database.stop();
        logger.info('inbound SMTP stopped');
      })();
      return stopping;
    },
  };
}

interface PoolCounts {
  numUsed(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
}

/**
 * Resolves true once the database pool has been idle for `quietMs` (no query running, none
 * waiting for a connection), false if that has not happened within `maxMs`. A request cut off
 * by SHUTDOWN_TIMEOUT_MS keeps running in its handler — a CSV import's transaction, say — and
 * must be let commit or roll back and record its outcome before the pool goes away (a pool
 * being destroyed hands out no more connections, so the import's record would stay
 * `running`); the quiet period also lets aborted uploads' temporary files be removed.
 */
async function databaseSettled(db: Knex, quietMs: number, maxMs: number): Promise<boolean> {
  const pool = (db.client as { pool?: PoolCounts }).pool;
  if (!pool) return true;
  const deadline = Date.now() + maxMs;
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    if (pool.numUsed() + pool.numPendingAcquires() + pool.numPendingCreates() > 0) quietSince = Date.now();
    else if (Date.now() - quietSince >= quietMs) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

/**
 * Past SHUTDOWN_TIMEOUT_MS, how long the imports that still run get to stop once cancelled
 * (roll back, close their record as failed), and then how long any other database work gets
 * once its statement is cancelled. A second signal exits at once.
 */
const STOP_IMPORTS_MS = 3_000;
const CANCEL_SETTLE_MS = 2_000;

/**
 * Cancels the statements of the pool's connections still in use (a cut-off request's query
 * past SHUTDOWN_TIMEOUT_MS); their holders see an error and let go.
 */
async function cancelPoolStatements(db: Knex): Promise<number> {
  const pool = (db.client as { pool?: { used: Array<{ resource: { processID?: number } }> } }).pool;
  const pids = (pool?.used ?? []).map((u) => u.resource.processID).filter((pid): pid is number => typeof pid === 'number');
  if (pids.length === 0) return 0;
  await db.raw('SELECT pg_cancel_backend(pid) FROM unnest(?::int[]) AS pid', [pids]).catch(() => undefined);
  return pids.length;
}

/** config → database → migrate + seed → HTTP. Shutdown is the reverse, after draining. */
export async function startServer(config: Config, logger: Logger): Promise<Running> {
  const database = await resolveDatabase(config, logger);
  let db: Knex | undefined;
  let mailer: Mailer | undefined;
  let keys: KeyCache | undefined;
  let inbound: InboundSmtp | undefined;
  try {
    db = createDb({ url: database.url, poolMax: config.dbPoolMax, queryTimeoutMs: config.dbQueryTimeoutMs, logger });
    await prepareDatabase(db, logger);
    await ensureFirstAccount(db, config, (text) => process.stdout.write(text + '\n'));
    masterKey(config); // made on first start (DATA_DIR/master.key) when HERALD_MASTER_KEY is not set
    mailer = createMailer(config, { db, logger, dns: dnsFor(config) });
    keys = new KeyCache({ url: database.url, logger });
    await keys.start();
    const app = createApp({ config, db, logger, mailer, keys });
    const server = await listen(app, config);
    // Slow clients may not hold a connection open forever.
    server.headersTimeout = 30_000;
    server.requestTimeout = 5 * 60_000;
    logger.info(
      { url: config.publicUrl, port: config.port, embeddedDatabase: database.embedded, mail: mailer.target },
      'Herald is listening',
    );
    if (config.inboundSmtpPort !== undefined) inbound = await startInboundSmtp({ config, db, logger });
    const worker = config.worker ? new Worker({ config, db, logger, mailer }) : undefined;
    worker?.start();

    let stopping: Promise<void> | undefined;
    const shutdown = (reason: string) => {
      stopping ??= (async () => {
        logger.info({ reason }, 'shutting down: draining requests');
        const deadline = Date.now() + config.shutdownTimeoutMs;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
        // The worker stops claiming and finishes the messages in flight meanwhile; so does the inbound server.
        await Promise.all([closed, worker?.stop(), inbound?.close()]);
        clearTimeout(timer);
        // A cut-off request's database work (a CSV import's transaction, say) may finish and record its outcome
        // until SHUTDOWN_TIMEOUT_MS; past it, what still runs is cancelled (issue 18).
        if (!(await databaseSettled(db!, 200, Math.max(0, deadline - Date.now())))) {
          const imports = await stopRunningImports(db!, `Herald was stopped (${reason}) while the import ran, past SHUTDOWN_TIMEOUT_MS; nothing was imported.`, STOP_IMPORTS_MS);
          if (imports > 0) logger.warn({ imports }, 'shutdown timeout: running imports cancelled');
          if (!(await databaseSettled(db!, 200, CANCEL_SETTLE_MS))) {
            const cancelled = await cancelPoolStatements(db!);
            logger.warn({ cancelled }, 'shutdown timeout: database statements still running cancelled');
            if (!(await databaseSettled(db!, 200, CANCEL_SETTLE_MS))) logger.warn('requests still have database work running; stopping anyway');
          }
        }
        await keys!.stop();
        await mailer!.close();
        await db!.destroy();
        await database.stop();
        logger.info('stopped');
      })();
      return stopping;
    };
    return { server, db, database, shutdown };
  } catch (err) {
    await inbound?.close();
    await keys?.stop();
    await db?.destroy().catch(() => undefined);
    await database.stop();
    throw err;
  }
}
