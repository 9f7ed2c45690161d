import { createHmac, hash, timingSafeEqual } from 'node:crypto';

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

function mac(key: Buffer, body: string, purpose: 'recipient:' | 'click:' = 'recipient:'): string {
  // The purpose is part of the signed text, so a token made for another purpose (a click
  // link, say) with the same key can never pass as a recipient token.
  return createHmac('sha256', key).update(purpose).update(body).digest('hex').slice(0, MAC_HEX);
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

/**
 * The token of a tracked link in one message (`/t/click/<token>`): the recipient row's key, the
 * link's id (tracked_links) and a MAC of both — 68 lowercase hex. Changing the link id or the row
 * breaks the MAC, so a click token can only name a link that was in the message it was made for.
 *
 * The MAC is SHA-256 over a per-message key and the token's body, truncated to 128 bits; the
 * per-message key is an HMAC-SHA256 of the row's key with the installation's tracking secret
 * (purpose `click:`) and never leaves Herald. One HMAC per message and a one-shot hash per link
 * (≈0.4 µs) instead of an HMAC per link (≈2.5 µs): a message has several links, and a million
 * messages have millions. The body has a fixed length, and only 128 of the hash's 256 bits
 * are shown, so the hash cannot be extended into a token for another body.
 */
export interface ClickRef extends RecipientRef {
  linkId: number;
}

const CLICK_BODY_HEX = BODY_HEX + 12;
const CLICK_TOKEN = /^[0-9a-f]{68}$/;

function rowHex(ref: RecipientRef): string {
  return ref.deliveryId.toString(16).padStart(16, '0') + ref.userId.toString(16).padStart(8, '0');
}

function clickMac(messageKey: string, body: string): string {
  return hash('sha256', messageKey + body, 'hex').slice(0, MAC_HEX);
}

/** The click tokens of one message: its key is made once, each link then costs a hash. */
export function clickSigner(key: Buffer, ref: RecipientRef): (linkId: number) => string {
  const head = rowHex(ref);
  const messageKey = mac(key, head, 'click:');
  return (linkId) => {
    const body = head + linkId.toString(16).padStart(12, '0');
    return body + clickMac(messageKey, body);
  };
}

export function clickToken(key: Buffer, ref: ClickRef): string {
  return clickSigner(key, ref)(ref.linkId);
}

/** The row and link a click token names, or undefined when this installation did not sign it. */
export function readClickToken(key: Buffer, raw: string): ClickRef | undefined {
  const token = raw.toLowerCase();
  if (!CLICK_TOKEN.test(token)) return undefined;
  const body = token.slice(0, CLICK_BODY_HEX);
  const expected = clickMac(mac(key, body.slice(0, BODY_HEX), 'click:'), body);
  if (!timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(token.slice(CLICK_BODY_HEX), 'hex'))) return undefined;
  const deliveryId = parseInt(body.slice(0, 16), 16);
  const userId = parseInt(body.slice(16, 24), 16);
  const linkId = parseInt(body.slice(24), 16);
  if (!Number.isSafeInteger(deliveryId) || deliveryId < 1 || userId < 1 || linkId < 1) return undefined;
  return { deliveryId, userId, linkId };
}
