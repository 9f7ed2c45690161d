import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config';

/**
 * The master key that encrypts private DKIM keys at rest (docs/decisions.md, "Conventions"): HERALD_MASTER_KEY,
 * or a key generated on first use into DATA_DIR/master.key (mode 0600). It is never in the
 * database, so a database dump alone cannot sign mail as anyone. Lose it and every DKIM key must
 * be made again (and republished): the README says to back it up.
 */
const byDir = new Map<string, Buffer>();

export const MASTER_KEY_FILE = 'master.key';

function fromFile(dataDir: string): Buffer {
  const file = path.join(dataDir, MASTER_KEY_FILE);
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    // `wx`: two processes starting together cannot both write one; the second reads the first's.
    fs.writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} does not hold a 32-byte base64 key`);
  return key;
}

/** The installation's master key (read or created once per process). */
export function masterKey(config: Pick<Config, 'masterKey' | 'dataDir'>): Buffer {
  if (config.masterKey) return config.masterKey;
  let key = byDir.get(config.dataDir);
  if (!key) byDir.set(config.dataDir, (key = fromFile(config.dataDir)));
  return key;
}

/** AES-256-GCM: nonce (12) ‖ tag (16) ‖ ciphertext. */
export function seal(key: Buffer, plaintext: Buffer): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([nonce, cipher.getAuthTag(), body]);
}

export function unseal(key: Buffer, sealed: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]);
}
