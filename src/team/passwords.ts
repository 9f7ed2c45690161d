import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password hashing (issue 37, docs/decisions.md "Teams"): Node's scrypt, memory-hard, with
 * N = 2^16, r = 8, p = 1 (64 MiB and about 100–250 ms per check on a 2-core machine; bench/team.ts
 * measures it), a 16-byte random salt and a 32-byte key. The stored text names its parameters
 * (`scrypt$16$8$1$<salt>$<key>`, base64url), so a later change of parameters still checks older
 * hashes. The text is sealed with the master key before it is stored (src/team/members.ts).
 */
export const SCRYPT = { logN: 16, r: 8, p: 1, keyLength: 32, saltLength: 16 } as const;

/** Passwords shorter than this are refused; longer than MAX_PASSWORD too (hashing cost is per byte of nothing, but a form is a form). */
export const MIN_PASSWORD = 10;
export const MAX_PASSWORD = 200;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number, keyLength: number): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, keyLength, { N, r, p, maxmem: 128 * N * r * p + 16 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SCRYPT.saltLength);
  const key = await derive(password, salt, SCRYPT.logN, SCRYPT.r, SCRYPT.p, SCRYPT.keyLength);
  return ['scrypt', SCRYPT.logN, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** True when `password` is the one `stored` was made from. A malformed `stored` is false. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = parts.slice(1, 4).map(Number);
  if (![logN, r, p].every((n) => Number.isInteger(n) && n >= 1 && n <= 32)) return false;
  const salt = Buffer.from(parts[4], 'base64url');
  const expected = Buffer.from(parts[5], 'base64url');
  if (expected.length < 16) return false;
  const key = await derive(password, salt, logN, r, p, expected.length);
  return timingSafeEqual(key, expected);
}

/** A hash of a password nobody has, checked when no user matches, so a wrong address costs what a wrong password does. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(24).toString('base64url'));
  return decoy;
}

/** Why a new password is refused (undefined: acceptable). */
export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD) return `The password must be at least ${MIN_PASSWORD} characters.`;
  if (password.length > MAX_PASSWORD) return `The password must not be greater than ${MAX_PASSWORD} characters.`;
  return undefined;
}
