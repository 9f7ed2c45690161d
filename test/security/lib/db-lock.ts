import { createHash } from 'node:crypto';
import { Client } from 'pg';

/**
 * A PostgreSQL advisory lock held for a whole test file, on a connection of its own (not
 * the app's pool, which the file's teardown destroys). The security files that share the
 * isolated `fuzz` database take it, so the one that runs a delivery worker there
 * (header-injection) never runs while the fuzzer compares snapshots of its accounts: the
 * worker would change them under its feet.
 */
export interface HeldLock {
  release(): Promise<void>;
}

export async function holdDatabaseLock(databaseUrl: string, name: string): Promise<HeldLock> {
  const key = createHash('sha256').update(`herald-test:${name}`).digest().readBigInt64BE(0).toString();
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [key]);
  } catch (err) {
    await client.end();
    throw err;
  }
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      // Closing the session releases the lock.
      await client.end();
    },
  };
}
