import path from 'node:path';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { embeddedUrl, findRunningCluster, startEmbedded } from './embedded';

export interface ResolvedDatabase {
  url: string;
  embedded: boolean;
  /** Stops the embedded cluster if this process started it; a no-op otherwise. */
  stop(): Promise<void>;
}

/**
 * DATABASE_URL when set; otherwise the embedded PostgreSQL in DATA_DIR/db. With `attach`,
 * a cluster already run by another Herald process in that folder is used as it is (the CLI
 * next to a running `herald serve`).
 */
export async function resolveDatabase(config: Config, logger: Logger, attach = false): Promise<ResolvedDatabase> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: false, stop: async () => undefined };
  const dataDir = path.join(config.dataDir, 'db');
  const running = findRunningCluster(dataDir);
  if (running) {
    if (!attach) {
      throw new Error(
        `The embedded database in ${dataDir} is already run by another Herald process (supervisor pid ${running.supervisorPid}). ` +
          'Stop that process, or start this one with another DATA_DIR and EMBEDDED_DB_PORT.',
      );
    }
    return { url: embeddedUrl(dataDir, running.port), embedded: true, stop: async () => undefined };
  }
  const started = Date.now();
  const db = await startEmbedded({ dataDir, port: config.embeddedDbPort });
  logger.info({ dataDir, port: config.embeddedDbPort, ms: Date.now() - started }, 'embedded PostgreSQL started');
  return { url: db.url, embedded: true, stop: () => db.stop() };
}
