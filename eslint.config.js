const js = require('@eslint/js');
const tseslint = require('typescript-eslint');
const globals = require('globals');

/**
 * Imports go one way (docs/decisions.md, "Import direction"): a folder of src/ may import its own
 * layer and the layers below, never one above. Type-only imports are allowed (context.ts names the
 * types of the process-wide dependencies it carries). A top-level file of a layer (config.ts, app.ts…)
 * is named without `.ts`.
 */
const LAYERS = [
  ['config', 'logger', 'paths', 'context', 'recipient-token', 'states', 'dns'],
  ['db', 'dkim', 'mail', 'accounts', 'jobs'],
  ['http'],
  ['events', 'suppression', 'webhooks', 'bounces', 'sources', 'statistics', 'ab', 'contacts', 'deliveries'],
  ['resources'],
  ['delivery'],
  ['public', 'dashboard'],
  // The worker process's composition root: above everything its loops run (src/server.ts starts it).
  ['worker'],
  ['app', 'server', 'cli'],
];
const TOP_FILES = new Set(['config', 'logger', 'paths', 'context', 'recipient-token', 'states', 'dns', 'app', 'server', 'cli']);

/** One rule per folder (and one per top-level file): the names above it, as seen from its depth. */
function importDirection() {
  const configs = [];
  LAYERS.forEach((layer, i) => {
    const above = LAYERS.slice(i + 1).flat();
    if (!above.length) return;
    for (const name of layer) {
      // How a file of this folder reaches src/: `./` from src/*.ts, `../` from src/x/*.ts, `../../` from src/resources/x/*.ts.
      const targets = TOP_FILES.has(name)
        ? [[`src/${name}.ts`, './']]
        : [[`src/${name}/*.{ts,tsx}`, '../'], [`src/${name}/*/*.{ts,tsx}`, '../../']];
      for (const [files, up] of targets) {
        const prefix = up.replace(/\./g, '\\.');
        configs.push({
          files: [files],
          rules: {
            '@typescript-eslint/no-restricted-imports': [
              'error',
              {
                patterns: [
                  {
                    regex: `^${prefix}(${above.join('|')})(/|$)`,
                    allowTypeImports: true,
                    message: `src/${name} may import only its own layer and the ones below it (eslint.config.js LAYERS).`,
                  },
                ],
              },
            ],
          },
        });
      }
    }
  });
  return configs;
}

/**
 * One owner per table: SQL on `deliveries` is written only in src/deliveries/ (its statements,
 * named functions the others call). Caught: a string or template text that reads, joins, inserts
 * into, updates or deletes from it, and a knex call naming it (`db('deliveries')`,
 * `.from('deliveries as d')`, `scoped(ctx, 'deliveries')`). `listPayload('deliveries', …)` is
 * the API's list key of GET /webhooks/{id}/deliveries, no table. Tests and benchmarks may read
 * the table to check what happened.
 */
const DELIVERIES_SQL = /\b(FROM|JOIN|INTO|UPDATE|TABLE)\s+deliveries\b/i;
const ownedTables = {
  files: ['src/**/*.{ts,tsx}'],
  ignores: ['src/deliveries/**'],
  rules: {
    'no-restricted-syntax': [
      'error',
      ...[`Literal[value=${DELIVERIES_SQL}]`, `TemplateElement[value.raw=${DELIVERIES_SQL}]`,
        `CallExpression:not([callee.name='listPayload']) > Literal.arguments[value=/^deliveries(\\s+as\\s+\\w+)?$/i]`].map((selector) => ({
        selector,
        message: 'SQL on `deliveries` belongs to src/deliveries/ (its owner): call one of its functions (eslint.config.js).',
      })),
    ],
  },
};

module.exports = tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', '.scratch/', 'bench/out/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-empty-object-type': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The dashboard's scripts run in the browser (served as they are from assets/dashboard/).
    files: ['assets/dashboard/**/*.js'],
    languageOptions: { sourceType: 'module', globals: { ...globals.browser } },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { globals: { ...globals.jest } },
  },
  ...importDirection(),
  ownedTables,
);
