import fs from 'node:fs';
import path from 'node:path';

/**
 * The README's Configuration table names every environment variable src/config.ts reads (issue 33:
 * IMPORT_TIMEOUT_MS was missing). Tests-only settings are the exception.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const TESTS_ONLY = new Set(['SES_SNS_TEST_CERT_PEM']);

test('every setting of src/config.ts has a row in the README', () => {
  // The settings list: `setting('NAME', …)` / `secret('NAME', …)` calls (the doc comment's example has no `: `).
  const source = fs.readFileSync(path.join(ROOT, 'src', 'config.ts'), 'utf8');
  const names = [...source.matchAll(/^\s+\w+: (?:setting|secret)\('([A-Z0-9_]+)'/gm)].map((m) => m[1]);
  expect(names.length).toBeGreaterThan(40);
  const rows = fs
    .readFileSync(path.join(ROOT, 'README.md'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.split(' | ')[0]);
  const inTable = (name: string) => rows.some((cell) => cell.includes(`\`${name}\``));
  expect(names.filter((n) => !TESTS_ONLY.has(n) && !inTable(n))).toEqual([]);
});
