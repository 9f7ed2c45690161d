import path from 'node:path';
import { z } from 'zod';

/**
 * Configuration is environment variables only, parsed once here. A bad value stops
 * startup with a message that names the variable (see loadConfig).
 */
const intIn = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, { message: `must be a whole number between ${min} and ${max}` })
    .transform(Number)
    .refine((n) => n >= min && n <= max, { message: `must be a whole number between ${min} and ${max}` });

const flag = z.enum(['0', '1'], { message: 'must be 0 or 1' }).transform((v) => v === '1');

const url = (protocols: string[]) =>
  z
    .string()
    .trim()
    .refine(
      (v) => {
        try {
          return protocols.includes(new URL(v).protocol);
        } catch {
          return false;
        }
      },
      { message: `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}` },
    );

const schema = z.object({
  PORT: intIn(0, 65535).default(3000),
  HOST: z.string().trim().min(1).default('0.0.0.0'),
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  DATA_DIR: z.string().trim().min(1).default('./data'),
  EMBEDDED_DB_PORT: intIn(1, 65535).default(54329),
  DB_POOL_MAX: intIn(1, 500).default(10),
  SMTP_URL: url(['smtp:', 'smtps:']).optional(),
  PUBLIC_URL: url(['http:', 'https:']).optional(),
  SEND_RATE: intIn(0, 1_000_000).default(0),
  WORKER: flag.default(true),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  RATE_LIMIT_PER_MINUTE: intIn(0, 10_000_000).default(6000),
  IMPORT_MAX_BYTES: intIn(1024, 10 * 1024 ** 3).default(200 * 1024 * 1024),
  IMPORT_TIMEOUT_MS: intIn(1000, 86_400_000).default(3_600_000),
  BODY_LIMIT_BYTES: intIn(1024, 1024 ** 3).default(1024 * 1024),
  DESIGN_BODY_LIMIT_BYTES: intIn(1024, 1024 ** 3).default(5 * 1024 * 1024),
  SHUTDOWN_TIMEOUT_MS: intIn(0, 600_000).default(15_000),
  DB_QUERY_TIMEOUT_MS: intIn(0, 3_600_000).default(30_000),
  SMTP_POOL_SIZE: intIn(1, 100).default(5),
  SMTP_TIMEOUT_MS: intIn(1000, 600_000).default(30_000),
  SEND_CONCURRENCY: intIn(1, 1000).default(20),
  SEND_BATCH_SIZE: intIn(1, 10_000).default(200),
  RETRY_BASE_MS: intIn(0, 86_400_000).default(60_000),
  MAX_ATTEMPTS: intIn(1, 100).default(8),
  WORKER_POLL_MS: intIn(10, 60_000).default(500),
  SEND_RATE_SCOPE: z.enum(['process', 'global'], { message: 'must be process or global' }).default('process'),
  SEND_LEASE_MS: intIn(1000, 86_400_000).optional(),
  MAIL_FROM: z.string().trim().regex(/^[^\r\n<>@\s]+@[^\r\n<>@\s]+$/, { message: 'must be an email address' }).optional(),
  EVENTS_RETENTION_DAYS: intIn(1, 36_500).default(180),
  WEBHOOK_ALLOW_HOSTS: z.string().trim().default(''),
  WEBHOOK_DISABLE_AFTER_HOURS: intIn(1, 8760).default(72),
  WEBHOOK_TIMEOUT_MS: intIn(100, 600_000).default(10_000),
  WEBHOOK_RETRY_BASE_MS: intIn(0, 86_400_000).default(30_000),
  WEBHOOK_MAX_ATTEMPTS: intIn(1, 100).default(13),
  WEBHOOK_CONCURRENCY: intIn(1, 1000).default(10),
});

