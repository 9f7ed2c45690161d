import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { masterKey, seal, unseal } from '../../src/dkim/master-key';

describe('the master key', () => {
  it('is generated once into DATA_DIR/master.key with mode 0600 and read back after', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-master-'));
    try {
      const key = masterKey({ dataDir: dir });
      expect(key).toHaveLength(32);
      const file = path.join(dir, 'master.key');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64')).toEqual(key);
      expect(masterKey({ dataDir: dir })).toEqual(key);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is HERALD_MASTER_KEY when set (no file is written)', () => {
    const dir = path.join(os.tmpdir(), `herald-master-none-${process.pid}`);
    const key = Buffer.alloc(32, 1);
    expect(masterKey({ dataDir: dir, masterKey: key })).toBe(key);
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('seals with AES-256-GCM: the same text twice differs, a wrong key or a flipped byte fails', () => {
    const key = Buffer.alloc(32, 2);
    const text = Buffer.from('-----BEGIN PRIVATE KEY-----');
    const a = seal(key, text);
    expect(a.equals(seal(key, text))).toBe(false);
    expect(unseal(key, a)).toEqual(text);
    expect(() => unseal(Buffer.alloc(32, 3), a)).toThrow();
    const flipped = Buffer.from(a);
    flipped[flipped.length - 1] ^= 1;
    expect(() => unseal(key, flipped)).toThrow();
  });
});
