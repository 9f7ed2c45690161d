import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type pg from 'pg';
import type { Logger } from '../logger';
import { KEYS_ACK_CHANNEL, KEYS_LISTENER_APP } from './key-cache';
import { hashSecret, newKeyPair } from './keys';

export interface NewAccount {
  id: number;
  public_key: string;
  secret_key: string;
}

/** Creates an account; the secret is returned here once and only its digest is stored. */
export async function createAccount(db: Knex, input: { name: string; email: string }): Promise<NewAccount> {
  const { publicKey, secretKey } = newKeyPair();
  const [row] = await db('accounts')
    .insert({ name: input.name, email: input.email, public_key: publicKey, secret_key_hash: hashSecret(secretKey) })
    .returning(['id']);
  return { id: row.id as number, public_key: publicKey, secret_key: secretKey };
}

const CONFIRM_MS = 5000;

/**
 * Replaces an account's key pair; the old pair stops working at once. API processes keep
 * verified pairs in memory (key-cache.ts): the commit notifies them, and this returns only once
 * every one of them has confirmed it dropped the account's old pair (or after CONFIRM_MS, with a
 * warning: a cache that did not answer serves an entry for at most its lifetime, a minute).
 */
export async function rotateKeys(db: Knex, id: number, opts: { logger?: Logger; confirmMs?: number } = {}): Promise<NewAccount | undefined> {
  const { publicKey, secretKey } = newKeyPair();
  // A session of its own listens for the confirmations, from before the commit.
  const conn = (await db.client.acquireConnection()) as pg.Client;
  const confirmed = new Set<number>();
  let check = () => undefined as void;
  const onConfirm = (msg: pg.Notification) => {
    if (msg.channel !== KEYS_ACK_CHANNEL || Number(msg.payload) !== id) return;
    confirmed.add(msg.processId);
    check();
  };
  conn.on('notification', onConfirm);
  try {
    await conn.query(`LISTEN ${KEYS_ACK_CHANNEL}`);
    const done = await db.transaction(async (trx) => {
      const listeners = (await trx('pg_stat_activity')
        .where({ application_name: KEYS_LISTENER_APP })
        .whereRaw('datname = current_database()')
        .pluck('pid')) as number[];
      const [row] = await trx('accounts')
        .where({ id })
        .update({ public_key: publicKey, secret_key_hash: hashSecret(secretKey), updated_at: trx.fn.now() })
        .returning(['id']);
      // Dashboard sessions opened with the old pair end with it (a session also checks the key itself).
      if (row) await trx('dashboard_sessions').where({ user_id: id }).delete();
      return row ? { id: row.id as number, listeners } : undefined;
    });
    if (!done) return undefined;
    const missing = () => done.listeners.filter((pid) => !confirmed.has(pid));
    if (missing().length) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, opts.confirmMs ?? CONFIRM_MS);
        check = () => {
          if (missing().length) return;
          clearTimeout(timer);
          resolve();
        };
      });
      if (missing().length) {
        opts.logger?.warn({ accountId: id, unconfirmed: missing() }, 'some API processes did not confirm the key change; they refuse the old pair within a minute at the latest');
      }
    }
    return { id: done.id, public_key: publicKey, secret_key: secretKey };
  } finally {
    conn.off('notification', onConfirm);
    await conn.query(`UNLISTEN ${KEYS_ACK_CHANNEL}`).catch(() => undefined);
    await db.client.releaseConnection(conn);
  }
}

/** The account owning this public key and secret digest (SHA-256), or undefined. */
export async function findKeyOwner(db: Knex, publicKey: string, digest: Buffer): Promise<number | undefined> {
  const row = await db('accounts').where({ public_key: publicKey }).first('id', 'secret_key_hash');
  // Compare even when the public key is unknown, so timing does not reveal which half was wrong.
  const stored = row ? (row.secret_key_hash as Buffer) : UNKNOWN_DIGEST;
  const same = stored.length === digest.length && crypto.timingSafeEqual(stored, digest);
  return row && same ? (row.id as number) : undefined;
}

const UNKNOWN_DIGEST = hashSecret('');

export async function countAccounts(db: Knex): Promise<number> {
  const row = await db('accounts').count<{ count: number }[]>({ count: '*' }).first();
  return Number(row?.count ?? 0);
}
