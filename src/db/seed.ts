import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { ROOT } from '../paths';

interface SeedModule {
  seed(knex: Knex): Promise<void>;
}

function seedsDir(): string {
  const compiled = path.join(ROOT, 'dist', 'seeds');
  return __filename.endsWith('.ts') || !fs.existsSync(compiled) ? path.join(ROOT, 'seeds') : compiled;
}

/**
 * Runs every seed in file order. Seeds hold reference data only and are idempotent, so
 * `herald serve` runs them on every start and they cost one cheap check when nothing changed.
 */
export async function runSeeds(db: Knex): Promise<string[]> {
  const dir = seedsDir();
  const files = fs
    .readdirSync(dir)
    .filter((f) => /\.(js|ts)$/.test(f) && !f.endsWith('.d.ts'))
    .sort();
  for (const file of files) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(path.join(dir, file)) as SeedModule;
    await mod.seed(db);
  }
  return files.map((f) => f.replace(/\.(js|ts)$/, ''));
}
