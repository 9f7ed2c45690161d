import { Command, InvalidArgumentError, Option } from 'commander';
import pino from 'pino';
import type { Knex } from 'knex';
import type { Ctx } from './context';
import { createAccount, rotateKeys } from './accounts/accounts.service';
import { ConfigError, loadConfig, type Config } from './config';
import { createDb } from './db/knex';
import { signingDomain } from './dkim/keys';
import { checkRecords, domainRecords, type DomainRecords } from './dkim/records';
import { dnsFor } from './dns';
import { migrateLatest } from './db/migrate';
import { resolveDatabase } from './db/resolve';
import { runSeeds } from './db/seed';
import { createLogger, REDACT_PATHS, type Logger } from './logger';
import { VERSION } from './paths';
import { PinningError, setAccountRoutes } from './routes/pinning';
import { recordAudit } from './audit/record';
import { isEmail } from './http/fields';
import { AppError } from './http/errors';
import { CLI_ACTOR, createUserWithSetupLink, findUserByEmail, listUsers, newUserLink, removeUser } from './resources/users/users.service';
import { MemberError } from './team/members';
import { isRole, ROLES, type Role } from './team/permissions';
import { prepareDatabase, startInbound, startServer, startWorker, type RunningWorker } from './server';

/** A configuration error ends the process with its message (no stack, no log line) and exit code 2. */
function exitOnConfigError(err: unknown): void {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
}

function config(): Config {
  try {
    return loadConfig();
  } catch (err) {
    exitOnConfigError(err);
    throw err;
  }
}

/** Commands other than serve/worker print results on stdout; their logs go to stderr. */
function cliLogger(cfg: Config): Logger {
  return pino({ level: cfg.logLevel === 'info' ? 'warn' : cfg.logLevel, redact: REDACT_PATHS }, pino.destination(2));
}

/** Runs `fn` against the database (attaching to a running embedded one), then disconnects. */
async function withDatabase<T>(fn: (db: Knex, logger: Logger) => Promise<T>): Promise<T> {
  const cfg = config();
  const logger = cliLogger(cfg);
  const database = await resolveDatabase(cfg, logger, true);
  const db = createDb({ url: database.url, poolMax: 2, logger });
  try {
    return await fn(db, logger);
  } finally {
    await db.destroy();
    await database.stop();
  }
}

/** A comma list: trimmed, empty entries dropped. */
const list = (value: string) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('must be a positive integer');
  return Number(value);
}

/** serve and worker: start, then stop cleanly on SIGTERM/SIGINT (a second signal exits at once). */
async function runUntilSignalled(start: (cfg: Config, logger: Logger) => Promise<RunningWorker>): Promise<void> {
  const cfg = config();
  const logger = createLogger(cfg.logLevel);
  for (const warning of cfg.warnings) logger.warn(warning);
  let running: RunningWorker;
  try {
    running = await start(cfg, logger);
  } catch (err) {
    exitOnConfigError(err);
    logger.fatal({ err }, 'Herald could not start');
    process.exit(1);
  }
  let signals = 0;
  const stop = (signal: string) => {
    signals += 1;
    if (signals > 1) {
      logger.warn('second signal: exiting without waiting');
      running.database.stop().finally(() => process.exit(1));
      return;
    }
    running.shutdown(signal).then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception');
    running.database.stop().finally(() => process.exit(1));
  });
}

/**
 * `herald config check`: the configuration read by the same loadConfig as `serve` (so the same
 * rules and the same messages, secrets never shown), and nothing else: no database, no mail, no
 * file written. "configuration OK" and exit 0 (warnings, such as SMTP_URL ignored beside SMTP_ROUTES, on
 * stderr), or serve's errors and exit 1.
 */
function checkConfig(): void {
  let cfg: Config;
  try {
    cfg = loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
    return;
  }
  for (const warning of cfg.warnings) process.stderr.write(`warning: ${warning}\n`);
  process.stdout.write('configuration OK\n');
}

/** One line per record: purpose, type, host, value (quoted: TXT values have spaces), status. */
function formatRecords(found: DomainRecords): string {
  const lines = found.records.map((r) => `${r.purpose}\t${r.type}\t${r.host}\t${r.type === 'TXT' ? JSON.stringify(r.value) : r.value}\t${r.status}`);
  return `# DNS records for ${found.domain} (purpose, type, host, value, status)\n${lines.join('\n')}\n`;
}

