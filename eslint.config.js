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
  ['events', 'suppression', 'webhooks', 'bounces', 'sources', 'statistics', 'ab', 'contacts', 'deliveries', 'single-sends', 'render', 'forms', 'consent'],
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
 * One owner per table: SQL on a hot table is written only in its owner's folder (its statements,
 * named functions the others call); tests and benchmarks may read the tables to check what
 * happened. Caught, for each table: a string or template text that reads, joins, inserts into,
 * updates or deletes from it (`FROM|JOIN|INTO|UPDATE|TABLE <table>`, any case, the name whole:
 * `webhook_deliveries` or `single_send_variations` is another table), and a knex call whose
 * argument is the table's name, alone or aliased (`db('events')`, `.from('deliveries as d')`,
 * `.join('single_sends as s', …)`, `scoped(ctx, 'events')`). `listPayload('deliveries' |
 * 'events', …)` names the API's list key of a response, no table.
 *
 * Not caught, on purpose or because a syntax rule cannot see it: a name built at run time or
 * held in a value (`db(table)`, `FROM ${OWNERS[kind].table}`: the statistics writer, the
 * statistics reads and the utr joins reach single sends and automations by their owner kind,
 * src/sources, written once for both); a schema-qualified or quoted name (`public.events`,
 * `"events"`); `TRUNCATE events` without TABLE, `FROM ONLY events`, `REFERENCES single_sends`
 * (a foreign key's definition, src/db/citus.ts); a column named with its table (`'events.id'`)
 * on a query that began in the owner; an English sentence that happens to read "from events"
 * (rephrase it).
 */
const OWNED_TABLES = {
  deliveries: 'src/deliveries',
  events: 'src/events',
  single_sends: 'src/single-sends',
};

/** The selectors that refuse SQL on `table`. */
function sqlOn(table) {
  const text = new RegExp(`\\b(FROM|JOIN|INTO|UPDATE|TABLE)\\s+${table}\\b`, 'i');
  return [
    `Literal[value=${text}]`,
    `TemplateElement[value.raw=${text}]`,
    `CallExpression:not([callee.name='listPayload']) > Literal.arguments[value=/^${table}(\\s+as\\s+\\w+)?$/i]`,
  ].map((selector) => ({
    selector,
    message: `SQL on \`${table}\` belongs to ${OWNED_TABLES[table]}/ (its owner): call one of its functions (eslint.config.js).`,
  }));
}

/**
 * One config per owner folder (every table's rule but its own) and one for the rest of src/:
 * a file gets its `no-restricted-syntax` from exactly one of them (a later config's options
 * would replace an earlier one's, not add to them).
 */
function ownedTables() {
  const tables = Object.keys(OWNED_TABLES);
  const owners = tables.map((t) => `${OWNED_TABLES[t]}/**`);
  const rule = (refused) => ({ 'no-restricted-syntax': ['error', ...refused.flatMap(sqlOn)] });
  return [
    { files: ['src/**/*.{ts,tsx}'], ignores: owners, rules: rule(tables) },
    ...tables.map((own) => ({ files: [`${OWNED_TABLES[own]}/**/*.{ts,tsx}`], rules: rule(tables.filter((t) => t !== own)) })),
  ];
}

module.exports = tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', '.scratch/', 'bench/out/', 'assets/dashboard/dist/'] },
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
    // The dashboard's browser code in TypeScript, bundled by scripts/build.js (client/tsconfig.json).
    files: ['client/**/*.{ts,tsx}'],
    languageOptions: { sourceType: 'module', globals: { ...globals.browser } },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: { globals: { ...globals.jest } },
  },
  ...importDirection(),
  ...ownedTables(),
);
