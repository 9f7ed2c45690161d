import crypto from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../logger';

/** Channel on which a change of an account's keys is announced (migration 202611230300: a trigger on `accounts`). */
export const KEYS_CHANNEL = 'herald_account_keys';
/** Channel on which every cache confirms it dropped an account's pairs (rotateKeys waits for these). */
export const KEYS_ACK_CHANNEL = 'herald_account_keys_ack';
/** application_name of the caches' listening sessions, so rotateKeys can count them. */
export const KEYS_LISTENER_APP = 'herald-key-cache';

const TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;
const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;

interface Entry {
  userId: number;
  /** SHA-256 of the secret, as stored in `accounts.secret_key_hash`. */
  digest: Buffer;
  expires: number;
}

export interface KeyCacheOptions {
  url: string;
  logger: Logger;
  ttlMs?: number;
  maxEntries?: number;
}

/**
 * Key pairs this process verified recently, so a request costs no database round trip for its
 * keys (docs/decisions.md, "Key pairs in memory"). Bounded (oldest out first) and each entry
 * lives at most a minute. Correctness rests on PostgreSQL's LISTEN/NOTIFY: a trigger announces
 * every change of an account's keys at commit, the cache drops that account and confirms on
 * KEYS_ACK_CHANNEL, and rotateKeys returns only once every listening cache has confirmed.
 * While the listening session is down, nothing is served from memory (every request asks the
 * database, as without a cache) and the cache starts empty once it listens again.
 */
export class KeyCache {
  private readonly entries = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  /** Bumped by every invalidation: a lookup that raced one does not store its answer. */
  private generation = 0;
  private client?: pg.Client;
  private listening = false;
  private stopped = false;
  private retryTimer?: NodeJS.Timeout;
  private retryMs = RETRY_MIN_MS;

  constructor(private readonly opts: KeyCacheOptions) {
    this.ttlMs = opts.ttlMs ?? TTL_MS;
    this.maxEntries = opts.maxEntries ?? MAX_ENTRIES;
  }

  /** Resolves once listening, or after a failed first attempt (it keeps retrying meanwhile). */
  start(): Promise<void> {
    this.stopped = false;
    return this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    this.entries.clear();
    await client?.end().catch(() => undefined);
  }

  /** True while invalidations reach this process (entries are only served then). */
  get active(): boolean {
    return this.listening;
  }

  /** The listening session's backend pid, while listening (for diagnostics and tests). */
  get sessionPid(): number | undefined {
    return this.listening ? (this.client as unknown as { processID?: number } | undefined)?.processID : undefined;
  }

  /** The account of a pair verified before, or undefined (then ask the database). */
  lookup(publicKey: string, digest: Buffer, now = Date.now()): number | undefined {
    if (!this.listening) return undefined;
    const hit = this.entries.get(publicKey);
    if (!hit) return undefined;
    if (hit.expires <= now) {
      this.entries.delete(publicKey);
      return undefined;
    }
    return crypto.timingSafeEqual(hit.digest, digest) ? hit.userId : undefined;
  }

  /** Call before asking the database; hand the value to remember(). */
  ticket(): number {
    return this.generation;
  }

  /** Keeps a pair the database just verified, unless an invalidation came in meanwhile. */
  remember(publicKey: string, digest: Buffer, userId: number, ticket: number, now = Date.now()): void {
    if (!this.listening || ticket !== this.generation) return;
    if (!this.entries.has(publicKey) && this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(publicKey, { userId, digest, expires: now + this.ttlMs });
  }

  private forget(userId: number): void {
    this.generation += 1;
    for (const [key, entry] of this.entries) if (entry.userId === userId) this.entries.delete(key);
  }

  private clear(): void {
    this.generation += 1;
    this.entries.clear();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({
      connectionString: this.opts.url,
      application_name: KEYS_LISTENER_APP,
      connectionTimeoutMillis: 5000,
      keepAlive: true,
    });
    this.client = client;
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (msg) => {
      if (msg.channel !== KEYS_CHANNEL) return;
      const userId = Number(msg.payload);
      this.forget(userId);
      client.query('SELECT pg_notify($1, $2)', [KEYS_ACK_CHANNEL, String(userId)]).catch((err: unknown) => {
        this.opts.logger.warn({ err, userId }, 'key cache: could not confirm an invalidation');
      });
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${KEYS_CHANNEL}`);
    } catch (err) {
      this.lost(client, err);
      return;
    }
    if (this.client !== client) return;
    // Whatever changed while nobody listened is unknown: start empty.
    this.clear();
    this.listening = true;
    if (this.retryMs > RETRY_MIN_MS) this.opts.logger.info('key cache: listening for key changes again');
    this.retryMs = RETRY_MIN_MS;
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    const wasListening = this.listening;
    this.listening = false;
    this.clear();
    client.end().catch(() => undefined);
    if (this.stopped) return;
    if (wasListening || this.retryMs === RETRY_MIN_MS) {
      this.opts.logger.warn({ err }, 'key cache: not listening for key changes; every request checks its keys in the database until it is back');
    }
    this.retryTimer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
  }
}
