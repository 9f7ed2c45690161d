import { createPublicKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseServers } from './dns';

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

const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

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
  TRACK_CLICKS: flag.default(true),
  CLICK_BOT_WINDOW_SECONDS: intIn(0, 86_400).default(10),
  DNS_SERVERS: z
    .string()
    .trim()
    .refine(
      (v) => {
        try {
          parseServers(v);
          return true;
        } catch {
          return false;
        }
      },
      { message: 'must be a comma list of host:port (IPv6 as [addr]:port)' },
    )
    .optional(),
  HERALD_MASTER_KEY: z
    .string()
    .trim()
    .refine((v) => masterKeyBytes(v) !== undefined, { message: 'must be 32 bytes, as base64 or 64 hex digits' })
    .optional(),
  BOUNCE_DOMAIN: z.string().trim().toLowerCase().regex(DOMAIN, { message: 'must be a domain name' }).optional(),
  INBOUND_HOSTNAME: z.string().trim().toLowerCase().regex(DOMAIN, { message: 'must be a host name' }).optional(),
  INBOUND_SMTP_PORT: intIn(0, 65535).optional(),
  INBOUND_HOST: z.string().trim().min(1).optional(),
  INBOUND_TLS_CERT: z.string().trim().min(1).optional(),
  INBOUND_TLS_KEY: z.string().trim().min(1).optional(),
  INBOUND_MAX_BYTES: intIn(1024, 100 * 1024 * 1024).default(1024 * 1024),
  INBOUND_MAX_CLIENTS: intIn(1, 10_000).default(100),
  SOFT_BOUNCE_LIMIT: intIn(1, 1000).default(3),
  SOFT_BOUNCE_DAYS: intIn(1, 3650).default(30),
  BOUNCE_RETENTION_DAYS: intIn(1, 36_500).default(180),
  // Bounce mailbox (IMAP) and ESP webhooks: README "Deliverability".
  BOUNCE_IMAP_URL: url(['imap:', 'imaps:']).optional(),
  BOUNCE_IMAP_DONE_FOLDER: z.string().trim().min(1).max(200).regex(/^[^\r\n\0*%]+$/, { message: 'must be a folder path' }).default('Herald/Processed'),
  BOUNCE_IMAP_POLL_MS: intIn(1000, 86_400_000).default(60_000),
  BOUNCE_IMAP_CA_FILE: z.string().trim().min(1).optional(),
  ESP_METADATA_HEADERS: z.string().trim().optional(),
  SENDGRID_WEBHOOK_PUBLIC_KEY: z.string().trim().refine(isPublicKey, { message: 'must be the base64 (or PEM) ECDSA public key SendGrid shows' }).optional(),
  MAILGUN_WEBHOOK_SIGNING_KEY: z.string().trim().min(8).optional(),
  POSTMARK_WEBHOOK_USER: z.string().trim().min(1).optional(),
  POSTMARK_WEBHOOK_PASSWORD: z.string().min(8, { message: 'must be at least 8 characters' }).optional(),
  SES_SNS_TOPIC_ARNS: z.string().trim().optional(),
  SES_SNS_TEST_CERT_PEM: z.string().optional(),
  DASHBOARD_SESSION_IDLE_MINUTES: intIn(1, 525_600).default(720),
});

/** HERALD_MASTER_KEY as bytes: 64 hex digits or base64 of exactly 32 bytes. */
function masterKeyBytes(text: string): Buffer | undefined {
  if (/^[0-9a-f]{64}$/i.test(text)) return Buffer.from(text, 'hex');
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) return undefined;
  const b = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return b.length === 32 ? b : undefined;
}

/** A SendGrid verification key: base64 of an SPKI DER key, or the same as PEM. */
function isPublicKey(v: string): boolean {
  try {
    parsePublicKey(v);
    return true;
  } catch {
    return false;
  }
}

export function parsePublicKey(v: string) {
  return v.includes('-----BEGIN')
    ? createPublicKey(v)
    : createPublicKey({ key: Buffer.from(v.replace(/\s+/g, ''), 'base64'), format: 'der', type: 'spki' });
}

