import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';

/**
 * Two-factor codes (RFC 6238 through `otpauth`): SHA-1, 6 digits, 30-second steps, the
 * authenticator apps' defaults. A code is accepted for the current step and one step either side
 * (a clock up to 30 s off), and only for a step later than the last one accepted, so a code seen
 * over a shoulder cannot be used again (`totp_last_step`).
 */
const PERIOD = 30;
const WINDOW = 1;

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

function totp(secretBase32: string, label = 'Herald'): TOTP {
  return new TOTP({ issuer: 'Herald', label, algorithm: 'SHA1', digits: 6, period: PERIOD, secret: Secret.fromBase32(secretBase32) });
}

/** The `otpauth://` address an authenticator app reads (shown as a QR code and as text). */
export function totpUri(secretBase32: string, email: string): string {
  return totp(secretBase32, email).toString();
}

/** The code for `timestamp` (tests and the benchmark play the authenticator app). */
export function totpCode(secretBase32: string, timestamp = Date.now()): string {
  return totp(secretBase32).generate({ timestamp });
}

/**
 * The step a code belongs to, when it is right for now ± WINDOW steps and later than `lastStep`;
 * undefined otherwise. The caller stores the step (compare-and-set on `totp_last_step`).
 */
export function acceptTotp(secretBase32: string, code: string, lastStep: number | null, now = Date.now()): number | undefined {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return undefined;
  const delta = totp(secretBase32).validate({ token, timestamp: now, window: WINDOW });
  if (delta === null) return undefined;
  const step = TOTP.counter({ period: PERIOD, timestamp: now }) + delta;
  if (lastStep !== null && step <= lastStep) return undefined;
  return step;
}

/** Ten one-time recovery codes (`xxxxx-xxxxx`, 50 bits each, no 0, 1, l or o), shown once; only their digests are kept. */
export function newRecoveryCodes(): string[] {
  const alphabet = 'abcdefghijkmnpqrstuvwxyz23456789'; // 32 letters: no bias from the modulo
  return Array.from({ length: 10 }, () => {
    const bytes = randomBytes(10);
    const chars = Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

export function recoveryDigest(code: string): string {
  return createHash('sha256').update(code.trim().toLowerCase()).digest('hex');
}

/** Whether what was typed looks like a recovery code rather than a TOTP code. */
export const looksLikeRecoveryCode = (code: string) => /^[a-z0-9]{5}-[a-z0-9]{5}$/i.test(code.trim());
