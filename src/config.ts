import { createPublicKey } from 'node:crypto';
import fs from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { parseServers } from './dns';
import { parseRoutesDocument, readRoutesFile, resolveRoutes, type RoutesParse } from './routes/config';

/**
 * Configuration is environment variables only, parsed once here. Each setting is declared once
 * in `settings` below: its Config property, its variable, its schema (type, default, check), and
 * its doc comment. The Config type is inferred from them; the few values that depend on other
 * settings (PUBLIC_URL's default, the lease, MAIL_FROM, …) are computed in `derive`. A bad value
 * stops startup with a message that names the variable (see loadConfig).
 *
 * To add a setting: one line in `settings` — `myThing: setting('MY_THING', intIn(1, 10).default(3))`
 * (`secret(…)` instead of `setting(…)` for a key or password).
 */
const intIn = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, { message: `must be a whole number between ${min} and ${max}` })
    .transform(Number)
    .refine((n) => n >= min && n <= max, { message: `must be a whole number between ${min} and ${max}` });

const flag = z.enum(['0', '1'], { message: 'must be 0 or 1' }).transform((v) => v === '1');

/** A routes document (src/routes/config.ts): each of its problems is one line under the setting's name. */
const routesDocument = (read: (v: string) => RoutesParse) =>
  z.string().transform((v, ctx) => {
    const parsed = read(v);
    if (parsed.routes) return parsed.routes;
    for (const message of parsed.problems) ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  });

/** A URL of one of `protocols`; the message says which part is wrong without repeating the value. */
const url = (protocols: string[]) =>
  z
    .string()
    .trim()
    .superRefine((v, ctx) => {
      const problem = urlProblem(v, protocols);
      if (problem) ctx.addIssue({ code: 'custom', message: problem, continue: false });
    });

function urlProblem(v: string, protocols: string[]): string | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(v)?.[1].toLowerCase();
  if (!scheme || !protocols.includes(`${scheme}:`)) return `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`;
  let parsed: URL;
  try {
    parsed = new URL(v);
  } catch {
    // The scheme is right; tell the port apart from the rest.
    const authority = /^[^:]+:\/\/([^/?#]*)/.exec(v)?.[1] ?? '';
    const credentialsCut = !authority.includes('@') && v.includes('@'); // a / ? # in the password ended the host part
    const port = /^(?:\[[^\]]*\]|[^:[\]]*):(.*)$/.exec(authority.slice(authority.lastIndexOf('@') + 1))?.[1];
    if (!credentialsCut && port !== undefined && !(/^\d{0,5}$/.test(port) && Number(port) <= 65535)) return 'has a port that is not a number from 0 to 65535';
    return 'is not a valid URL (percent-encode any @ : / ? # % in the user name or password)';
  }
  try {
    decodeURIComponent(parsed.username);
    decodeURIComponent(parsed.password);
  } catch {
    return 'has a % in the user name or password that does not start a percent-encoded character (write % as %25)';
  }
  return undefined;
}

/** TRUST_PROXY: '' (off), a hop count, or a list of proxy addresses/ranges as Express's `trust proxy` reads them. */
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const trustProxy = z
  .string()
  .trim()
  .superRefine((v, ctx) => {
    if (v === '' || /^\d{1,2}$/.test(v)) return;
    for (const entry of list(v)) {
      const [address, bits, extra] = entry.split('/');
      const family = isIP(address);
      const okBits = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
      if (PROXY_NAMES.has(entry.toLowerCase()) || (family && okBits && extra === undefined)) continue;
      ctx.addIssue({ code: 'custom', message: `has "${entry.slice(0, 60)}", which is not a hop count, an IP address, a CIDR range, loopback, linklocal or uniquelocal` });
    }
  })
  .transform((v): string | number => (/^\d{1,2}$/.test(v) ? Number(v) : list(v).map((e) => (PROXY_NAMES.has(e.toLowerCase()) ? e.toLowerCase() : e)).join(',')));