/** ESP providers Herald takes events from, and whose metadata header it can add to outgoing mail. */
export const ESP_PROVIDERS = ['sendgrid', 'mailgun', 'postmark', 'ses'] as const;
export type EspProvider = (typeof ESP_PROVIDERS)[number];

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
  /** Rewrite the http(s) links of campaign and automation mail to /t/click/… (src/delivery/links.ts). */
  trackClicks: boolean;
  /** A click this soon after its message was accepted is flagged `suspected_bot` (0: never by time). */
  clickBotWindowSeconds: number;
  /** DNS servers Herald asks (sender DNS checks, webhook hosts); empty: the system resolver. */
  dnsServers: string[];
  /** Key that encrypts private DKIM keys; unset: DATA_DIR/master.key (made on first use). */
  masterKey?: Buffer;
  /** Domain of envelope senders (VERP bounces); unset: no bounce MX or SPF records to publish. */
  bounceDomain?: string;
  /** Host that receives bounces (the bounce domain's MX) and the name the inbound SMTP server greets with. */
  inboundHostname: string;
  /** The inbound SMTP server's port (`herald inbound`; `serve` starts it too when set). */
  inboundSmtpPort?: number;
  /** Its listen address (default HOST). */
  inboundHost: string;
  /** PEM files: with both, the inbound server offers STARTTLS. */
  inboundTlsCert?: string;
  inboundTlsKey?: string;
  /** Largest inbound message accepted (552 above it). */
  inboundMaxBytes: number;
  /** Simultaneous inbound SMTP connections. */
  inboundMaxClients: number;
  /** This many soft bounces of one address within SOFT_BOUNCE_DAYS suppress it. */
  softBounceLimit: number;
  softBounceDays: number;
  /** Kept bounce and complaint reports are purged after this many days. */
  bounceRetentionDays: number;
  /** `imap[s]://user:pass@host:port/Mailbox` of a mailbox that receives bounces; the worker follows it. */
  bounceImapUrl?: string;
  /** Where processed bounces and complaints are moved ('/'-separated path; created when missing). */
  bounceImapDoneFolder: string;
  /** How often the mailbox is checked when the server has no IDLE (and the longest an IDLE lasts). */
  bounceImapPollMs: number;
  /** A PEM file of CA certificates trusted for the IMAP server's certificate besides the system's (a private CA). */
  bounceImapCaFile?: string;
  /** Providers whose metadata header every outgoing message carries (default: those with a webhook configured). */
  espMetadataHeaders: EspProvider[];
  sendgridWebhookPublicKey?: string;
  mailgunWebhookSigningKey?: string;
  postmarkWebhook?: { user: string; password: string };
  /** SNS topics whose messages /inbound/ses accepts; empty = the endpoint is off. */
  sesSnsTopicArns: string[];
  /**
   * Tests only (honoured when NODE_ENV=test): the certificate SNS messages are checked against,
   * instead of fetching SigningCertURL, and SubscribeURLs on 127.0.0.1 over http are allowed.
   */
  sesSnsTestCertPem?: string;
  /** A dashboard session unused for this long is over (signed out). */
  dashboardSessionIdleMinutes: number;
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
  if (Boolean(c.INBOUND_TLS_CERT) !== Boolean(c.INBOUND_TLS_KEY)) {
    throw new ConfigError('Invalid configuration:\n  INBOUND_TLS_CERT and INBOUND_TLS_KEY: set both (STARTTLS) or neither');
  }
  if (c.BOUNCE_IMAP_CA_FILE && !readable(c.BOUNCE_IMAP_CA_FILE)) {
    throw new ConfigError(`Invalid configuration:\n  BOUNCE_IMAP_CA_FILE=${JSON.stringify(c.BOUNCE_IMAP_CA_FILE)}: cannot read that file`);
  }
  const espProblems = espSettingProblems(c, env);
  if (espProblems.length) throw new ConfigError(`Invalid configuration:\n${espProblems.join('\n')}`);
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
    trackClicks: c.TRACK_CLICKS,
    clickBotWindowSeconds: c.CLICK_BOT_WINDOW_SECONDS,
    dnsServers: c.DNS_SERVERS ? parseServers(c.DNS_SERVERS) : [],
    masterKey: c.HERALD_MASTER_KEY ? masterKeyBytes(c.HERALD_MASTER_KEY) : undefined,
    bounceDomain: c.BOUNCE_DOMAIN,
    inboundHostname: c.INBOUND_HOSTNAME ?? new URL(c.PUBLIC_URL ?? 'http://localhost').hostname,
    inboundSmtpPort: c.INBOUND_SMTP_PORT,
    inboundHost: c.INBOUND_HOST ?? c.HOST,
    inboundTlsCert: c.INBOUND_TLS_CERT,
    inboundTlsKey: c.INBOUND_TLS_KEY,
    inboundMaxBytes: c.INBOUND_MAX_BYTES,
    inboundMaxClients: c.INBOUND_MAX_CLIENTS,
    softBounceLimit: c.SOFT_BOUNCE_LIMIT,
    softBounceDays: c.SOFT_BOUNCE_DAYS,
    bounceRetentionDays: c.BOUNCE_RETENTION_DAYS,
    bounceImapUrl: c.BOUNCE_IMAP_URL,
    bounceImapDoneFolder: c.BOUNCE_IMAP_DONE_FOLDER.replace(/^\/+|\/+$/g, ''),
    bounceImapPollMs: c.BOUNCE_IMAP_POLL_MS,
    bounceImapCaFile: c.BOUNCE_IMAP_CA_FILE,
    espMetadataHeaders: espMetadataHeaders(c),
    sendgridWebhookPublicKey: c.SENDGRID_WEBHOOK_PUBLIC_KEY,
    mailgunWebhookSigningKey: c.MAILGUN_WEBHOOK_SIGNING_KEY,
    postmarkWebhook:
      c.POSTMARK_WEBHOOK_USER && c.POSTMARK_WEBHOOK_PASSWORD ? { user: c.POSTMARK_WEBHOOK_USER, password: c.POSTMARK_WEBHOOK_PASSWORD } : undefined,
    sesSnsTopicArns: list(c.SES_SNS_TOPIC_ARNS),
    sesSnsTestCertPem: env.NODE_ENV === 'test' ? c.SES_SNS_TEST_CERT_PEM : undefined,
    dashboardSessionIdleMinutes: c.DASHBOARD_SESSION_IDLE_MINUTES,
  };
}

