import type { Knex } from 'knex';
import { createHash, createPrivateKey, sign, type KeyObject } from 'node:crypto';
import type { Config } from '../config';
import type { MessagePieces } from '../mail/mime';
import { asciiDomain, ensureKey, privateKeyPem, signingDomain } from './keys';

/**
 * DKIM-signs every message Herald sends (campaigns, automations, verification and notification
 * mail), relaxed/relaxed, with the active key of the account
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

/** The lines of a header block, each with its continuation lines, and its field name in lower case. */
function parseHeaders(block: string): Array<{ key: string; casedKey: string; line: string }> {
  const rows: string[] = [];
  for (const row of block.replace(/[\r\n]+$/, '').split(/\r?\n/)) {
    if (rows.length && /^\s/.test(row)) rows[rows.length - 1] += `\r\n${row}`;
    else rows.push(row);
  }
  return rows.map((line) => {
    const casedKey = (/^[^:]+/.exec(line)?.[0] ?? '').trim();
    return { key: casedKey.toLowerCase(), casedKey, line };
  });
}

/** A header line that relaxed canonicalization leaves as it is but for the name's case: one line, printable ASCII, one space after the colon and between words. */
const PLAIN_HEADER = /^([!-9;-~]+): ([!-~]+(?: [!-~]+)*)$/;

/** RFC 6376 §3.4.2, relaxed header canonicalization: unfolded, name in lower case, whitespace runs as one space. */
function relaxedHeader(line: string): string {
  const plain = PLAIN_HEADER.exec(line);
  if (plain) return `${plain[1].toLowerCase()}:${plain[2]}`;
  return line
    .replace(/\r?\n/g, '')
    .replace(/^([^:]*):\s*/, (_m, k: string) => `${k.toLowerCase().trim()}:`)
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * RFC 6376 §3.4.4, relaxed body canonicalization: whitespace at the end of lines dropped, runs of
 * it as one space, empty lines at the end dropped, and a non-empty body ends with CRLF.
 */
function relaxedBody(body: string): string {
  const lines = body.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l).replace(/[ \t]+/g, ' ').replace(/ $/, ''));
  let end = lines.length;
  while (end > 0 && lines[end - 1] === '') end -= 1;
  return end ? `${lines.slice(0, end).join('\r\n')}\r\n` : '';
}

/**
 * Whether relaxed body canonicalization would leave the body as it is but for empty lines at its
 * end: no tab, no space before a CR, another space or the end of the body (a last line without
 * CRLF keeps relaxedBody's treatment), no line feed without its carriage return (which also rules
 * out a space before one). Herald's own bodies (src/mail/mime.ts: base64 parts between fixed part
 * headers) always are, and are hashed as they stand instead of being split into lines and joined
 * again (≈ 50 µs of a message's CPU). indexOf scans, not one regular expression: a third of its time.
 */
function alreadyRelaxed(body: string): boolean {
  if (body.includes('\t') || body.includes('  ') || body.includes(' \r') || body.endsWith(' ')) return false;
  for (let i = body.indexOf('\n'); i >= 0; i = body.indexOf('\n', i + 1)) if (i === 0 || body.charCodeAt(i - 1) !== 13) return false;
  return true;
}

/** The base64 SHA-256 of the body's relaxed form (the `bh=` tag). */
function bodyHash(body: string): string {
  const hash = createHash('sha256');
  if (!alreadyRelaxed(body)) return hash.update(relaxedBody(body), 'utf8').digest('base64');
  let end = body.length;
  while (end >= 2 && body.charCodeAt(end - 1) === 10 && body.charCodeAt(end - 2) === 13) end -= 2;
  // An empty body hashes as nothing; one that ends in exactly one CRLF, as it stands.
  if (end > 0 && end === body.length - 2) hash.update(body, 'utf8');
  else if (end > 0) hash.update(body.slice(0, end), 'utf8').update('\r\n');
  return hash.digest('base64');
}

/** Folds a header line at its spaces, lines of at most 76 characters where the words allow. */
function fold(line: string): string {
  const out: string[] = [];
  let current = '';
  for (const word of line.split(' ')) {
    if (current && current.length + 1 + word.length > 76) {
      out.push(current);
      current = ` ${word}`;
    } else {
      current = current ? `${current} ${word}` : word;
    }
  }
  out.push(current);
  return out.join('\r\n');
}

