import pg from 'pg';
import type { Logger } from '../logger';

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;

export interface ListenOptions {
  /** Where to connect (a session of its own, outside any pool). */
  connection: pg.ClientConfig;
  /** Its application_name, so it can be found in pg_stat_activity. */
  applicationName: string;
  channel: string;
  logger: Logger;
  /** Each notification on the channel, with the session (to answer on it). */
  onNotification(payload: string, client: pg.Client): void;
  /** Listening (again): whatever was announced while nobody listened is unknown. */
  onListening(): void;
  /** The session died or could not connect; it reconnects by itself. */
  onLost(): void;
  /** Logged (warn) when listening stops, and (info) when it starts again. */
  lostMessage: string;
  backMessage: string;
}

/**
 * A LISTEN session that keeps itself up (the key cache, src/accounts/key-cache.ts; the workers'
 * wake-ups, src/jobs/wake.ts): when it dies or cannot connect it tries again after a delay
 * doubling from 0.5 s to 30 s, and says so once in the log, not at every attempt.
 */
export class ListenSession {
  private client?: pg.Client;
  private up = false;
  private stopped = true;
  private retryTimer?: NodeJS.Timeout;
  private retryMs = RETRY_MIN_MS;

  constructor(private readonly opts: ListenOptions) {}

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
    this.up = false;
    await client?.end().catch(() => undefined);
  }

  /** True while notifications reach this process. */
  get listening(): boolean {
    return this.up;
  }

  /** The listening session's backend pid, while listening (for diagnostics and tests). */
  get sessionPid(): number | undefined {
    return this.up ? (this.client as unknown as { processID?: number } | undefined)?.processID : undefined;
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ ...this.opts.connection, application_name: this.opts.applicationName, connectionTimeoutMillis: 5000, keepAlive: true });
    this.client = client;
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (msg) => {
      if (msg.channel === this.opts.channel) this.opts.onNotification(msg.payload ?? '', client);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.opts.channel}`);
    } catch (err) {
      this.lost(client, err);
      return;
    }
    if (this.client !== client) return;
    this.up = true;
    if (this.retryMs > RETRY_MIN_MS) this.opts.logger.info(this.opts.backMessage);
    this.retryMs = RETRY_MIN_MS;
    this.opts.onListening();
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    const wasUp = this.up;
    this.up = false;
    this.opts.onLost();
    client.end().catch(() => undefined);
    if (this.stopped) return;
    if (wasUp || this.retryMs === RETRY_MIN_MS) this.opts.logger.warn({ err }, this.opts.lostMessage);
    this.retryTimer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
  }
}
