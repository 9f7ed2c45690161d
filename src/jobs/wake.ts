import type { Knex } from 'knex';
import type pg from 'pg';
import { ListenSession } from '../db/listen';
import type { Logger } from '../logger';

/**
 * Wake-ups: how work made in one place reaches a loop of the worker (src/worker/worker.ts) that
 * would otherwise find it only at its next poll. One module, three parts, from the outside in:
 *
 * - `wakeWorkers` — the API's side: a NOTIFY after the commit that made work (a send due now, an
 *   automation set live), heard by every worker process;
 * - `WakeListener` — a worker process's side: its one LISTEN session, which rings the loop named;
 * - `Alarm` — inside one process: a loop's nap that another loop (or the listener) cuts short.
 *
 * The poll stays under all three: a wake lost while the session is down costs at most one poll
 * interval (WORKER_POLL_MS).
 */

/**
 * Waking the workers at once when the API made work for them (a send due now, an automation set
 * live), instead of leaving it to their next poll (WORKER_POLL_MS): PostgreSQL's LISTEN/NOTIFY.
 * Each worker process keeps one listening session (WakeListener, below); the API sends a
 * NOTIFY on its own connection after its transaction committed — from the application, never
 * from a trigger on a tenant table: on Citus such a trigger would fire on the shards, and a
 * worker node refuses to PREPARE a transaction that ran NOTIFY (src/db/citus.ts); the API's own
 * connection is the coordinator's.
 */
export const WAKE_CHANNEL = 'herald_worker_wake';

/** What a wake asks for: the loop of the worker (src/worker/worker.ts) that has work. */
export type WakeLoop = 'housekeeping';

/**
 * Tells every listening worker that `loop` has work. Call after the commit that made it (a
 * NOTIFY inside a transaction would be delivered at its commit anyway, but the caller's
 * transaction may span shards on Citus). Best effort: the caller's work is committed, so a
 * failure here is no failure of the request — the workers find the work at their next poll.
 */
export async function wakeWorkers(db: Knex, loop: WakeLoop): Promise<void> {
  await db.raw('SELECT pg_notify(?, ?)', [WAKE_CHANNEL, loop]).catch(() => undefined);
}

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
 * The worker's side of the wake-ups (wakeWorkers, above, is the API's, and says why): one listening
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

/**
 * A loop's nap that another loop can cut short. A ring while the loop is busy is kept, so
 * the next nap returns at once: news that arrives between "nothing to do" and the nap (a
 * chunk of audience committed just then) is never lost for a whole poll interval.
 */
export class Alarm {
  private pending = false;
  private fire?: () => void;

  ring(): void {
    const fire = this.fire;
    this.fire = undefined;
    if (fire) fire();
    else this.pending = true;
  }

  nap(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.fire = undefined;
        resolve();
      }, ms);
      this.fire = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
