import type { Knex } from 'knex';

/**
 * Waking the workers at once when the API made work for them (a send due now, an automation set
 * live), instead of leaving it to their next poll (WORKER_POLL_MS): PostgreSQL's LISTEN/NOTIFY.
 * Each worker process keeps one listening session (src/delivery/wake-up.ts); the API sends a
 * NOTIFY on its own connection after its transaction committed — from the application, never
 * from a trigger on a tenant table: on Citus such a trigger would fire on the shards, and a
 * worker node refuses to PREPARE a transaction that ran NOTIFY (src/db/citus.ts); the API's own
 * connection is the coordinator's. The poll stays: a wake lost while the session is down costs
 * at most one poll interval, as before.
 */
export const WAKE_CHANNEL = 'herald_worker_wake';

/** What a wake asks for: the loop of the worker (src/delivery/worker.ts) that has work. */
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

