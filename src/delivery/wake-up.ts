import type { Knex } from 'knex';
import type pg from 'pg';
import { ListenSession } from '../db/listen';
import type { Logger } from '../logger';
import { WAKE_CHANNEL, type WakeLoop } from '../jobs/wake';

/** application_name of the listening sessions (pg_stat_activity). */
export const WAKE_LISTENER_APP = 'herald-worker-wake';

/** The connection settings of a knex instance made by createDb (src/db/knex.ts), for a session of our own. */
function connectionOf(db: Knex): pg.ClientConfig {
  const connection = (db.client as { config: Knex.Config }).config.connection;
  if (typeof connection === 'string') return { connectionString: connection };
  if (!connection || typeof connection === 'function') throw new Error('wake-up: the database connection settings are not a plain object');
  return { ...(connection as pg.ClientConfig) };
}

/**
 * The worker's side of the wake-ups (src/jobs/wake.ts has the API's, and why): one listening
 * session per worker process (src/db/listen.ts: it reconnects by itself), `onWake(loop)` for
 * every wake, and once more each time it (re)connects — wakes sent while it was down are lost,
 * and one round finds their work. While it is down the worker polls, as it always does.
 */
export class WakeListener {
  private readonly session: ListenSession;

  constructor(db: Knex, logger: Logger, onWake: (loop: WakeLoop) => void) {
    this.session = new ListenSession({
      connection: connectionOf(db),
      applicationName: WAKE_LISTENER_APP,
      channel: WAKE_CHANNEL,
      logger,
      onNotification: (payload) => {
        if (payload === 'housekeeping') onWake(payload);
      },
      onListening: () => onWake('housekeeping'),
      onLost: () => undefined,
      lostMessage: 'worker: not listening for wake-ups; polling every WORKER_POLL_MS until it is back',
      backMessage: 'worker: listening for wake-ups again',
    });
  }

  start(): Promise<void> {
    return this.session.start();
  }

  stop(): Promise<void> {
    return this.session.stop();
  }
}