const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A comma list, each entry checked by `problem` (a message naming the bad entry, or undefined). */
const listOf = (problem: (entry: string) => string | undefined) =>
  z
    .string()
    .trim()
    .superRefine((v, ctx) => {
      for (const entry of list(v)) {
        const message = problem(entry);
        if (message) ctx.addIssue({ code: 'custom', message });
      }
    })
    .transform(list);

/**
 * One setting: the environment variable it is read from, the schema that checks and converts
 * it, and how an error message shows its value. A `secret` one (a key, a password, a URL that
 * holds one) is never repeated: the message names the variable and the problem only. An
 * `address` (a URL that holds no secret when right) is repeated without anything before an @,
 * where a user name and password would be.
 */
interface Setting<S extends z.ZodType = z.ZodType> {
  name: string;
  schema: S;
  show: (value: string) => string;
}
const setting = <S extends z.ZodType>(name: string, schema: S): Setting<S> => ({ name, schema, show: (v) => `=${JSON.stringify(v)}` });
const secret = <S extends z.ZodType>(name: string, schema: S): Setting<S> => ({ name, schema, show: () => ' (value not shown)' });
const address = <S extends z.ZodType>(name: string, schema: S): Setting<S> => ({
  name,
  schema,
  // Up to the last @: a password may hold an unencoded @ (which is one of the errors to report).
  show: (v) => `=${JSON.stringify(v.replace(/^([a-z][a-z0-9+.-]*:\/\/)?.*@/is, '$1***@'))}`,
});

/** ESP providers Herald takes events from, and whose metadata header it can add to outgoing mail. */
export const ESP_PROVIDERS = ['sendgrid', 'mailgun', 'postmark', 'ses'] as const;
export type EspProvider = (typeof ESP_PROVIDERS)[number];

