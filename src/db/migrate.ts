import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Logger } from '../logger';
import { ROOT } from '../paths';
import { distributeTables, isCitus } from './citus';

interface MigrationModule {
  up(knex: Knex): Promise<void>;
  down?(knex: Knex): Promise<void>;
}

/**
 * The migrations folder beside src/ (or dist/migrations once built). Names are recorded
 * without their extension so a database migrated from TypeScript (tests, tsx) and from the
 * compiled JavaScript (npm start, Docker) agree on what has run.
 */
export function migrationsDir(): string {
  const compiled = path.join(ROOT, 'dist', 'migrations');
  const fromSource = path.join(ROOT, 'migrations');
  return __filename.endsWith('.ts') || !fs.existsSync(compiled) ? fromSource : compiled;
}

const isMigrationFile = (f: string) => /\.(js|ts)$/.test(f) && !f.endsWith('.d.ts');

class FolderMigrationSource implements Knex.MigrationSource<string> {
  constructor(private readonly dir: string) {}

  async getMigrations(): Promise<string[]> {
    return fs.readdirSync(this.dir).filter(isMigrationFile).sort();
  }

  getMigrationName(file: string): string {
    return file.replace(/\.(js|ts)$/, '');
  }

  async getMigration(file: string): Promise<Knex.Migration> {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(path.join(this.dir, file)) as MigrationModule;
    return { up: mod.up, down: mod.down };
  }
}

export function migrationConfig(): Knex.MigratorConfig {
  return { migrationSource: new FolderMigrationSource(migrationsDir()), tableName: 'knex_migrations' };
}

/**
 * Applies pending migrations; returns the names it ran. On Citus, then distributes the tables
 * that are not yet (src/db/citus.ts): all of them on a new database, a new table after an upgrade.
 */
export async function migrateLatest(db: Knex, logger?: Logger): Promise<string[]> {
  const [, ran] = (await db.migrate.latest(migrationConfig())) as [number, string[]];
  if (await isCitus(db)) await distributeTables(db, logger);
  return ran;
}
