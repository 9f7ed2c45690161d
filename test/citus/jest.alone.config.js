/**
 * `npm run test:citus`, second part: the files in test/citus/alone/, which stop a node of the
 * cluster and so run after every other file, one at a time, each on a database of its own
 * (scripts/citus/test.sh hands it out as HERALD_CITUS_TEST_URL).
 */
const citus = require('./jest.config.js');

module.exports = {
  ...citus,
  roots: ['<rootDir>/test/citus/alone'],
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
};
