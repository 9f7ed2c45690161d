import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { loadConfig, type Config } from '../../src/config';
import { dnsFor } from '../../src/dns';
import { createLogger } from '../../src/logger';
import type { Mailer } from '../../src/mail/mailer';
import { createMailer } from '../../src/routes/create-mailer';
import { Worker } from '../../src/worker/worker';
import { isolatedUrl, type IsolatedName } from '../setup/isolated';
import { testDatabaseUrl } from './app';
import { startDnsServer, type DnsServer } from './dns';
import { TEST_MASTER_KEY } from './master-key';
import { startSmtpSink, type Accepted, type DataVerdict, type SmtpSink, type Verdict } from './smtp';

/**
 * Relays for the delivery-route tests (issue 36): SMTP sinks (test/helpers/smtp.ts) standing for
 * an operator's relays, each on a port of its own that it keeps across a stop and a restart (in
 * between, a connection is refused, as from a relay that went away). A relay answers what the test
 * tells it to — a throttling text to every other message, a block text to one provider's
 * recipients, at RCPT TO or after DATA —, can hold messages unanswered (a worker then stays
 * mid-batch), and records when each message arrived, across restarts.
 */

/** One answer other than 250 the relay gives, at RCPT TO or after the message's body. */
export interface Answer {
  at: 'rcpt' | 'data';
  code: number;
  message: string;
  /** Only to these recipients (lower-cased). Default: all. */
  to?: (address: string) => boolean;
  /** The nth, 2nth, … message this answer applies to (counted among its recipients): 2 = every other message. Default 1: each. */
  every?: number;
}

export interface Relay {
  readonly name: string;
  readonly port: number;
  /** smtp://127.0.0.1:<port> */
  readonly url: string;
  /** Every message accepted (250 after DATA), in order, across restarts, with its arrival time. */
  readonly accepted: Accepted[];
  /** RCPT TO per address (lower case), accepted or not, across restarts. */
  readonly rcptSeen: Map<string, number>;
  /** Each answer other than 250 it gave: to whom, the code, when. */
  readonly refused: Array<{ to: string; code: number; at: number }>;
  /** The answers it gives, in order (the first that applies wins); the test edits the list. */
  answers: Answer[];
  /** Waits this long before answering each DATA (a slower relay: keeps messages in flight). */
  delayMs: number;
  /** From now on, DATA goes unanswered until release() (the worker stays mid-batch). */
  hold(): void;
  /** Answers every held DATA (250, or the answers') and stops holding; those held across a stop() are never answered. */
  release(): void;
  /** Messages held right now. */
  held(): number;
  running(): boolean;
  /** Stops listening (a new connection is refused); open connections get `421` and are closed 300 ms later. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  /** Recipients it accepted (lower case), each once per message. */
  recipients(): string[];
}

export async function startRelay(name: string): Promise<Relay> {
  const accepted: Accepted[] = [];
  const rcptSeen = new Map<string, number>();
  const refused: Relay['refused'] = [];
  /** Messages counted per answer (its `every`), across restarts. */
  const counted = new Map<Answer, number>();
  let holding = false;
  const waiting = new Set<() => void>();
  let sink: SmtpSink | undefined;
  /** Stops so far: a message that arrived before the last stop is never answered. */
  let lives = 0;

  const answerFor = (stage: Answer['at'], address: string): Answer | undefined => {
    for (const a of relay.answers) {
      if (a.at !== stage || (a.to && !a.to(address))) continue;
      const n = (counted.get(a) ?? 0) + 1;
      counted.set(a, n);
      if (n % (a.every ?? 1) === 0) return a;
    }
    return undefined;
  };
  const refuse = (address: string, a: Answer) => {
    refused.push({ to: address, code: a.code, at: Date.now() });
    return { code: a.code, message: a.message };
  };

  const rcpt = (address: string): Verdict => {
    rcptSeen.set(address, (rcptSeen.get(address) ?? 0) + 1);
    const a = answerFor('rcpt', address);
    return a ? refuse(address, a) : 'accept';
  };
  const data = async (recipients: string[]): Promise<DataVerdict> => {
    const life = lives;
    if (relay.delayMs > 0) await new Promise((r) => setTimeout(r, relay.delayMs));
    if (holding) await new Promise<void>((resolve) => waiting.add(resolve));
    // Stopping or stopped meanwhile: the relay went away without answering (its connections are cut).
    if (!sink || life !== lives) return 'hang';
    const a = answerFor('data', recipients[0]);
    return a ? refuse(recipients[0], a) : 'accept';
  };
  const listen = async (port?: number) => {
    sink = await startSmtpSink({ port, keepMessages: false, rcpt, data, onAccepted: (to, at) => to.forEach((t) => accepted.push({ to: t, messageId: '', at })) });
    return sink.port;
  };
  const port = await listen();
  const relay: Relay = {
    name,
    port,
    url: `smtp://127.0.0.1:${port}`,
    accepted,
    rcptSeen,
    refused,
    answers: [],
    delayMs: 0,
    hold: () => void (holding = true),
    release() {
      holding = false;
      for (const w of waiting) w();
      waiting.clear();
    },
    held: () => waiting.size,
    running: () => sink !== undefined,
    async stop() {
      const s = sink;
      sink = undefined;
      lives += 1;
      await s?.close();
    },
    async start() {
      if (!sink) await listen(port);
    },
    recipients: () => accepted.map((a) => a.to),
  };
  return relay;
}

/**
 * Test domains and the MX hosts that make them one receiving provider or another
 * (src/routes/providers.ts maps MX host suffixes to providers).
 */
