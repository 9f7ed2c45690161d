import fs from 'node:fs';
import path from 'node:path';

/** The package root (the folder holding package.json), from source or from dist/. */
function findRoot(start: string): string {
  let dir = start;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`package.json not found above ${start}`);
    dir = parent;
  }
}

export const ROOT = findRoot(__dirname);
export const ASSETS_DIR = path.join(ROOT, 'assets');

export const VERSION: string = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;
