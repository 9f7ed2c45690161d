import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { ROOT } from '../paths';

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

/** Applies pending migrations; returns the names it ran. */
export async function migrateLatest(db: Knex): Promise<string[]> {
  const [, ran] = (await db.migrate.latest(migrationConfig())) as [number, string[]];
  return ran;
}
