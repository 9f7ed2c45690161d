// For the knex CLI (`npx knex migrate:status`…); Herald itself migrates through `herald migrate`.
import { loadConfig } from './src/config';
import { migrationConfig } from './src/db/migrate';

const config = loadConfig();
if (!config.databaseUrl) {
  throw new Error('knexfile: set DATABASE_URL (the embedded database is reached through `npx herald migrate`)');
}

export default {
  client: 'pg',
  connection: config.databaseUrl,
  migrations: migrationConfig(),
};
