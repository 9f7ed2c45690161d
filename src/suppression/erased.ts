import { createHmac } from 'node:crypto';
import type { Knex } from 'knex';
import { secret } from '../db/secrets';

/**
 * Erased addresses (POST /contacts/erase, "forget me"; docs/decisions.md "Erasure"): the
 * account's suppression list keeps, instead of the address, `erased:` and the hex HMAC-SHA256 of
 * the lower-cased address under the installation's erasure key. A re-import or re-add of the
 * address is then refused at send time like any suppressed address, and nothing left in the
 * account's tables says what the address was.
 *
 * The key is derived from the installation's tracking secret (src/db/secrets.ts: one per
 * installation, in the coordinator's `herald_secrets`, never in an account's rows), and the hash
 * is computed in SQL with PostgreSQL's built-in sha256() from the key's two HMAC pads passed as
 * parameters, so the send path's statements compare it without a round trip per address, and the
 * erasure writes it with the same expression (the same lower()).
 */
export interface ErasureKey {
  /** key ⊕ ipad, key ⊕ opad (RFC 2104), 64 bytes each. */
  inner: Buffer;
  outer: Buffer;
}

export const ERASED_PREFIX = 'erased:';

const keys = new WeakMap<Buffer, ErasureKey>();

/** The installation's erasure key (derived once per process from the tracking secret). */
export async function erasureKey(db: Knex): Promise<ErasureKey> {
  const tracking = await secret(db, 'tracking');
  let k = keys.get(tracking);
  if (!k) {
    const key = createHmac('sha256', tracking).update('herald erasure key').digest();
    const block = Buffer.alloc(64);
    key.copy(block);
    k = { inner: Buffer.from(block.map((b) => b ^ 0x36)), outer: Buffer.from(block.map((b) => b ^ 0x5c)) };
    keys.set(tracking, k);
  }
  return k;
}

/**
 * The key when account `userId` has erased entries, else undefined: the send path then leaves the
 * erased check out of its statement altogether (src/suppression/index.ts suppressionJoins), so an
 * account that never erased anyone pays one probe of the partial index suppressions_erased_index
 * per statement and nothing per row.
 */
export async function erasureCheck(db: Knex, userId: number): Promise<ErasureKey | undefined> {
  const any = await db('suppressions').where({ user_id: userId, type: 'erased' }).first(db.raw('1 AS one'));
  return any ? erasureKey(db) : undefined;
}

/** The SQL of an address's erased entry (`erased:<hex>`); bindings: erasedHashBindings(key). */
export const erasedHashSql = (emailSql: string) =>
  `('${ERASED_PREFIX}' || encode(sha256(?::bytea || sha256(?::bytea || convert_to(lower(${emailSql}), 'UTF8'))), 'hex'))`;
export const erasedHashBindings = (key: ErasureKey): Buffer[] => [key.outer, key.inner];

/**
 * Suppresses an erased address by its hash (in the erasure's transaction); an entry already there
 * stays. `source`: `api` (POST /contacts/erase, the dashboard) or `recipient` ("forget me").
 */
export async function suppressErased(trx: Knex, userId: number, email: string, source: 'api' | 'recipient'): Promise<void> {
  const key = await erasureKey(trx);
  await trx.raw(
    `INSERT INTO suppressions (user_id, email, type, reason, source) VALUES (?, ${erasedHashSql('?::text')}, 'erased', 'erased on request', ?)
     ON CONFLICT (user_id, lower(email)) DO NOTHING`,
    [userId, ...erasedHashBindings(key), email, source],
  );
}