const settings = {
  port: setting('PORT', intIn(0, 65535).default(3000)),
  host: setting('HOST', z.string().trim().min(1).default('0.0.0.0')),
  databaseUrl: secret('DATABASE_URL', url(['postgres:', 'postgresql:']).optional()),
  dataDir: setting('DATA_DIR', z.string().trim().min(1).default('./data').transform((d) => path.resolve(d))),
  embeddedDbPort: setting('EMBEDDED_DB_PORT', intIn(1, 65535).default(54329)),
  dbPoolMax: setting('DB_POOL_MAX', intIn(1, 500).default(10)),
  smtpUrl: secret('SMTP_URL', url(['smtp:', 'smtps:']).optional()),
  /** Delivery routes (issue 36): a JSON array of relays with weights, quotas, streams, warm-up (src/routes/config.ts); config.routes. */
  smtpRoutes: secret('SMTP_ROUTES', routesDocument(parseRoutesDocument).optional()),
  /** A file holding the same document as SMTP_ROUTES (one or the other). */
  smtpRoutesFile: setting('SMTP_ROUTES_FILE', routesDocument((file) => readRoutesFile(file.trim())).optional()),
  /** Consecutive relay failures (refused, timeout, TLS, login, 421 at connect) after which a route is down. */
  routeDownAfter: setting('ROUTE_DOWN_AFTER', intIn(1, 1000).default(5)),
  /** How often a down route is probed (connect and EHLO). */
  routeProbeSeconds: setting('ROUTE_PROBE_SECONDS', intIn(1, 86_400).default(30)),
  /** How long a throttled route's rate stays halved before it climbs back. */
  routeThrottleMinutes: setting('ROUTE_THROTTLE_MINUTES', intIn(1, 10_080).default(15)),
  /** How long a block holds before the route is tried for that receiving provider again. */
  routeBlockHours: setting('ROUTE_BLOCK_HOURS', intIn(1, 8760).default(24)),
  /** Bearer token of GET /metrics; unset: /metrics is off (404). */
  metricsToken: secret('METRICS_TOKEN', z.string().trim().min(16, { message: 'must be at least 16 characters' }).optional()),
  /** A standalone `herald worker` serves /metrics on this port too (with METRICS_TOKEN). */
  metricsPort: setting('METRICS_PORT', intIn(1, 65535).optional()),
  /**
   * Unset: http://localhost:PORT (see derive). Every link in Herald's mail and the API document
   * start with it, so it may carry no user name or password.
   */
  publicUrl: address(
    'PUBLIC_URL',
    url(['http:', 'https:'])
      .refine((v) => !/^[^:]+:\/\/[^/?#]*@/.test(v), { message: 'must not contain a user name or password: every link in Herald’s mail starts with it' })
      .optional(),
  ),
  sendRate: setting('SEND_RATE', intIn(0, 1_000_000).default(0)),
  worker: setting('WORKER', flag.default(true)),
  logLevel: setting('LOG_LEVEL', z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
  rateLimitPerMinute: setting('RATE_LIMIT_PER_MINUTE', intIn(0, 10_000_000).default(6000)),
  importMaxBytes: setting('IMPORT_MAX_BYTES', intIn(1024, 10 * 1024 ** 3).default(200 * 1024 * 1024)),
  /** How long a CSV import may take once uploaded (its own statement timeout, instead of DB_QUERY_TIMEOUT_MS). */
  importTimeoutMs: setting('IMPORT_TIMEOUT_MS', intIn(1000, 86_400_000).default(3_600_000)),
  bodyLimitBytes: setting('BODY_LIMIT_BYTES', intIn(1024, 1024 ** 3).default(1024 * 1024)),
  designBodyLimitBytes: setting('DESIGN_BODY_LIMIT_BYTES', intIn(1024, 1024 ** 3).default(5 * 1024 * 1024)),
  shutdownTimeoutMs: setting('SHUTDOWN_TIMEOUT_MS', intIn(0, 600_000).default(15_000)),
  dbQueryTimeoutMs: setting('DB_QUERY_TIMEOUT_MS', intIn(0, 3_600_000).default(30_000)),
  smtpPoolSize: setting('SMTP_POOL_SIZE', intIn(1, 100).default(5)),
  smtpTimeoutMs: setting('SMTP_TIMEOUT_MS', intIn(1000, 600_000).default(30_000)),
  /** Messages in flight per worker process. */
  sendConcurrency: setting('SEND_CONCURRENCY', intIn(1, 1000).default(20)),
  /** Recipient rows claimed per batch. */
  sendBatchSize: setting('SEND_BATCH_SIZE', intIn(1, 10_000).default(200)),
  /** First retry delay after a temporary failure; doubles per attempt (capped at 6 h). */
  retryBaseMs: setting('RETRY_BASE_MS', intIn(0, 86_400_000).default(60_000)),
  /** Attempts before a temporarily failing message is given up (counted as a bounce). */
  maxAttempts: setting('MAX_ATTEMPTS', intIn(1, 100).default(8)),
  workerPollMs: setting('WORKER_POLL_MS', intIn(10, 60_000).default(500)),
  /**
   * Messages a second each worker process sends while some send's audience is being written (its
   * fan-out), so the fan-out's INSERT gets the machine (src/delivery/fanout-pace.ts); 0: no pacing
   * (PostgreSQL on a machine of its own, or many tenants whose sends must not wait for another's).
   */
  fanoutSendRate: setting('FANOUT_SEND_RATE', intIn(0, 1_000_000).default(100)),
  /** `process`: SEND_RATE per worker process; `global`: one budget in PostgreSQL shared by all workers. */
  sendRateScope: setting('SEND_RATE_SCOPE', z.enum(['process', 'global'], { message: 'must be process or global' }).default('process')),
  /** How long a claimed recipient row stays a worker's before another may take it over (unset: see derive). */
  sendLeaseMs: setting('SEND_LEASE_MS', intIn(1000, 86_400_000).optional()),
  /** Envelope and From address of Herald's own mail (verification, notifications); unset: see derive. */
  mailFrom: setting(
    'MAIL_FROM',
    z
      .string()
      .trim()
      .regex(/^[^\r\n<>@\s]+@[^\r\n<>@\s]+$/, { message: 'must be an email address', abort: true })
      // Herald signs its own mail for this domain and `herald dns` lists its records: an address has none.
      .refine((v) => !/^\[|^[\d.]+$|:/.test(v.slice(v.indexOf('@') + 1)), { message: 'must be an email address at a domain name, not an IP address' })
      .optional(),
  ),
  /** Events older than this many days are purged by the worker (hourly). */
  eventsRetentionDays: setting('EVENTS_RETENTION_DAYS', intIn(1, 36_500).default(180)),
  /** Audit log entries older than this many days are deleted by the worker (hourly). */
  auditRetentionDays: setting('AUDIT_RETENTION_DAYS', intIn(1, 36_500).default(365)),
  /** Webhook hosts (names or IPs) allowed although they are private or local; never metadata addresses. */
  webhookAllowHosts: setting(
    'WEBHOOK_ALLOW_HOSTS',
    z
      .string()
      .trim()
      .default('')
      .transform((v) => list(v).map((h) => h.toLowerCase().replace(/^\[(.*)\]$/, '$1'))),
  ),
  /** An endpoint whose every attempt failed for this long is disabled. */
  webhookDisableAfterHours: setting('WEBHOOK_DISABLE_AFTER_HOURS', intIn(1, 8760).default(72)),
  /** One webhook request's deadline (connect, send, answer). */
  webhookTimeoutMs: setting('WEBHOOK_TIMEOUT_MS', intIn(100, 600_000).default(10_000)),
  /** First webhook retry delay; doubles per attempt (capped at 8 h). */
  webhookRetryBaseMs: setting('WEBHOOK_RETRY_BASE_MS', intIn(0, 86_400_000).default(30_000)),
  /** Attempts of one batch before it is given up (the defaults retry for ≈ 24.5 h). */
  webhookMaxAttempts: setting('WEBHOOK_MAX_ATTEMPTS', intIn(1, 100).default(13)),
  /** Webhook requests in flight per worker process. */
  webhookConcurrency: setting('WEBHOOK_CONCURRENCY', intIn(1, 1000).default(10)),
  /** First retry delay of a notice the SMTP server refused for now; doubles per attempt (capped at 6 h). */
  notificationRetryBaseMs: setting('NOTIFICATION_RETRY_BASE_MS', intIn(0, 86_400_000).default(60_000)),
  /** Attempts of a notice before it is given up. */
  notificationMaxAttempts: setting('NOTIFICATION_MAX_ATTEMPTS', intIn(1, 100).default(8)),
  /** Notices one worker process mails side by side. */
  notificationConcurrency: setting('NOTIFICATION_CONCURRENCY', intIn(1, 100).default(5)),
  /** Submissions to the public subscribe endpoint per client address per hour (429 past it; 0: no limit). */
  subscribeLimitPerHour: setting('SUBSCRIBE_LIMIT_PER_HOUR', intIn(0, 1_000_000).default(20)),
  /**
   * Which proxies in front of Herald may say who the client is (X-Forwarded-For): empty, nobody (the
   * connection's peer is the client); a number of hops; or a comma list of addresses, CIDR ranges and
   * `loopback`, `linklocal`, `uniquelocal` (Express's `trust proxy`). Used for the client address of
   * the sign-in and subscribe limits and of consent records.
   */
  trustProxy: setting('TRUST_PROXY', trustProxy.default('')),
  /** How long a double opt-in confirmation link works, in hours. */
  optinTokenTtlHours: setting('OPTIN_TOKEN_TTL_HOURS', intIn(1, 8760).default(168)),
  /** Pending (unconfirmed) subscriptions older than this many days are deleted by the worker. */
  optinPendingDays: setting('OPTIN_PENDING_DAYS', intIn(1, 3650).default(14)),
  /** Rewrite the http(s) links of campaign and automation mail to /t/click/… (src/render/links.ts). */
  trackClicks: setting('TRACK_CLICKS', flag.default(true)),
  /** A click this soon after its message was accepted is flagged `suspected_bot` (0: never by time). */
  clickBotWindowSeconds: setting('CLICK_BOT_WINDOW_SECONDS', intIn(0, 86_400).default(10)),
  /** DNS servers Herald asks (sender DNS checks, webhook hosts); empty: the system resolver. */
  dnsServers: setting(
    'DNS_SERVERS',
    z
      .string()
      .trim()
      .default('')
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
      .transform(parseServers),
  ),
  /** Key that encrypts private DKIM keys; unset: DATA_DIR/master.key (made on first use). */
  masterKey: secret(
    'HERALD_MASTER_KEY',
    z
      .string()
      .trim()
      .transform((v, ctx) => masterKeyBytes(v) ?? (ctx.addIssue({ code: 'custom', message: 'must be 32 bytes, as base64 or 64 hex digits' }), z.NEVER))
      .optional(),
  ),
  /** Domain of envelope senders (VERP bounces); unset: no bounce MX or SPF records to publish. */
  bounceDomain: setting('BOUNCE_DOMAIN', z.string().trim().toLowerCase().regex(DOMAIN, { message: 'must be a domain name' }).optional()),
  /** Host that receives bounces (the bounce domain's MX) and the name the inbound SMTP server greets with (unset: see derive). */
  inboundHostname: setting('INBOUND_HOSTNAME', z.string().trim().toLowerCase().regex(DOMAIN, { message: 'must be a host name' }).optional()),
  /** The inbound SMTP server's port (`herald inbound`; `serve` starts it too when set). */
  inboundSmtpPort: setting('INBOUND_SMTP_PORT', intIn(0, 65535).optional()),
  /** Its listen address (unset: HOST). */
  inboundHost: setting('INBOUND_HOST', z.string().trim().min(1).optional()),
  /** PEM files: with both, the inbound server offers STARTTLS. */
  inboundTlsCert: setting('INBOUND_TLS_CERT', z.string().trim().min(1).optional()),
  inboundTlsKey: setting('INBOUND_TLS_KEY', z.string().trim().min(1).optional()),
  /** Largest inbound message accepted (552 above it). */
  inboundMaxBytes: setting('INBOUND_MAX_BYTES', intIn(1024, 100 * 1024 * 1024).default(1024 * 1024)),
  /** Simultaneous inbound SMTP connections. */
  inboundMaxClients: setting('INBOUND_MAX_CLIENTS', intIn(1, 10_000).default(100)),
  /** This many soft bounces of one address within SOFT_BOUNCE_DAYS suppress it. */
  softBounceLimit: setting('SOFT_BOUNCE_LIMIT', intIn(1, 1000).default(3)),
  softBounceDays: setting('SOFT_BOUNCE_DAYS', intIn(1, 3650).default(30)),
  /** Kept bounce and complaint reports are purged after this many days. */
  bounceRetentionDays: setting('BOUNCE_RETENTION_DAYS', intIn(1, 36_500).default(180)),
  // Bounce mailbox (IMAP) and ESP webhooks: README "Deliverability".
  /** `imap[s]://user:pass@host:port/Mailbox` of a mailbox that receives bounces; the worker follows it. */
  bounceImapUrl: secret('BOUNCE_IMAP_URL', url(['imap:', 'imaps:']).optional()),
  /** Where processed bounces and complaints are moved ('/'-separated path; created when missing). */
  bounceImapDoneFolder: setting(
    'BOUNCE_IMAP_DONE_FOLDER',
    z
      .string()
      .trim()
      .min(1)
      .max(200)
      .regex(/^[^\r\n\0*%]+$/, { message: 'must be a folder path' })
      .default('Herald/Processed')
      .transform((f) => f.replace(/^\/+|\/+$/g, '')),
  ),
  /** How often the mailbox is checked when the server has no IDLE (and the longest an IDLE lasts). */
  bounceImapPollMs: setting('BOUNCE_IMAP_POLL_MS', intIn(1000, 86_400_000).default(60_000)),
  /** A PEM file of CA certificates trusted for the IMAP server's certificate besides the system's (a private CA). */
  bounceImapCaFile: setting('BOUNCE_IMAP_CA_FILE', z.string().trim().min(1).refine(readable, { message: 'cannot read that file' }).optional()),
  /** Providers whose metadata header every outgoing message carries (unset: see derive; `none` for none). */
  espMetadataHeaders: setting(
    'ESP_METADATA_HEADERS',
    listOf((p) => (p === 'none' || (ESP_PROVIDERS as readonly string[]).includes(p) ? undefined : `${JSON.stringify(p)} is not one of ${ESP_PROVIDERS.join(', ')}, none`))
      .transform((ps) => ps.filter((p): p is EspProvider => p !== 'none'))
      .optional(),
  ),
  sendgridWebhookPublicKey: setting(
    'SENDGRID_WEBHOOK_PUBLIC_KEY',
    z.string().trim().refine(isPublicKey, { message: 'must be the base64 (or PEM) ECDSA public key SendGrid shows' }).optional(),
  ),
  mailgunWebhookSigningKey: secret('MAILGUN_WEBHOOK_SIGNING_KEY', z.string().trim().min(8, { message: 'must be at least 8 characters' }).optional()),
  /** With POSTMARK_WEBHOOK_PASSWORD: Config.postmarkWebhook (see derive). */
  postmarkWebhookUser: setting('POSTMARK_WEBHOOK_USER', z.string().trim().min(1).optional()),
  postmarkWebhookPassword: secret('POSTMARK_WEBHOOK_PASSWORD', z.string().min(8, { message: 'must be at least 8 characters' }).optional()),
  /** SNS topics whose messages /inbound/ses accepts; empty = the endpoint is off. */
  sesSnsTopicArns: setting(
    'SES_SNS_TOPIC_ARNS',
    listOf((arn) => (/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]+$/.test(arn) ? undefined : `${JSON.stringify(arn)} is not an SNS topic ARN`)).default([]),
  ),
  /**
   * Tests only (honoured when NODE_ENV=test): the certificate SNS messages are checked against,
   * instead of fetching SigningCertURL, and SubscribeURLs on 127.0.0.1 over http are allowed.
   */
  sesSnsTestCertPem: setting('SES_SNS_TEST_CERT_PEM', z.string().optional()),
  /** A dashboard session unused for this long is over (signed out). */
  dashboardSessionIdleMinutes: setting('DASHBOARD_SESSION_IDLE_MINUTES', intIn(1, 525_600).default(720)),
  /** A dashboard session ends this long after its sign-in, however busy (besides the idle expiry). */
  dashboardSessionMaxHours: setting('DASHBOARD_SESSION_MAX_HOURS', intIn(1, 87_600).default(168)),
};

type Settings = typeof settings;

const schema = z.object(
  Object.fromEntries(Object.entries(settings).map(([key, s]) => [key, s.schema])) as { [K in keyof Settings]: Settings[K]['schema'] },
);
type Parsed = z.output<typeof schema>;

/** The values that depend on other settings or on the environment beyond Herald's variables. */
function derive(s: Parsed, env: NodeJS.ProcessEnv) {
  const { postmarkWebhookUser, postmarkWebhookPassword, smtpRoutes, smtpRoutesFile, ...rest } = s;
  const host = publicHost(s.publicUrl ?? 'http://localhost');
  const { routes, warnings } = resolveRoutes({ smtpUrl: s.smtpUrl, smtpRoutes, smtpRoutesFile, smtpPoolSize: s.smtpPoolSize });
  return {
    ...rest,
    /** The delivery routes: SMTP_ROUTES(_FILE), else SMTP_URL as route `default`, else none (the outbox). */
    routes,
    /** Settings that are allowed but probably not meant (SMTP_URL beside SMTP_ROUTES): `serve` and `worker` log them at start. */
    warnings,
    publicUrl: (s.publicUrl ?? `http://localhost:${s.port}`).replace(/\/+$/, ''),
    // Longer than any one SMTP conversation can take, unless set.
    sendLeaseMs: s.sendLeaseMs ?? Math.max(60_000, s.smtpTimeoutMs * 3),
    // An IP address has no domain to sign for or publish records in: like localhost, it gets a placeholder.
    mailFrom: s.mailFrom ?? `herald@${host === 'localhost' || isIP(host) ? 'localhost.localdomain' : host}`,
    inboundHostname: s.inboundHostname ?? host,
    inboundHost: s.inboundHost ?? s.host,
    espMetadataHeaders: s.espMetadataHeaders ?? configuredProviders(s),
    postmarkWebhook: postmarkWebhookUser && postmarkWebhookPassword ? { user: postmarkWebhookUser, password: postmarkWebhookPassword } : undefined,
    sesSnsTestCertPem: env.NODE_ENV === 'test' ? s.sesSnsTestCertPem : undefined,
  };
}

export type Config = ReturnType<typeof derive>;

/** PUBLIC_URL's host: a name, or an address without IPv6's brackets. */
const publicHost = (publicUrl: string) => new URL(publicUrl).hostname.replace(/^\[(.*)\]$/, '$1');
const ipHost = (publicUrl: string | undefined) => publicUrl !== undefined && isIP(publicHost(publicUrl)) > 0;

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

export class ConfigError extends Error {}

/** Reads the environment once; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means "not set", as in most twelve-factor tools.
  const present = Object.fromEntries(
    Object.entries(settings)
      .filter(([, s]) => env[s.name] !== undefined && env[s.name] !== '')
      .map(([key, s]) => [key, env[s.name]]),
  );
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const { name, show } = settings[i.path[0] as keyof Settings] as Setting;
      return `  ${name}${show(env[name] ?? '')}: ${i.message}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const problems = combinationProblems(parsed.data);
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  // Every property present, unset ones as undefined (zod leaves them out).
  const unset = Object.fromEntries(Object.keys(settings).map((key) => [key, undefined]));
  return derive({ ...unset, ...parsed.data }, env);
}

/** Settings that are only wrong together. */
function combinationProblems(s: Parsed): string[] {
  const out: string[] = [];
  if (s.inboundSmtpPort !== undefined && !s.bounceDomain)
    out.push('INBOUND_SMTP_PORT needs BOUNCE_DOMAIN: the inbound SMTP server receives the bounces sent to that domain');
  if (s.bounceDomain && !s.inboundHostname && ipHost(s.publicUrl))
    out.push("BOUNCE_DOMAIN needs INBOUND_HOSTNAME when PUBLIC_URL's host is an IP address: the bounce domain's MX record names a host");
  if (Boolean(s.inboundTlsCert) !== Boolean(s.inboundTlsKey)) out.push('INBOUND_TLS_CERT and INBOUND_TLS_KEY: set both (STARTTLS) or neither');
  if (Boolean(s.postmarkWebhookUser) !== Boolean(s.postmarkWebhookPassword)) out.push('POSTMARK_WEBHOOK_USER / POSTMARK_WEBHOOK_PASSWORD: set both or neither');
  if (s.smtpRoutes && s.smtpRoutesFile) out.push('SMTP_ROUTES and SMTP_ROUTES_FILE: set one or the other');
  if (s.metricsPort !== undefined && !s.metricsToken) out.push('METRICS_PORT needs METRICS_TOKEN: /metrics is off without its token');
  return out;
}

/**
 * The metadata headers that go on every message when ESP_METADATA_HEADERS is unset: those of the
 * providers whose webhook is configured — a provider whose events Herald reads is a provider
 * Herald sends through, and nobody else's header costs bytes.
 */
function configuredProviders(s: Parsed): EspProvider[] {
  const configured: Record<EspProvider, boolean> = {
    sendgrid: Boolean(s.sendgridWebhookPublicKey),
    mailgun: Boolean(s.mailgunWebhookSigningKey),
    postmark: Boolean(s.postmarkWebhookUser && s.postmarkWebhookPassword),
    ses: s.sesSnsTopicArns.length > 0,
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
