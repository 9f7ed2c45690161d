/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // test/citus needs a Citus cluster: `npm run test:citus` runs it (test/citus/jest.config.js).
  testPathIgnorePatterns: ['/node_modules/', '/test/citus/'],
  transform: {
    // .tsx: the dashboard's server-rendered pages (preact's automatic JSX runtime, as tsconfig.json).
    '^.+\\.tsx?$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript', tsx: true }, target: 'es2022', transform: { react: { runtime: 'automatic', importSource: 'preact' } } },
        module: { type: 'commonjs' },
        sourceMaps: 'inline',
      },
    ],
  },
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  // Bounds, not speed targets: scaled like the tests' own waits (test/helpers/wait.ts).
  testTimeout: 60000 * Math.max(1, Number(process.env.TEST_PATIENCE ?? 3)),
  // The suite is database-bound: a few workers keep both cores and PostgreSQL busy.
  maxWorkers: process.env.JEST_WORKERS ? Number(process.env.JEST_WORKERS) : 3,
};