export interface Config {
  port: number;
  host: string;
  databaseUrl?: string;
  dataDir: string;
  embeddedDbPort: number;
  dbPoolMax: number;
  smtpUrl?: string;
  publicUrl: string;
  sendRate: number;
  worker: boolean;
  logLevel: string;
  rateLimitPerMinute: number;
  importMaxBytes: number;
  /** How long a CSV import may take once uploaded (its own statement timeout, instead of DB_QUERY_TIMEOUT_MS). */
  importTimeoutMs: number;
  bodyLimitBytes: number;
  designBodyLimitBytes: number;
  shutdownTimeoutMs: number;
  dbQueryTimeoutMs: number;
  smtpPoolSize: number;
  smtpTimeoutMs: number;
  /** Messages in flight per worker process. */
  sendConcurrency: number;
  /** Recipient rows claimed per batch. */
  sendBatchSize: number;
  /** First retry delay after a temporary failure; doubles per attempt (capped at 6 h). */
  retryBaseMs: number;
  /** Attempts before a temporarily failing message is given up (counted as a bounce). */
  maxAttempts: number;
  workerPollMs: number;
  /** `process`: SEND_RATE per worker process; `global`: one budget in PostgreSQL shared by all workers. */
  sendRateScope: 'process' | 'global';
  /** How long a claimed recipient row stays a worker's before another may take it over. */
  sendLeaseMs: number;
  /** Envelope and From address of Herald's own mail (verification, notifications). */
  mailFrom: string;
  /** Events older than this many days are purged by the worker (hourly). */
  eventsRetentionDays: number;
  /** Webhook hosts (names or IPs) allowed although they are private or local; never metadata addresses. */
  webhookAllowHosts: string[];
  /** An endpoint whose every attempt failed for this long is disabled. */
  webhookDisableAfterHours: number;
  /** One webhook request's deadline (connect, send, answer). */
  webhookTimeoutMs: number;
  /** First webhook retry delay; doubles per attempt (capped at 8 h). */
  webhookRetryBaseMs: number;
  /** Attempts of one batch before it is given up (the defaults retry for ≈ 24.5 h). */
  webhookMaxAttempts: number;
  /** Webhook requests in flight per worker process. */
  webhookConcurrency: number;
}

export class ConfigError extends Error {}

/** Reads the environment once; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means "not set", as in most twelve-factor tools.
  const present = Object.fromEntries(
    Object.keys(schema.shape)
      .filter((k) => env[k] !== undefined && env[k] !== '')
      .map((k) => [k, env[k]]),
  );
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const name = String(i.path[0]);
      return `  ${name}=${JSON.stringify(env[name] ?? '')}: ${i.message}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  return {
    port: c.PORT,
    host: c.HOST,
    databaseUrl: c.DATABASE_URL,
    dataDir: path.resolve(c.DATA_DIR),
    embeddedDbPort: c.EMBEDDED_DB_PORT,
    dbPoolMax: c.DB_POOL_MAX,
    smtpUrl: c.SMTP_URL,
    publicUrl: (c.PUBLIC_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, ''),
    sendRate: c.SEND_RATE,
    worker: c.WORKER,
    logLevel: c.LOG_LEVEL,
    rateLimitPerMinute: c.RATE_LIMIT_PER_MINUTE,
    importMaxBytes: c.IMPORT_MAX_BYTES,
    importTimeoutMs: c.IMPORT_TIMEOUT_MS,
    bodyLimitBytes: c.BODY_LIMIT_BYTES,
    designBodyLimitBytes: c.DESIGN_BODY_LIMIT_BYTES,
    shutdownTimeoutMs: c.SHUTDOWN_TIMEOUT_MS,
    dbQueryTimeoutMs: c.DB_QUERY_TIMEOUT_MS,
    smtpPoolSize: c.SMTP_POOL_SIZE,
    smtpTimeoutMs: c.SMTP_TIMEOUT_MS,
    sendConcurrency: c.SEND_CONCURRENCY,
    sendBatchSize: c.SEND_BATCH_SIZE,
    retryBaseMs: c.RETRY_BASE_MS,
    maxAttempts: c.MAX_ATTEMPTS,
    workerPollMs: c.WORKER_POLL_MS,
    sendRateScope: c.SEND_RATE_SCOPE,
    // Longer than any one SMTP conversation can take, unless set.
    sendLeaseMs: c.SEND_LEASE_MS ?? Math.max(60_000, c.SMTP_TIMEOUT_MS * 3),
    mailFrom: c.MAIL_FROM ?? `herald@${new URL(c.PUBLIC_URL ?? 'http://localhost').hostname.replace(/^localhost$/, 'localhost.localdomain')}`,
    eventsRetentionDays: c.EVENTS_RETENTION_DAYS,
    webhookAllowHosts: c.WEBHOOK_ALLOW_HOSTS.split(',')
      .map((h) => h.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1'))
      .filter(Boolean),
    webhookDisableAfterHours: c.WEBHOOK_DISABLE_AFTER_HOURS,
    webhookTimeoutMs: c.WEBHOOK_TIMEOUT_MS,
    webhookRetryBaseMs: c.WEBHOOK_RETRY_BASE_MS,
    webhookMaxAttempts: c.WEBHOOK_MAX_ATTEMPTS,
    webhookConcurrency: c.WEBHOOK_CONCURRENCY,
  };
}