export function buildProgram(): Command {
  const program = new Command('herald').description('Herald: self-hosted email campaigns').version(VERSION);
  program
    .command('serve')
    .description('migrate, seed, then serve the API (what `npm start` runs)')
    .action(() => runUntilSignalled(startServer));
  program
    .command('worker')
    .description('run the delivery worker only (no HTTP); run as many as you like beside `serve`')
    .action(() => runUntilSignalled(startWorker));
  program
    .command('inbound')
    .description('receive bounces and complaints for BOUNCE_DOMAIN by SMTP (INBOUND_SMTP_PORT, default 25)')
    .action(() => runUntilSignalled(startInbound));
  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(() =>
      withDatabase(async (db) => {
        const ran = await migrateLatest(db);
        process.stdout.write(ran.length ? `applied: ${ran.join(', ')}\n` : 'already up to date\n');
      }),
    );
  program
    .command('seed')
    .description('load reference data (reserved fields, templates, geography); safe to repeat')
    .action(() =>
      withDatabase(async (db) => {
        await migrateLatest(db);
        const seeds = await runSeeds(db);
        process.stdout.write(`seeded: ${seeds.join(', ')}\n`);
      }),
    );
  program
    .command('dns')
    .description('print the DNS records to publish for the domain of MAIL_FROM (Herald’s own mail)')
    .option('--check', 'look them up now and print their status')
    .option('--json', 'print {"domain","records"} as JSON')
    .action((opts: { check?: boolean; json?: boolean }) =>
      withDatabase(async (db, logger) => {
        await prepareDatabase(db, logger);
        const cfg = config();
        const domain = signingDomain(cfg.mailFrom);
        const found = opts.check ? await checkRecords(db, cfg, dnsFor(cfg), null, domain) : await domainRecords(db, cfg, null, domain);
        process.stdout.write(opts.json ? `${JSON.stringify(found)}\n` : formatRecords(found));
      }),
    );
  program
    .command('config')
    .description('the configuration (environment variables)')
    .command('check')
    .description('read and check the configuration as `serve` does, touching no database and sending nothing: run it with a new version before restarting')
    .action(checkConfig);
  const account = program.command('account').description('manage accounts and their keys');
  account
    .command('create')
    .description('create an account; prints {"id","public_key","secret_key"} (the secret is shown only here)')
    .requiredOption('--name <name>', 'account name')
    .requiredOption('--email <email>', 'account email')
    .action((opts: { name: string; email: string }) =>
      withDatabase(async (db, logger) => {
        await prepareDatabase(db, logger);
        const created = await createAccount(db, { name: opts.name, email: opts.email });
        process.stdout.write(`${JSON.stringify(created)}\n`);
      }),
    );
  account
    .command('rotate-keys')
    .description('replace an account’s key pair; the old pair stops working at once')
    .requiredOption('--id <id>', 'account id', positiveInt)
    .action((opts: { id: number }) =>
      withDatabase(async (db, logger) => {
        await prepareDatabase(db, logger);
        const rotated = await rotateKeys(db, opts.id, { logger });
        if (!rotated) {
          process.stderr.write(`No account with id ${opts.id}\n`);
          process.exitCode = 1;
          return;
        }
        await recordAudit(db, opts.id, CLI_ACTOR, { action: 'account.keys_rotated', objectKind: 'account', objectId: opts.id, summary: 'new key pair; the old one and every dashboard session ended' });
        process.stdout.write(`${JSON.stringify(rotated)}\n`);
      }),
    );
  account
    .command('routes')
    .description('pin an account to some delivery routes (--routes a,b) or let it use every route (--all); prints {"id","routes"} (null: every route)')
    .requiredOption('--id <id>', 'account id', positiveInt)
    .addOption(new Option('--routes <names>', 'comma-separated route names (SMTP_ROUTES)').conflicts('all'))
    .addOption(new Option('--all', 'unpin: the account may use every route'))
    .action((opts: { id: number; routes?: string; all?: boolean }, cmd: Command) => {
      if (opts.routes === undefined && !opts.all) cmd.error('error: give --routes <names> or --all');
      const names = opts.all ? null : list(opts.routes ?? '');
      return withDatabase(async (db, logger) => {
        await prepareDatabase(db, logger);
        try {
          const routes = await setAccountRoutes(db, config(), opts.id, names);
          process.stdout.write(`${JSON.stringify({ id: opts.id, routes })}\n`);
        } catch (err) {
          if (!(err instanceof PinningError)) throw err;
          process.stderr.write(`${err.message}\n`);
          process.exitCode = 1;
        }
      });
    });
  userCommands(program);
  return program;
}

/** The account exists (stderr and exit code 1 otherwise). */
async function accountExists(db: Knex, id: number): Promise<boolean> {
  if (await db('accounts').where({ id }).first('id')) return true;
  process.stderr.write(`No account with id ${id}\n`);
  process.exitCode = 1;
  return false;
}