/** The tags of the DKIM-Signature header, in the order mailauth writes them, as `k=v; …`. */
const tagList = (tags: Record<string, string | number>) =>
  Object.entries(tags)
    .map(([k, v]) => `${k}=${v}`)
    .join('; ');

/** The DKIM-Signature header for the tags and the signature `b`, `b` last. */
function signatureHeader(tags: string, b: string): string {
  // The signature in pieces of 75 characters, so the line folds between them.
  const value = `b=${b}`;
  let pieces = value.slice(0, 75);
  for (let i = 75; i < value.length; i += 75) pieces += ` ${value.slice(i, i + 75)}`;
  return `DKIM-Signature: ${tags}; ${pieces}`;
}

/**
 * The DKIM-Signature header line (CRLF-terminated) for a raw message, relaxed/relaxed, signing
 * SIGNED_HEADERS that are present (bottom-up, every instance). The canonicalizations are
 * RFC 6376's and produce mailauth's bytes — `test/unit/dkim-sign.test.ts` checks the line
 * against mailauth's `dkimSign` and `dkimVerify` — but without mailauth at run time: its
 * modules (joi, tldts, libmime…) cost ≈ 23 MB of every sending process's memory (bench/README.md,
 * "Send"), and its `dkimSign` re-reads the PEM key of every message and streams it through a
 * parser (`bench:send --dkim`).
 *
 * The RSA signature, most of the CPU a message costs, is made in libuv's thread pool
 * (`crypto.sign` with a callback), so the sender's lanes keep several messages signing at once
 * on the other cores while the main thread renders and talks SMTP (docs/decisions.md, "DKIM
 * and sender DNS"). RSASSA-PKCS1-v1_5 is deterministic: the same bytes as signing inline.
 */
export function dkimSignatureLine(raw: string, key: SigningKey, signTime = new Date()): Promise<string> {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return Promise.reject(new Error('DKIM signing failed: the message has no body'));
  return dkimSignatureLineOf({ head: raw.slice(0, end + 2), body: raw.slice(end + 4) }, key, signTime);
}

/** The key a message is signed with, and the domain and selector its signature names. */
export interface SigningKey {
  domain: string;
  selector: string;
  key: KeyObject;
}

/** dkimSignatureLine for a message given as its header block (each line ending in CRLF) and its body (src/mail/mime.ts `MessagePieces`). */
export function dkimSignatureLineOf(message: MessagePieces, key: SigningKey, signTime = new Date()): Promise<string> {
  const wanted = SIGNED_HEADER_KEYS;
  const signing = parseHeaders(message.head)
    .filter((h) => wanted.has(h.key))
    .reverse();
  const tags = tagList({
    v: 1,
    a: 'rsa-sha256',
    c: 'relaxed/relaxed',
    d: asciiDomain(key.domain) || key.domain,
    h: signing.map((h) => h.casedKey).join(': '),
    q: 'dns/txt',
    s: asciiDomain(key.selector) || key.selector,
    t: Math.floor(signTime.getTime() / 1000),
    bh: bodyHash(message.body),
  });
  // The signed text: the signed headers and this header with an empty b=, relaxed (so unfolded:
  // folding it first, as it will be sent, changes nothing here).
  const unsigned = relaxedHeader(`DKIM-Signature: ${tags}; b=`);
  let text = '';
  for (const h of signing) text += `${relaxedHeader(h.line)}\r\n`;
  text += unsigned;
  return new Promise((resolve, reject) =>
    sign('sha256', Buffer.from(text, 'utf8'), key.key, (err, signature) => {
      if (err) return reject(err);
      resolve(`${fold(signatureHeader(tags, signature.toString('base64')))}\r\n`);
    }),
  );
}

const SIGNED_HEADER_KEYS = new Set(SIGNED_HEADERS.toLowerCase().split(':'));

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

/**
 * signMessage for a message in the two pieces a campaign's renderer writes (src/mail/mime.ts
 * `MessagePieces`): signed as they are, without joining them into one string first.
 */
export async function signPieces(
  db: Knex,
  config: Pick<Config, 'masterKey' | 'dataDir'>,
  userId: number | null,
  from: string,
  message: MessagePieces,
): Promise<string> {
  const key = await keyFor(db, config, userId, signingDomain(from));
  return `${await dkimSignatureLineOf(message, key)}${message.head}\r\n${message.body}`;
}
