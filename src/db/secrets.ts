import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * Secrets Herald generates for itself, once per installation, and keeps in the database so
 * that every process (API, workers, on any machine) signs and checks with the same key. The
 * first process to ask creates the row; the others read it. A key never changes once
 * written: messages already sent carry links signed with it.
 */
export type SecretName = 'tracking';

/**
 * Values by database: keyed by the handle's client config, which a transaction handle shares with
 * the handle it was begun on (a transaction is a new Knex object per call: keyed by the handle,
 * every `secret(trx, …)` read the table again, and wrote to it first).
 */
const cache = new WeakMap<object, Map<SecretName, Promise<Buffer>>>();

async function read(db: Knex, name: SecretName): Promise<Buffer | undefined> {
  const row = (await db('herald_secrets').where({ name }).first('value')) as { value: Buffer } | undefined;
  return row?.value;
}

/** The row, made by the first process to ask (a concurrent maker's value wins: DO NOTHING, then read). */
async function readOrCreate(db: Knex, name: SecretName): Promise<Buffer> {
  const found = await read(db, name);
  if (found) return found;
  await db.raw('INSERT INTO herald_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', [name, randomBytes(32)]);
  const made = await read(db, name);
  if (!made) throw new Error(`secret ${name} could not be read`);
  return made;
}

/**
 * The named secret, read once per process and database (whichever handle or transaction asks
 * first; it never changes once written, so the cached value stays right); a failed read is
 * retried next time.
 */
export function secret(db: Knex, name: SecretName): Promise<Buffer> {
  const key = (db.client as { config?: object }).config ?? db;
  let byName = cache.get(key);
  if (!byName) cache.set(key, (byName = new Map()));
  let value = byName.get(name);
  if (!value) {
    value = readOrCreate(db, name);
    byName.set(name, value);
    value.catch(() => byName.delete(name));
  }
  return value;
}
