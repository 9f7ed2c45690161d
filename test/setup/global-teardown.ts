import { createDb } from '../../src/db/knex';
import { databaseName, ISOLATED_DATABASES, isolatedUrl } from './isolated';

export default async function globalTeardown(): Promise<void> {
  const url = process.env.HERALD_TEST_DATABASE_URL;
  if (url) {
    const admin = new URL(url);
    admin.pathname = '/postgres';
    const knex = createDb({ url: admin.toString() });
    try {
      for (const name of ISOLATED_DATABASES) {
        await knex.raw('DROP DATABASE IF EXISTS ?? WITH (FORCE)', [databaseName(isolatedUrl(url, name))]);
      }
    } finally {
      await knex.destroy();
    }
  }
  await globalThis.__HERALD_EMBEDDED__?.stop();
}
