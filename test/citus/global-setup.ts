/**
 * test:citus: the databases are ready (scripts/citus/test.sh made them on every node); the
 * test files find the main one as usual, through HERALD_TEST_DATABASE_URL.
 */
export default async function globalSetup(): Promise<void> {
  const url = process.env.HERALD_CITUS_TEST_URL;
  if (!url) throw new Error('HERALD_CITUS_TEST_URL is not set: run these tests with `npm run test:citus`');
  process.env.HERALD_TEST_DATABASE_URL = url;
}
