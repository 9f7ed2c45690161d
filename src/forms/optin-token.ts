import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The token of a double opt-in confirmation link (`/subscribe/confirm/<token>`, issue 35): the
 * account, the pending subscription, its generation and the link's expiry, with an HMAC-SHA256
 * of them under the installation's tracking secret (src/db/secrets.ts), truncated to 128 bits.
 * The account is in the token, so confirming reads one account's rows (one node on Citus). The
 * purpose `optin:` is part of the signed text: no other token signed with the key passes as one.
 * Single use is the row's (`confirmed_at`); a row reused by a new submission after it was
 * confirmed has a new generation, which kills the links mailed before.
 *
 * Layout: 8 hex of account, 16 of pending id, 8 of generation, 8 of expiry (Unix seconds),
 * 32 of MAC — 72 lowercase hex characters.
 */
export interface OptinRef {
  userId: number;
  pendingId: number;
  generation: number;
  /** Unix seconds. */
  expiresAt: number;
}

const BODY_HEX = 40;
const TOKEN = /^[0-9a-f]{72}$/;
const PURPOSE = 'optin:';

function mac(key: Buffer, body: string): Buffer {
  return createHmac('sha256', key).update(PURPOSE).update(body).digest().subarray(0, 16);
}

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

export function optinToken(key: Buffer, ref: OptinRef): string {
  const body = hex(ref.userId, 8) + hex(ref.pendingId, 16) + hex(ref.generation, 8) + hex(ref.expiresAt, 8);
  return body + mac(key, body).toString('hex');
}

/** What a token names (expired or not: the caller tells), or undefined when this installation did not sign it. */
export function readOptinToken(key: Buffer, raw: unknown): OptinRef | undefined {
  if (typeof raw !== 'string') return undefined;
  const token = raw.toLowerCase();
  if (!TOKEN.test(token)) return undefined;
  const body = token.slice(0, BODY_HEX);
  if (!timingSafeEqual(mac(key, body), Buffer.from(token.slice(BODY_HEX), 'hex'))) return undefined;
  const userId = parseInt(body.slice(0, 8), 16);
  const pendingId = parseInt(body.slice(8, 24), 16);
  const generation = parseInt(body.slice(24, 32), 16);
  const expiresAt = parseInt(body.slice(32), 16);
  if (userId < 1 || userId > 0x7fffffff || !Number.isSafeInteger(pendingId) || pendingId < 1 || generation < 1 || generation > 0x7fffffff) return undefined;
  return { userId, pendingId, generation, expiresAt };
}

export function isExpired(ref: OptinRef, now = Date.now()): boolean {
  return ref.expiresAt * 1000 <= now;
}
