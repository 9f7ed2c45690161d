import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { compile, staleReason } from '../../scripts/build';

/**
 * scripts/build.js: `npm start` compiles only when the sources differ from what dist/ was compiled
 * from. Each test builds a small package of its own with the real tsc.
 */
const SCRIPT = path.resolve(__dirname, '..', '..', 'scripts', 'build.js');
let root: string;

function write(rel: string, text: string): void {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), text);
}

/** `node scripts/build.js --if-changed` on the package, as npm start's prestart runs it. */
function prestart(): { code: number | null; stderr: string } {
  const script = path.join(root, 'scripts', 'build.js');
  const res = spawnSync(process.execPath, [script, '--if-changed'], { cwd: root, encoding: 'utf8' });
  return { code: res.status, stderr: res.stderr };
}

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-build-'));
  write(
    'tsconfig.json',
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'commonjs', strict: true, types: [], rootDir: '.', outDir: 'dist', skipLibCheck: true },
      include: ['src', 'migrations', 'seeds'],
    }),
  );
  write('tsconfig.build.json', JSON.stringify({ extends: './tsconfig.json' }));
  write('package-lock.json', '{"lockfileVersion":3}\n');
  write('src/cli.ts', 'export const name: string = "herald";\n');
  write('migrations/001_first.ts', 'export const up = 1;\n');
  write('seeds/01_seed.ts', 'export const rows: number[] = [];\n');
  // The script as the package ships it, so `require.main === module` and its root are this package.
  write('scripts/build.js', fs.readFileSync(SCRIPT, 'utf8'));
  fs.symlinkSync(path.resolve(__dirname, '..', '..', 'node_modules'), path.join(root, 'node_modules'), 'dir');
});

afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

test('no dist/: builds; after a build nothing is stale', () => {
  expect(staleReason(root)).toMatch(/cli\.js is missing/);
  expect(compile(root)).toBe(0);
  expect(fs.existsSync(path.join(root, 'dist', 'src', 'cli.js'))).toBe(true);
  expect(staleReason(root)).toBeNull();
});

test('unchanged sources: the prestart check leaves dist/ as it is', () => {
  expect(compile(root)).toBe(0);
  // A file only a new compilation would remove (dist/ is emptied before tsc runs).
  write('dist/untouched', 'x');
  const res = prestart();
  expect(res.code).toBe(0);
  expect(res.stderr).toBe('');
  expect(fs.existsSync(path.join(root, 'dist', 'untouched'))).toBe(true);
});

test('a changed, added, deleted or renamed source makes dist/ stale; the prestart check compiles it', () => {
  expect(compile(root)).toBe(0);
  const file = (rel: string) => path.join(root, rel);
  const seed = fs.readFileSync(file('seeds/01_seed.ts'), 'utf8');
  // Each edit and its undo: stale after the edit, fresh again once undone (the stamp is of the content).
  const edits: Array<[string, () => void, () => void]> = [
    ['changed', () => write('src/cli.ts', 'export const name: string = "herald 2";\n'), () => write('src/cli.ts', 'export const name: string = "herald";\n')],
    ['added', () => write('src/extra.ts', 'export const extra = 2;\n'), () => fs.rmSync(file('src/extra.ts'))],
    ['deleted', () => fs.rmSync(file('seeds/01_seed.ts')), () => write('seeds/01_seed.ts', seed)],
    ['renamed', () => fs.renameSync(file('migrations/001_first.ts'), file('migrations/002_first.ts')), () => fs.renameSync(file('migrations/002_first.ts'), file('migrations/001_first.ts'))],
    ['tsconfig', () => write('tsconfig.build.json', JSON.stringify({ extends: './tsconfig.json', compilerOptions: { sourceMap: true } })), () => write('tsconfig.build.json', JSON.stringify({ extends: './tsconfig.json' }))],
    ['package-lock', () => write('package-lock.json', '{"lockfileVersion":3,"packages":{}}\n'), () => write('package-lock.json', '{"lockfileVersion":3}\n')],
  ];
  for (const [what, edit, undo] of edits) {
    edit();
    expect({ what, reason: staleReason(root) }).toEqual({ what, reason: expect.stringMatching(/sources changed/) });
    undo();
    expect({ what, reason: staleReason(root) }).toEqual({ what, reason: null });
  }
  // A renamed migration, compiled by the prestart check: the old name's output is gone, so it cannot run again.
  fs.renameSync(file('migrations/001_first.ts'), file('migrations/002_first.ts'));
  const res = prestart();
  expect(res.code).toBe(0);
  expect(res.stderr).toMatch(/Compiling Herald \(the sources changed/);
  expect(staleReason(root)).toBeNull();
  expect(fs.existsSync(file('dist/migrations/001_first.js'))).toBe(false);
  expect(fs.existsSync(file('dist/migrations/002_first.js'))).toBe(true);
});

test('a dist/ missing its entry point, or without a stamp (partly written), is compiled again', () => {
  expect(compile(root)).toBe(0);
  fs.rmSync(path.join(root, 'dist', 'src', 'cli.js'));
  expect(staleReason(root)).toMatch(/cli\.js is missing/);
  expect(compile(root)).toBe(0);
  fs.rmSync(path.join(root, 'dist', '.build-stamp'));
  expect(staleReason(root)).toMatch(/no build stamp/);
});

test('a failed compilation leaves no stamp: the next start compiles again', () => {
  expect(compile(root)).toBe(0);
  write('src/cli.ts', 'export const name: number = "not a number";\n');
  const failed = prestart();
  expect(failed.code).not.toBe(0);
  expect(staleReason(root)).toMatch(/no build stamp/);
  write('src/cli.ts', 'export const name: number = 3;\n');
  expect(prestart().code).toBe(0);
  expect(staleReason(root)).toBeNull();
});