const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

type Parsed = z.infer<typeof schema>;

/** Settings that are only wrong together. */
function espSettingProblems(c: Parsed, env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  if (Boolean(c.POSTMARK_WEBHOOK_USER) !== Boolean(c.POSTMARK_WEBHOOK_PASSWORD))
    out.push('  POSTMARK_WEBHOOK_USER / POSTMARK_WEBHOOK_PASSWORD: set both or neither');
  for (const arn of list(c.SES_SNS_TOPIC_ARNS))
    if (!/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]+$/.test(arn)) out.push(`  SES_SNS_TOPIC_ARNS=${JSON.stringify(env.SES_SNS_TOPIC_ARNS)}: ${JSON.stringify(arn)} is not an SNS topic ARN`);
  for (const p of list(c.ESP_METADATA_HEADERS))
    if (p !== 'none' && !(ESP_PROVIDERS as readonly string[]).includes(p))
      out.push(`  ESP_METADATA_HEADERS=${JSON.stringify(env.ESP_METADATA_HEADERS)}: ${JSON.stringify(p)} is not one of ${ESP_PROVIDERS.join(', ')}, none`);
  return out;
}

/**
 * Which metadata headers go on every message: ESP_METADATA_HEADERS when set (`none` for none),
 * otherwise those of the providers whose webhook is configured — a provider whose events
 * Herald reads is a provider Herald sends through, and nobody else's header costs bytes.
 */
function espMetadataHeaders(c: Parsed): EspProvider[] {
  if (c.ESP_METADATA_HEADERS !== undefined) return list(c.ESP_METADATA_HEADERS).filter((p): p is EspProvider => p !== 'none');
  const configured: Record<EspProvider, boolean> = {
    sendgrid: Boolean(c.SENDGRID_WEBHOOK_PUBLIC_KEY),
    mailgun: Boolean(c.MAILGUN_WEBHOOK_SIGNING_KEY),
    postmark: Boolean(c.POSTMARK_WEBHOOK_USER && c.POSTMARK_WEBHOOK_PASSWORD),
    ses: list(c.SES_SNS_TOPIC_ARNS).length > 0,
  };
  return ESP_PROVIDERS.filter((p) => configured[p]);
}

function readable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
