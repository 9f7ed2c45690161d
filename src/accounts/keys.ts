import crypto from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `n` uniformly random base62 characters (rejection sampling, no modulo bias). */
export function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of crypto.randomBytes(n * 2)) {
      if (b < 248 && out.length < n) out += BASE62[b % 62];
    }
  }
  return out;
}

/** Public key `pk_` + 32 base62; secret `sk_` + 43 base62 (≈256 bits). */
export function newKeyPair(): { publicKey: string; secretKey: string } {
  return { publicKey: `pk_${randomBase62(32)}`, secretKey: `sk_${randomBase62(43)}` };
}

/** Secrets are stored only as their SHA-256 digest. */
export function hashSecret(secret: string): Buffer {
  return crypto.createHash('sha256').update(secret, 'utf8').digest();
}

/** Constant-time comparison of a presented secret with the stored digest. */
export function secretMatches(secret: string, storedDigest: Buffer): boolean {
  const digest = hashSecret(secret);
  return digest.length === storedDigest.length && crypto.timingSafeEqual(digest, storedDigest);
}