function role(value: string): Role {
  if (!isRole(value)) throw new InvalidArgumentError(`must be one of ${ROLES.join(', ')}`);
  return value;
}

/**
 * `herald user list|create|remove --account <id>`: an account's users, for operators. The CLI acts
 * as the owner and writes its changes to the audit log as "operator (CLI)".
 */
function userCommands(program: Command): void {
  const user = program.command('user').description('manage an account’s users (who sign in to the dashboard)');
  user
    .command('list')
    .description('print {"users":[…]}: the account’s users with role and status (never a password or secret)')
    .requiredOption('--account <id>', 'account id', positiveInt)
    .action((opts: { account: number }) =>
      withDatabase(async (db, logger) => {
        await prepareDatabase(db, logger);
        if (!(await accountExists(db, opts.account))) return;
        process.stdout.write(`${JSON.stringify({ users: await listUsers({ userId: opts.account, db }) })}\n`);
      }),
    );
  user
    .command('create')
    .description('add a user; prints {"user","setup_link","expires_at"}: the one-time link (24 hours) where they choose a password')
    .requiredOption('--account <id>', 'account id', positiveInt)
    .requiredOption('--email <email>', 'the address they sign in with')
    .requiredOption('--role <role>', ROLES.join(' | '), role)
    .option('--name <name>', 'display name')
    .action((opts: { account: number; email: string; role: Role; name?: string }, cmd: Command) => {
      if (!isEmail(opts.email.trim())) cmd.error(`error: --email ${JSON.stringify(opts.email)} is not an email address`);
      return withDatabase(async (db, logger) => {
        await prepareDatabase(db, logger);
        if (!(await accountExists(db, opts.account))) return;
        try {
          const made = await createUserWithSetupLink(db, config(), opts.account, { email: opts.email.trim(), name: opts.name, role: opts.role }, CLI_ACTOR);
          process.stdout.write(`${JSON.stringify(made)}\n`);
        } catch (err) {
          if (!(err instanceof MemberError)) throw err;
          process.stderr.write(`${err.message}\n`);
          process.exitCode = 1;
        }
      });
    });
  const byUser = (cmd: Command) =>
    cmd
      .requiredOption('--account <id>', 'account id', positiveInt)
      .addOption(new Option('--id <id>', 'the user’s id').argParser(positiveInt).conflicts('email'))
      .addOption(new Option('--email <email>', 'the user’s address'));
  /** Runs `fn` on the user --id or --email names; a refusal (no such user, the last owner) is stderr and exit code 1. */
  const onUser = (opts: { account: number; id?: number; email?: string }, cmd: Command, fn: (ctx: Ctx, id: number) => Promise<unknown>) => {
    if (opts.id === undefined && opts.email === undefined) cmd.error('error: give --id <id> or --email <email>');
    return withDatabase(async (db, logger) => {
      await prepareDatabase(db, logger);
      if (!(await accountExists(db, opts.account))) return;
      const ctx: Ctx = { userId: opts.account, db, actor: CLI_ACTOR };
      const id = opts.id ?? (await findUserByEmail(ctx, opts.email ?? ''))?.id;
      try {
        if (id === undefined) throw new AppError(404, '');
        process.stdout.write(`${JSON.stringify(await fn(ctx, id))}\n`);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        process.stderr.write(err.status === 404 ? `No such user in account ${opts.account}\n` : `${String(err.errors)}\n`);
        process.exitCode = 1;
      }
    });
  };
  byUser(user.command('remove'))
    .description('remove a user (by --id or --email); their sessions end; prints {"removed":{…}}')
    .action((opts: { account: number; id?: number; email?: string }, cmd: Command) =>
      onUser(opts, cmd, async (ctx, id) => {
        const removed = await ctx.db.transaction(async (trx) => {
          const r = await removeUser(ctx, id, trx);
          await recordAudit(trx, ctx.userId, CLI_ACTOR, { action: 'user.removed', objectKind: 'user', objectId: r.id, summary: `${r.email} (${r.role})` });
          return r;
        });
        return { removed };
      }),
    );
  byUser(user.command('link'))
    .description('a new one-time link for a user: a setup link (24 hours) when they have no password yet, else a password-reset link (1 hour, ends their sessions when used); prints {"user","purpose","link","expires_at"}')
    .action((opts: { account: number; id?: number; email?: string }, cmd: Command) => onUser(opts, cmd, (ctx, id) => newUserLink(ctx, config(), id)));
}

if (require.main === module) {
  buildProgram()
    .parseAsync(process.argv)
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    });
}
