import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is `whsec_` + the
 * base64 of a random key; a request carries `webhook-id`, `webhook-timestamp` (seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, so receivers verify with
 * the `standardwebhooks` libraries of any language.
 */
const PREFIX = 'whsec_';

/** A new secret: 24 random bytes (the libraries accept 24 to 64). */
export function newSecret(): string {
  return PREFIX + randomBytes(24).toString('base64');
}

export function sign(secret: string, msgId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${msgId}.${timestamp}.${body}`).digest('base64')}`;
}

/** The headers of one attempt: a fresh timestamp each time, the batch's id every time. */
export function signedHeaders(secret: string, msgId: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(secret, msgId, timestamp, body),
  };
}
