import crypto from 'node:crypto';
import { ListenSession } from '../db/listen';
import type { Logger } from '../logger';

/** Channel on which a change of an account's keys is announced (migration 202611230300: a trigger on `accounts`). */
export const KEYS_CHANNEL = 'herald_account_keys';
/** Channel on which every cache confirms it dropped an account's pairs (rotateKeys waits for these). */
export const KEYS_ACK_CHANNEL = 'herald_account_keys_ack';
/** application_name of the caches' listening sessions, so rotateKeys can count them. */
export const KEYS_LISTENER_APP = 'herald-key-cache';

const TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

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
  private readonly session: ListenSession;

  constructor(opts: KeyCacheOptions) {
    this.ttlMs = opts.ttlMs ?? TTL_MS;
    this.maxEntries = opts.maxEntries ?? MAX_ENTRIES;
    this.session = new ListenSession({
      connection: { connectionString: opts.url },
      applicationName: KEYS_LISTENER_APP,
      channel: KEYS_CHANNEL,
      logger: opts.logger,
      onNotification: (payload, client) => {
        const userId = Number(payload);
        this.forget(userId);
        client.query('SELECT pg_notify($1, $2)', [KEYS_ACK_CHANNEL, String(userId)]).catch((err: unknown) => {
          opts.logger.warn({ err, userId }, 'key cache: could not confirm an invalidation');
        });
      },
      // Whatever changed while nobody listened is unknown: start empty.
      onListening: () => this.clear(),
      onLost: () => this.clear(),
      lostMessage: 'key cache: not listening for key changes; every request checks its keys in the database until it is back',
      backMessage: 'key cache: listening for key changes again',
    });
  }

  /** Resolves once listening, or after a failed first attempt (it keeps retrying meanwhile). */
  start(): Promise<void> {
    return this.session.start();
  }

  async stop(): Promise<void> {
    this.entries.clear();
    await this.session.stop();
  }

  /** True while invalidations reach this process (entries are only served then). */
  get active(): boolean {
    return this.session.listening;
  }

  /** The listening session's backend pid, while listening (for diagnostics and tests). */
  get sessionPid(): number | undefined {
    return this.session.sessionPid;
  }

  private get listening(): boolean {
    return this.session.listening;
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
}
