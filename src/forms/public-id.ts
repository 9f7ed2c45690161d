import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * A form's public id, the `<id>` of `/subscribe/<id>` (issue 35): the account and the form, and
 * an HMAC-SHA256 of both with the installation's tracking secret (src/db/secrets.ts, the key
 * recipient tokens use, src/recipient-token.ts), truncated to 128 bits. The public endpoint
 * learns the account from the id itself, so it reads one account's rows (one node on Citus),
 * and nobody without the secret can make the id of another form: the ids are readable, not
 * guessable. The purpose `form:` is part of the signed text, so no other token signed with the
 * same key passes as a form id.
 *
 * Layout: 8 hex digits of account id, 8 of form id, 32 of MAC — 48 lowercase hex characters
 * (upper case is read too), safe in a URL path.
 */
export interface FormRef {
  userId: number;
  formId: number;
}

const BODY_HEX = 16;
const PUBLIC_ID = /^[0-9a-f]{48}$/;
const PURPOSE = 'form:';

function mac(key: Buffer, body: string): Buffer {
  return createHmac('sha256', key).update(PURPOSE).update(body).digest().subarray(0, 16);
}

export function formPublicId(key: Buffer, ref: FormRef): string {
  const body = ref.userId.toString(16).padStart(8, '0') + ref.formId.toString(16).padStart(8, '0');
  return body + mac(key, body).toString('hex');
}

/** The form a public id names, or undefined when this installation did not sign it. */
export function readFormPublicId(key: Buffer, id: string): FormRef | undefined {
  if (typeof id !== 'string') return undefined;
  const token = id.toLowerCase();
  if (!PUBLIC_ID.test(token)) return undefined;
  const body = token.slice(0, BODY_HEX);
  if (!timingSafeEqual(mac(key, body), Buffer.from(token.slice(BODY_HEX), 'hex'))) return undefined;
  const userId = parseInt(body.slice(0, 8), 16);
  const formId = parseInt(body.slice(8), 16);
  if (userId < 1 || formId < 1 || userId > 0x7fffffff || formId > 0x7fffffff) return undefined;
  return { userId, formId };
}
