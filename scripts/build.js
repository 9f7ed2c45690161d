#!/usr/bin/env node
'use strict';
/**
 * Compiles Herald's TypeScript to dist/ and bundles the dashboard's browser code (client/) into
 * assets/dashboard/dist/ (`npm run build`, which npm install runs through `prepare`), or, with
 * `--if-changed` (npm start's `prestart`), only when the sources differ from the ones they were
 * built from.
 *
 * What dist/ was compiled from is a stamp: one SHA-256 over the path and the content of every file
 * under src/, client/, migrations/ and seeds/ and of knexfile.ts, the tsconfig files and
 * package-lock.json (the versions of TypeScript, esbuild and the bundled libraries). A changed,
 * added, deleted or renamed file changes it. A build removes dist/ and assets/dashboard/dist/
 * first (a deleted source leaves no stale .js behind, such as a migration that would still run)
 * and writes the stamp last, and only when tsc and the bundling succeeded: a build that failed or
 * was killed half-way leaves no stamp, so the next start builds again. The check itself is plain
 * JavaScript with no dependency, so it costs a start a few tens of milliseconds.
 *
 * The bundles: each file at the top of client/ (`client/<name>.ts` or `.tsx`) is an entry, bundled
 * with what it imports (client/lib/, preact, CodeMirror) by esbuild into one minified ES module,
 * assets/dashboard/dist/<name>.js, which a dashboard page loads as `scripts={['dist/<name>.js']}`.
 * No eval, no inline script: the dashboard's CSP (script-src 'self') loads them as they are.
 *
 *   node scripts/build.js [--if-changed]
 */
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

/** The inputs of the compiled output, relative to the package root (folders are walked). */
const INPUTS = ['src', 'client', 'migrations', 'seeds', 'knexfile.ts', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];
const STAMP = path.join('dist', '.build-stamp');
/** What `herald` runs: without it, dist/ is not a build whatever the stamp says. */
const ENTRY = path.join('dist', 'src', 'cli.js');
/** Where the browser bundles go (served under /app/assets/dist/). */
const BUNDLES = path.join('assets', 'dashboard', 'dist');

/** Every file under `rel` (a file or a folder), as sorted `/`-separated paths relative to `root`. */
function files(root, rel) {
  const abs = path.join(root, rel);
  let stat;
  try {
    stat = fs.statSync(abs);
  } catch {
    return [];
  }
  if (!stat.isDirectory()) return [rel.split(path.sep).join('/')];
  return fs
    .readdirSync(abs)
    .sort()
    .flatMap((name) => files(root, path.join(rel, name)));
}

/** The stamp of the sources under `root` as they are now. */
function sourceStamp(root) {
  const hash = crypto.createHash('sha256');
  for (const input of INPUTS) {
    for (const file of files(root, input)) {
      const content = fs.readFileSync(path.join(root, file));
      // Path and length before the content: no two different trees hash the same bytes.
      hash.update(`${file}\0${content.length}\0`);
      hash.update(content);
    }
  }
  return hash.digest('hex');
}

/** The bundles' entry points: the .ts and .tsx files at the top of client/ (none without client/). */
function clientEntries(root) {
  let names;
  try {
    names = fs.readdirSync(path.join(root, 'client'));
  } catch {
    return [];
  }
  return names
    .filter((name) => /\.tsx?$/.test(name) && !name.endsWith('.d.ts'))
    .sort()
    .map((name) => path.join('client', name));
}

/** The bundle each entry becomes (`client/block-editor.tsx` → assets/dashboard/dist/block-editor.js). */
const bundleOf = (entry) => path.join(BUNDLES, `${path.basename(entry).replace(/\.tsx?$/, '')}.js`);

/** Why dist/ under `root` must be compiled again, or null when it was compiled from these sources. */
function staleReason(root) {
  if (!fs.existsSync(path.join(root, ENTRY))) return `${ENTRY} is missing`;
  const missing = clientEntries(root).map(bundleOf).find((bundle) => !fs.existsSync(path.join(root, bundle)));
  if (missing) return `${missing} is missing`;
  let stamp;
  try {
    stamp = fs.readFileSync(path.join(root, STAMP), 'utf8').trim();
  } catch {
    return 'dist/ has no build stamp (never completed, or built by an older Herald)';
  }
  return stamp === sourceStamp(root) ? null : 'the sources changed since dist/ was compiled';
}

/**
 * Bundles client/'s entries into assets/dashboard/dist/ (emptied first) with esbuild: ES modules
 * for the browsers of today (ES2022), minified, JSX for preact. esbuild checks no types (`npm run
 * typecheck` does, with client/tsconfig.json). Returns 0, or 1 after printing esbuild's errors.
 */
function bundleClient(root) {
  const entries = clientEntries(root);
  fs.rmSync(path.join(root, BUNDLES), { recursive: true, force: true });
  if (entries.length === 0) return 0;
  const esbuild = require(require.resolve('esbuild', { paths: [root, __dirname] }));
  try {
    esbuild.buildSync({
      absWorkingDir: root,
      entryPoints: entries,
      outdir: BUNDLES,
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: ['es2022'],
      minify: true,
      jsx: 'automatic',
      jsxImportSource: 'preact',
      // Licences of the bundled libraries in one file beside the bundles, not in each of them.
      legalComments: 'linked',
      logLevel: 'warning',
    });
    return 0;
  } catch {
    // esbuild has printed its errors (logLevel); the half-written folder must not be served.
    fs.rmSync(path.join(root, BUNDLES), { recursive: true, force: true });
    return 1;
  }
}

/**
 * Removes dist/, runs tsc on tsconfig.build.json, bundles client/, and writes the stamp of the
 * sources it built when both succeeded. Returns the exit code (tsc still emits on type errors;
 * no stamp then).
 */
function compile(root) {
  const before = sourceStamp(root);
  fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
  const tsc = require.resolve('typescript/bin/tsc', { paths: [root, __dirname] });
  const res = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
  const tscCode = res.status === null ? 1 : res.status;
  const code = tscCode === 0 ? bundleClient(root) : tscCode;
  // A source edited while tsc ran: the output may mix both versions, so it gets no stamp.
  if (code === 0 && sourceStamp(root) === before) fs.writeFileSync(path.join(root, STAMP), `${before}\n`);
  return code;
}

/** `--if-changed`: compiles only when staleReason() says so. Returns the exit code. */
function main(argv, root) {
  if (argv.includes('--if-changed')) {
    const reason = staleReason(root);
    if (reason === null) return 0;
    process.stderr.write(`Compiling Herald (${reason}); unchanged sources are not compiled again.\n`);
  }
  return compile(root);
}

module.exports = { sourceStamp, staleReason, compile, bundleClient, INPUTS };

if (require.main === module) process.exitCode = main(process.argv.slice(2), path.resolve(__dirname, '..'));
