import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * Secrets Herald generates for itself, once per installation, and keeps in the database so
 * that every process (API, workers, on any machine) signs and checks with the same key. The
 * first process to ask creates the row; the others read it. A key never changes once
 * written: messages already sent carry links signed with it.
 */
export type SecretName = 'tracking';

const cache = new WeakMap<Knex, Map<SecretName, Promise<Buffer>>>();

async function readOrCreate(db: Knex, name: SecretName): Promise<Buffer> {
  await db.raw('INSERT INTO herald_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', [name, randomBytes(32)]);
  const row = (await db('herald_secrets').where({ name }).first('value')) as { value: Buffer } | undefined;
  if (!row) throw new Error(`secret ${name} could not be read`);
  return row.value;
}

/** The named secret, read once per process (and per database handle); a failed read is retried next time. */
export function secret(db: Knex, name: SecretName): Promise<Buffer> {
  let byName = cache.get(db);
  if (!byName) cache.set(db, (byName = new Map()));
  let value = byName.get(name);
  if (!value) {
    value = readOrCreate(db, name);
    byName.set(name, value);
    value.catch(() => byName.delete(name));
  }
  return value;
}
