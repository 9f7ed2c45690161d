import type { Knex } from 'knex';

/**
 * The CSV imports running on a database pool, so that shutdown can stop one whose statement
 * would outlast SHUTDOWN_TIMEOUT_MS (issue 18: a merge waiting on a lock, or planned badly,
 * kept `herald serve` from exiting). Stopping one: its `stopReason` is set (the import checks
 * it before each statement and reports it as its error) and the statement its connection runs
 * is cancelled (pg_cancel_backend: the same role may cancel its own sessions). The import then
 * rolls back and closes its record as failed with that reason, as any failed import does.
 */
export interface RunningImport {
  /** Set when the import must stop; the import's error then says why. */
  stopReason?: string;
  /** The backend of the import's own connection while it holds one, else undefined. */
  backendPid?: number;
}

interface Registry {
  running: Set<RunningImport>;
  /** Once set, an import that starts is stopped at once. */
  stopping?: string;
}

const registries = new WeakMap<Knex, Registry>();

function registryOf(db: Knex): Registry {
  let r = registries.get(db);
  if (!r) {
    r = { running: new Set() };
    registries.set(db, r);
  }
  return r;
}

/** Adds an import to its pool's running imports; the returned function removes it. */
export function trackRunningImport(db: Knex, running: RunningImport): () => void {
  const registry = registryOf(db);
  if (registry.stopping !== undefined) running.stopReason = registry.stopping;
  registry.running.add(running);
  return () => {
    registry.running.delete(running);
  };
}

/**
 * Cancels only the import's own statements: between the import's end and the moment it is
 * removed, its connection may already run the statement that closes its record (an UPDATE of
 * contact_imports), which must not be cancelled.
 */
const CANCEL_IMPORT_STATEMENT = `SELECT pg_cancel_backend(pid) FROM pg_stat_activity
WHERE pid = ? AND state = 'active' AND query NOT LIKE '%contact_imports%'`;

/**
 * Stops every import running on `db` (and any that starts from now on): sets its reason and
 * cancels its statement, again every `everyMs` (a cancel that lands between two statements
 * is lost) until each import has ended or `maxMs` has passed. Resolves to how many were running.
 */
export async function stopRunningImports(db: Knex, reason: string, maxMs: number, everyMs = 100): Promise<number> {
  const registry = registryOf(db);
  registry.stopping = reason;
  const count = registry.running.size;
  const deadline = Date.now() + maxMs;
  while (registry.running.size > 0 && Date.now() < deadline) {
    for (const running of registry.running) {
      running.stopReason ??= reason;
      if (running.backendPid !== undefined) await db.raw(CANCEL_IMPORT_STATEMENT, [running.backendPid]).catch(() => undefined);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return count;
}
