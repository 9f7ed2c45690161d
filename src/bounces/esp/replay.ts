import type { Knex } from 'knex';
import { MAX_SIGNATURE_AGE_S } from './common';

/**
 * The tokens of signed webhook requests already received (table esp_replay_tokens). A token is
 * kept for twice the signature's allowed age — longer than its timestamp can pass the age check
 * either way — so a captured request replayed inside the window is refused, by any process and
 * after a restart. An expired row may be taken again (the age check refuses its old request).
 */
const KEEP_S = MAX_SIGNATURE_AGE_S * 2;
/** Expired rows are removed at most this often per process. */
const PURGE_EVERY_MS = 60_000;
let lastPurge = 0;

/** True the first time `token` is seen within the window; false for a replay. */
export async function firstUse(db: Knex, provider: string, token: string, now = Date.now()): Promise<boolean> {
  if (now - lastPurge >= PURGE_EVERY_MS) {
    lastPurge = now;
    await db('esp_replay_tokens').where('expires_at', '<', db.fn.now()).delete();
  }
  const { rows } = await db.raw(
    `INSERT INTO esp_replay_tokens (provider, token, expires_at) VALUES (?, ?, now() + make_interval(secs => ?))
     ON CONFLICT (provider, token) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE esp_replay_tokens.expires_at < now()
     RETURNING 1`,
    [provider, token, KEEP_S],
  );
  return rows.length === 1;
}
