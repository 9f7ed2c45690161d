import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbedded } from '../../src/db/embedded';
import { freePort } from '../helpers/net';

/**
 * As root the embedded PostgreSQL runs as the `postgres` OS user; a data directory that user
 * cannot enter must stop startup with a message naming the folder and the ways out, before
 * initdb is spawned (which would otherwise fail with a bare EACCES).
 */
const asRoot = process.getuid?.() === 0;

/** Live processes whose command line contains `text`. */
function processesNaming(text: string): string[] {
  return fs
    .readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .flatMap((pid) => {
      try {
        const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
        return cmdline.includes(text) ? [`${pid} ${cmdline}`] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
}

(asRoot ? it : it.skip)('names the folder the postgres user cannot enter, and how to fix it', async () => {
  const closed = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-closed-'));
  fs.chmodSync(closed, 0o700);
  try {
    const started = startEmbedded({ dataDir: path.join(closed, 'data', 'db'), port: await freePort(), startTimeoutMs: 30_000 });
    await expect(started).rejects.toThrow(new RegExp(`cannot enter ${closed} \\(mode 700\\).*DATA_DIR.*DATABASE_URL`));
    expect(fs.existsSync(path.join(closed, 'data', 'db', 'PG_VERSION'))).toBe(false);
    // The failure is answered once the supervisor has exited: none is left running (one left
    // behind kept a jest worker from exiting).
    expect(processesNaming(closed)).toEqual([]);
  } finally {
    fs.rmSync(closed, { recursive: true, force: true });
  }
});
