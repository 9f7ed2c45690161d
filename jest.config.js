/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // test/citus needs a Citus cluster: `npm run test:citus` runs it (test/citus/jest.config.js).
  testPathIgnorePatterns: ['/node_modules/', '/test/citus/'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' }, sourceMaps: 'inline' },
    ],
  },
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  // Bounds, not speed targets: scaled like the tests' own waits (test/helpers/wait.ts).
  testTimeout: 60000 * Math.max(1, Number(process.env.TEST_PATIENCE ?? 3)),
  // The suite is database-bound: a few workers keep both cores and PostgreSQL busy.
  maxWorkers: process.env.JEST_WORKERS ? Number(process.env.JEST_WORKERS) : 3,
};
