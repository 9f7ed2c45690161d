import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../helpers/net';

/**
 * A bad routes document stops `herald serve` and `herald worker` before anything starts, as every
 * other bad setting does (test/api/cli.test.ts): exit 2, the route and the field on stderr, never
 * the url or its password. SMTP_URL beside SMTP_ROUTES is not an error: a warning.
 */

const PASSWORD = 'Pw-s3cret-41';
const URL_WITH_PASSWORD = `smtp://mailer:${PASSWORD}@relay.example.net:587`;

/** `herald <args>` as its own process, as an operator starts it. */
function heraldProcess(env: Record<string, string>, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const main = `require('./src/cli.ts').buildProgram().parseAsync(['node', 'herald', ...${JSON.stringify(args)}])`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', main], {
    cwd: path.resolve(__dirname, '..', '..'),
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

const base = async () => ({
  // Never reached: the configuration is refused first.
  DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
  DATA_DIR: path.join(os.tmpdir(), `herald-routes-config-${process.pid}`),
  PORT: String(await freePort()),
  LOG_LEVEL: 'warn',
});

describe('a bad SMTP_ROUTES is refused at start', () => {
  const routes = JSON.stringify([
    { name: 'own', url: URL_WITH_PASSWORD, streams: ['marketing', 'system'] },
    { name: 'ses', url: URL_WITH_PASSWORD, max_per_hour: 0 },
  ]);

  it.each(['serve', 'worker'])('herald %s: exit 2, route and field named, no secret shown, nothing started', async (command) => {
    const { code, stdout, stderr } = await heraldProcess({ ...(await base()), SMTP_ROUTES: routes, SMTP_URL: URL_WITH_PASSWORD }, command);
    expect({ code, stdout, stderr }).toEqual({
      code: 2,
      stdout: '',
      stderr: 'Invalid configuration:\n  SMTP_ROUTES (value not shown): route "ses" (2nd): max_per_hour: must be a positive integer\n',
    });
  });

  it('herald config check: the same message, exit 1; a good document passes with the SMTP_URL warning', async () => {
    const env = await base();
    const bad = await heraldProcess({ ...env, SMTP_ROUTES: routes }, 'config', 'check');
    expect(bad).toEqual({ code: 1, stdout: '', stderr: 'Invalid configuration:\n  SMTP_ROUTES (value not shown): route "ses" (2nd): max_per_hour: must be a positive integer\n' });
    const good = await heraldProcess({ ...env, SMTP_ROUTES: JSON.stringify([{ name: 'own', url: URL_WITH_PASSWORD }]), SMTP_URL: URL_WITH_PASSWORD }, 'config', 'check');
    expect(good).toEqual({ code: 0, stdout: 'configuration OK\n', stderr: 'warning: SMTP_URL is ignored: SMTP_ROUTES lists the delivery routes\n' });
  });

  it('herald serve logs the SMTP_URL warning at start', async () => {
    // The database cannot be reached, so serve stops after logging its warning.
    const { code, stdout, stderr } = await heraldProcess(
      { ...(await base()), SMTP_ROUTES: JSON.stringify([{ name: 'own', url: URL_WITH_PASSWORD }]), SMTP_URL: URL_WITH_PASSWORD },
      'serve',
    );
    expect(code).not.toBe(0);
    const warning = stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .find((l) => l.msg.startsWith('SMTP_URL is ignored'));
    expect(warning).toMatchObject({ level: 40, msg: 'SMTP_URL is ignored: SMTP_ROUTES lists the delivery routes' });
    expect(stdout + stderr).not.toContain(PASSWORD);
  });
});
