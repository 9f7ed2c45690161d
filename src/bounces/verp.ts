/**
 * VERP: with BOUNCE_DOMAIN set, a message's envelope sender is `bounce+<token>@BOUNCE_DOMAIN`,
 * the token being the recipient token of its row (src/recipient-token.ts: signed, lower-case
 * hex, so it survives a remote server that folds the address's case). A bounce sent to that
 * address names its message without reading the report, and a forged one fails the MAC.
 */
const LOCAL_PREFIX = 'bounce+';
const VERP = /^bounce\+([0-9a-f]{56}|[0-9a-f]{32})@(.+)$/;

export function verpAddress(bounceDomain: string, token: string): string {
  return `${LOCAL_PREFIX}${token}@${bounceDomain}`;
}

/** The token of a VERP address of `bounceDomain` (any case), or undefined; the MAC is checked by whoever uses it. */
export function verpToken(address: string, bounceDomain: string): string | undefined {
  const m = VERP.exec(address.trim().replace(/^<|>$/g, '').toLowerCase());
  return m && m[2] === bounceDomain.toLowerCase() ? m[1] : undefined;
}
