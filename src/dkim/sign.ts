import type { Knex } from 'knex';
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import type { Config } from '../config';
import { ensureKey, privateKeyPem, signingDomain } from './keys';

/**
 * DKIM-signs every message Herald sends (campaigns, automations, verification and notification
 * mail) with mailauth's canonicalization, relaxed/relaxed, with the active key of the account
 * and the From domain. The decrypted key is cached per (account, domain) for KEY_TTL_MS, so a worker
 * decrypts once, not per message; a key promoted in this process drops the cache at once
 * (forgetKeys), and other processes pick it up within the TTL — the old key keeps working
 * meanwhile, since its record stays published until the operator removes it.
 */
export const SIGNED_HEADERS = [
  'From',
  'To',
  'Subject',
  'Date',
  'Message-ID',
  'MIME-Version',
  'Content-Type',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
  'Reply-To',
  'Auto-Submitted',
].join(':');

const KEY_TTL_MS = 30_000;

interface CachedKey {
  domain: string;
  selector: string;
  key: KeyObject;
  at: number;
}

const caches = new WeakMap<Knex, Map<string, Promise<CachedKey>>>();

function cacheOf(db: Knex): Map<string, Promise<CachedKey>> {
  let c = caches.get(db);
  if (!c) caches.set(db, (c = new Map()));
  return c;
}

/** Forgets the decrypted keys of this process (after a rotation took effect). */
export function forgetKeys(db: Knex): void {
  caches.delete(db);
}

async function loadKey(db: Knex, config: Pick<Config, 'masterKey' | 'dataDir'>, userId: number | null, domain: string): Promise<CachedKey> {
  const row = await ensureKey(db, config, userId, domain);
  return { domain, selector: row.selector, key: createPrivateKey(privateKeyPem(config, row)), at: Date.now() };
}

function keyFor(db: Knex, config: Pick<Config, 'masterKey' | 'dataDir'>, userId: number | null, domain: string): Promise<CachedKey> {
  const cache = cacheOf(db);
  const name = `${userId ?? 0}:${domain}`;
  const hit = cache.get(name);
  if (hit) return hit;
  const loading = loadKey(db, config, userId, domain);
  cache.set(name, loading);
  loading.then(
    (k) => setTimeout(() => cache.get(name) === loading && cache.delete(name), Math.max(0, k.at + KEY_TTL_MS - Date.now())).unref(),
    () => cache.delete(name),
  );
  return loading;
}

/**
 * mailauth's signing steps, loaded with the first signature rather than at start-up: their
 * modules (joi, tldts, libmime…) take ≈ 22 MB, which a process that has not sent yet (an idle
 * `herald serve`, a CLI command) need not hold (bench/README.md, idle RSS).
 */
let steps: ReturnType<typeof loadSteps> | undefined;
function loadSteps() {
  /* eslint-disable @typescript-eslint/no-require-imports */
  return {
    ...(require('mailauth/lib/dkim/body') as typeof import('mailauth/lib/dkim/body')),
    ...(require('mailauth/lib/dkim/header') as typeof import('mailauth/lib/dkim/header')),
    ...(require('mailauth/lib/tools') as typeof import('mailauth/lib/tools')),
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
}

/**
 * The DKIM-Signature header line (CRLF-terminated) for a raw message, made with the steps of
 * mailauth's DkimSigner — its header parser, relaxed body hash, header canonicalization and
 * signature formatting — without its stream parser, and with a parsed key: mailauth's
 * `dkimSign` re-reads the PEM key of every message (≈0.3 ms, as long as the RSA signature
 * itself) and streams the message through a parser (bench/README.md, `bench:send --dkim`).
 *
 * The RSA signature, most of the CPU a message costs, is made in libuv's thread pool
 * (`crypto.sign` with a callback), so the sender's lanes keep several messages signing at once
 * on the other cores while the main thread renders and talks SMTP (docs/decisions.md, "DKIM
 * and sender DNS"). RSASSA-PKCS1-v1_5 is deterministic: the same bytes as signing inline.
 */
export function dkimSignatureLine(raw: string, key: { domain: string; selector: string; key: KeyObject }, signTime = new Date()): Promise<string> {
  const { dkimBody, generateCanonicalizedHeader, formatSignatureHeaderLine, getSigningHeaderLines, parseHeaders } = (steps ??= loadSteps());
  const buf = Buffer.from(raw);
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return Promise.reject(new Error('DKIM signing failed: the message has no body'));
  const headers = parseHeaders(buf.subarray(0, end + 2));
  const body = dkimBody('relaxed', 'sha256', false);
  body.update(buf.subarray(end + 4));
  const { canonicalizedHeader, dkimHeaderOpts } = generateCanonicalizedHeader('DKIM', getSigningHeaderLines(headers.parsed, SIGNED_HEADERS), {
    signingDomain: key.domain,
    selector: key.selector,
    algorithm: 'rsa-sha256',
    canonicalization: 'relaxed/relaxed',
    bodyHash: body.digest('base64'),
    // Given, so t= is the same in the signed text and the header (mailauth's default reads the clock twice).
    signTime,
  });
  return new Promise((resolve, reject) =>
    sign('rsa-sha256', canonicalizedHeader, key.key, (err, signature) => {
      if (err) return reject(err);
      dkimHeaderOpts.b = signature.toString('base64');
      resolve(`${formatSignatureHeaderLine('DKIM', dkimHeaderOpts, true)}\r\n`);
    }),
  );
}

/**
 * The message with its DKIM-Signature header first. `from` is the From address (its domain is
 * d=); `userId` null for Herald's own mail. Throws when it cannot sign: the message is then not
 * sent (a campaign message is retried like any temporary failure).
 */
export async function signMessage(
  db: Knex,
  config: Pick<Config, 'masterKey' | 'dataDir'>,
  userId: number | null,
  from: string,
  raw: string,
): Promise<string> {
  const key = await keyFor(db, config, userId, signingDomain(from));
  return (await dkimSignatureLine(raw, key)) + raw;
}
