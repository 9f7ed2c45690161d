/**
 * `npm run test:citus` (scripts/citus/test.sh): the suite's settings, on databases of a local
 * Citus cluster that the script prepared (no cloning in globalSetup: a Citus database is copied
 * on every node, which takes a superuser; see scripts/citus/clonedb.sh).
 */
const base = require('../../jest.config.js');

module.exports = {
  ...base,
  rootDir: '../..',
  // test/citus/alone stops a node of the cluster: it runs after the rest (jest.alone.config.js).
  testPathIgnorePatterns: ['/node_modules/', '/test/citus/alone/'],
  globalSetup: '<rootDir>/test/citus/global-setup.ts',
  globalTeardown: undefined,
};
