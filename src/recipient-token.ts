import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The token in a message's open pixel, unsubscribe links and Message-ID: the recipient row's
 * key (delivery id, account) and an HMAC-SHA256 of it, truncated to 128 bits, with the
 * installation's tracking secret (src/db/secrets.ts). Anyone can read the ids in a token;
 * nobody without the secret can make one for another row. Being derived, it is the same on
 * every retry of a message and needs no random value or unique index per row.
 *
 * Layout: 16 hex digits of delivery id, 8 of account id, 32 of MAC — 56 lowercase hex
 * characters, safe in a URL path and in a Message-ID's local part.
 */
export interface RecipientRef {
  deliveryId: number;
  userId: number;
}

const BODY_HEX = 24;
const MAC_HEX = 32;
const TOKEN = /^[0-9a-f]{56}$/;
/** Tokens stored per row before migration 202611240100 (32 random hex); links already mailed keep them. */
const LEGACY_TOKEN = /^[0-9a-f]{32}$/;

function mac(key: Buffer, body: string): string {
  // The purpose is part of the signed text, so a token made for another purpose (a click
  // link, say) with the same key can never pass as a recipient token.
  return createHmac('sha256', key).update('recipient:').update(body).digest('hex').slice(0, MAC_HEX);
}

export function recipientToken(key: Buffer, ref: RecipientRef): string {
  const body = ref.deliveryId.toString(16).padStart(16, '0') + ref.userId.toString(16).padStart(8, '0');
  return body + mac(key, body);
}

/** The row a token names, or undefined when it is not a token this installation signed. */
export function readRecipientToken(key: Buffer, token: string): RecipientRef | undefined {
  if (!TOKEN.test(token)) return undefined;
  const body = token.slice(0, BODY_HEX);
  if (!timingSafeEqual(Buffer.from(mac(key, body), 'hex'), Buffer.from(token.slice(BODY_HEX), 'hex'))) return undefined;
  const deliveryId = parseInt(body.slice(0, 16), 16);
  const userId = parseInt(body.slice(16), 16);
  if (!Number.isSafeInteger(deliveryId) || deliveryId < 1 || userId < 1) return undefined;
  return { deliveryId, userId };
}

/** How a token names its row: by key (signed), by the stored legacy token, or not at all. */
export type TokenLookup = { by: 'key'; ref: RecipientRef } | { by: 'legacy'; token: string } | undefined;

export function lookupToken(key: Buffer, raw: string): TokenLookup {
  const token = raw.toLowerCase();
  const ref = readRecipientToken(key, token);
  if (ref) return { by: 'key', ref };
  return LEGACY_TOKEN.test(token) ? { by: 'legacy', token } : undefined;
}