export const PROVIDER_DOMAINS = {
  google: { domain: 'gmail-like.test', mx: '5 gmail-smtp-in.l.google.com' },
  microsoft: { domain: 'outlook-like.test', mx: '0 outlook-like-test.mail.protection.outlook.com' },
  yahoo: { domain: 'yahoo-like.test', mx: '1 mta5.am0.yahoodns.net' },
} as const;

/** A route of SMTP_ROUTES, in the document's own (snake_case) fields. */
export interface RouteDoc {
  name: string;
  url: string;
  weight?: number;
  max_per_second?: number;
  max_per_hour?: number;
  max_per_day?: number;
  pool_size?: number;
  streams?: Array<'marketing' | 'system'>;
  warmup?: { start: string; schedule: 'standard' | number[] };
}

/**
 * The configuration of a routed worker: the file's isolated database, as setupApp's, plus `env`
 * (SMTP_ROUTES, DNS_SERVERS, ROUTE_*…). Loaded once the relays listen (their ports are in it).
 */
export function routedConfig(isolated: IsolatedName, env: Record<string, string>): Config {
  return loadConfig({
    DATABASE_URL: isolatedUrl(testDatabaseUrl(), isolated),
    LOG_LEVEL: 'silent',
    DATA_DIR: path.join(os.tmpdir(), `herald-test-${process.pid}`),
    PUBLIC_URL: 'http://herald.test',
    HERALD_MASTER_KEY: TEST_MASTER_KEY,
    RETRY_BASE_MS: '0',
    WORKER_POLL_MS: '50',
    ...env,
  });
}

/** The mailer `herald worker` makes for this configuration: the routed one. */
export function routedMailer(config: Config, db: Knex): Mailer {
  return createMailer(config, { db, logger: createLogger('silent'), dns: dnsFor(config) });
}

export interface RoutedWorker {
  config: Config;
  mailer: Mailer;
  worker: Worker;
  stop(): Promise<void>;
}

/** The worker as `herald worker` runs it, sending through the routes of `config`; stop() as src/server.ts stops it. */
export function startRoutedWorker(config: Config, db: Knex): RoutedWorker {
  const mailer = routedMailer(config, db);
  const worker = new Worker({ config, db, logger: createLogger('silent'), mailer });
  worker.start();
  let stopped: Promise<void> | undefined;
  return {
    config,
    mailer,
    worker,
    stop() {
      stopped ??= (async () => {
        await worker.stop();
        await mailer.close();
      })();
      return stopped;
    },
  };
}

export interface RoutingRig {
  relays: Record<string, Relay>;
  /** The DNS server on loopback answering PROVIDER_DOMAINS' MX records (DNS_SERVERS points at it). */
  dns: DnsServer;
  /** SMTP_ROUTES, DNS_SERVERS and the file's other settings: what a `herald worker` child is given too. */
  env: Record<string, string>;
  /** The in-process worker's configuration (unless `worker: false`). */
  config: Config;
  /** The in-process worker (unless `worker: false`). */
  worker?: RoutedWorker;
  /** Stops the in-process worker (its mailer closed: reservations returned) and starts a new one with `more` settings. */
  restart(more?: Record<string, string>): Promise<void>;
}

/**
 * The preamble of a route test file: a DNS server on loopback with the providers' MX records, the
 * relays, and (unless `worker: false`) the worker as `herald worker` runs it, its routes from
 * `routes` (given the relays' URLs) through SMTP_ROUTES — parsed as at start. Call it BEFORE
 * setupApp: hooks run in the order declared, and the worker must stop before the file's pool closes,
 * the relays after the worker.
 */
export function useRouting(opts: {
  isolated: IsolatedName;
  db: () => Knex;
  relays: string[];
  routes: (relays: Record<string, Relay>) => RouteDoc[];
  env?: Record<string, string>;
  worker?: boolean;
}): RoutingRig {
  const rig = { relays: {} } as RoutingRig;
  beforeAll(async () => {
    rig.dns = await startDnsServer();
    for (const { domain, mx } of Object.values(PROVIDER_DOMAINS)) rig.dns.set(domain, 'MX', [mx]);
    for (const n of opts.relays) rig.relays[n] = await startRelay(n);
    rig.env = { SMTP_ROUTES: JSON.stringify(opts.routes(rig.relays)), DNS_SERVERS: rig.dns.servers, ...opts.env };
    if (opts.worker === false) return;
    rig.config = routedConfig(opts.isolated, rig.env);
    rig.worker = startRoutedWorker(rig.config, opts.db());
  });
  rig.restart = async (more = {}) => {
    await rig.worker?.stop();
    rig.config = routedConfig(opts.isolated, { ...rig.env, ...more });
    rig.worker = startRoutedWorker(rig.config, opts.db());
  };
  afterAll(async () => {
    await rig.worker?.stop();
    for (const r of Object.values(rig.relays)) {
      r.release();
      await r.stop();
    }
    await rig.dns?.close();
  });
  return rig;
}

/** The route's row of route_state (null before its first use). */
export async function routeState(db: Knex, name: string): Promise<Record<string, unknown> | null> {
  return ((await db('route_state').where({ name }).first()) as Record<string, unknown> | undefined) ?? null;
}

/** How many arrivals fall in each 1-second window from the first arrival on. */
export function perSecond(times: number[]): number[] {
  if (!times.length) return [];
  const start = Math.min(...times);
  const windows: number[] = [];
  for (const t of times) {
    const i = Math.floor((t - start) / 1000);
    while (windows.length <= i) windows.push(0);
    windows[i] += 1;
  }
  return windows;
}
