import type { Knex } from 'knex';
import pg from 'pg';
import type { Logger } from '../logger';
import { WAKE_CHANNEL, type WakeLoop } from '../jobs/wake';

/** application_name of the listening sessions (pg_stat_activity). */
export const WAKE_LISTENER_APP = 'herald-worker-wake';

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;

/** The connection settings of a knex instance made by createDb (src/db/knex.ts), for a session of our own. */
function connectionOf(db: Knex): pg.ClientConfig {
  const connection = (db.client as { config: Knex.Config }).config.connection;
  if (typeof connection === 'string') return { connectionString: connection };
  if (!connection || typeof connection === 'function') throw new Error('wake-up: the database connection settings are not a plain object');
  return { ...(connection as pg.ClientConfig) };
}

/**
 * The worker's side of the wake-ups (src/jobs/wake.ts has the API's, and why): one listening
 * session per worker process, `onWake(loop)` for every wake, and one when it (re)connects. It reconnects with
 * a doubling delay (0.5 s up to 30 s) when the session dies; while it is down the worker polls,
 * as it always does.
 */
export class WakeListener {
  private client?: pg.Client;
  private stopped = true;
  private retryTimer?: NodeJS.Timeout;
  private retryMs = RETRY_MIN_MS;

  constructor(
    private readonly db: Knex,
    private readonly logger: Logger,
    private readonly onWake: (loop: WakeLoop) => void,
  ) {}

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
    await client?.end().catch(() => undefined);
  }

  /** The listening session's backend pid while connected (diagnostics and tests). */
  get sessionPid(): number | undefined {
    return (this.client as unknown as { processID?: number } | undefined)?.processID ?? undefined;
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ ...connectionOf(this.db), application_name: WAKE_LISTENER_APP, keepAlive: true });
    this.client = client;
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (msg) => {
      if (msg.channel === WAKE_CHANNEL && msg.payload === 'housekeeping') this.onWake(msg.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${WAKE_CHANNEL}`);
    } catch (err) {
      this.lost(client, err);
      return;
    }
    if (this.client !== client) return;
    if (this.retryMs > RETRY_MIN_MS) this.logger.info('worker: listening for wake-ups again');
    this.retryMs = RETRY_MIN_MS;
    // Whatever was announced while nobody listened: one round finds it.
    this.onWake('housekeeping');
  }

  private lost(client: pg.Client, err?: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.stopped) return;
    if (this.retryMs === RETRY_MIN_MS) this.logger.warn({ err }, 'worker: not listening for wake-ups; polling every WORKER_POLL_MS until it is back');
    this.retryTimer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
  }
}
