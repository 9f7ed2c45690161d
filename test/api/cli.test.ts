import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { setupApp, testDatabaseUrl } from '../helpers/app';
import { TEST_MASTER_KEY } from '../helpers/master-key';
import { freePort, freePorts } from '../helpers/net';
import { runHerald } from '../helpers/cli';

const { app, db } = setupApp();

/** Runs `herald <args>` in-process against the test database; returns what it printed. */
const herald = (...args: string[]) => runHerald(args);

describe('herald account', () => {
  it('create prints one JSON line with id and a working key pair', async () => {
    const { out } = await herald('account', 'create', '--name', 'Acme', '--email', 'ops@acme.test');
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(1);
    const created = JSON.parse(lines[0]);
    expect(Object.keys(created)).toEqual(['id', 'public_key', 'secret_key']);
    const row = await db('accounts').where({ id: created.id }).first();
    expect(row).toMatchObject({ name: 'Acme', email: 'ops@acme.test', public_key: created.public_key });
    // Only the digest is stored.
    expect(JSON.stringify(row)).not.toContain(created.secret_key);
    const res = await request(app).get('/notification-recipients').set({ PublicKey: created.public_key, SecretKey: created.secret_key });
    expect(res.status).toBe(200);
  });

  it('rotate-keys replaces the pair: the old one stops working at once', async () => {
    const created = JSON.parse((await herald('account', 'create', '--name', 'Rot', '--email', 'r@acme.test')).out);
    const rotated = JSON.parse((await herald('account', 'rotate-keys', '--id', String(created.id))).out);
    expect(rotated.id).toBe(created.id);
    expect(rotated.public_key).not.toBe(created.public_key);
    const old = await request(app).get('/notification-recipients').set({ PublicKey: created.public_key, SecretKey: created.secret_key });
    expect(old.status).toBe(401);
    const fresh = await request(app).get('/notification-recipients').set({ PublicKey: rotated.public_key, SecretKey: rotated.secret_key });
    expect(fresh.status).toBe(200);
  });

  it('rotate-keys of an unknown account fails with a message', async () => {
    const { err, exitCode } = await herald('account', 'rotate-keys', '--id', '999999999');
    expect(err).toContain('No account with id 999999999');
    expect(exitCode).toBe(1);
  });

  it('create requires --name and --email', async () => {
    await expect(herald('account', 'create', '--name', 'x')).rejects.toThrow(/--email/);
  });
});

describe('herald migrate / seed', () => {
  it('are safe to repeat', async () => {
    expect((await herald('migrate')).out).toBe('already up to date\n');
    expect((await herald('seed')).out).toMatch(/^seeded: 01_reserved-fields/);
  });
});

describe('herald dns', () => {
  it('prints the records to publish for MAIL_FROM’s domain, the same key each time, and --json', async () => {
    process.env.MAIL_FROM = 'herald@cli-dns.test';
    try {
      const { out, exitCode } = await herald('dns');
      expect(exitCode).toBe(0);
      const lines = out.trim().split('\n');
      expect(lines[0]).toBe('# DNS records for cli-dns.test (purpose, type, host, value, status)');
      expect(lines[1]).toMatch(/^dkim\tTXT\therald\d{7,}\._domainkey\.cli-dns\.test\t"v=DKIM1; k=rsa; p=MIIB[A-Za-z0-9+/=]+"\tunchecked$/);
      expect(lines.slice(2).map((l) => l.split('\t').slice(0, 3).join(' '))).toEqual(['spf TXT cli-dns.test', 'dmarc TXT _dmarc.cli-dns.test']);
      const json = JSON.parse((await herald('dns', '--json')).out);
      expect(json.domain).toBe('cli-dns.test');
      expect(`"${json.records[0].value}"`).toBe(lines[1].split('\t')[3]);
      expect(await db('dkim_keys').whereNull('user_id').where({ domain: 'cli-dns.test' }).select('state')).toEqual([{ state: 'active' }]);
    } finally {
      delete process.env.MAIL_FROM;
    }
  });
});

/** `herald <args>` as its own process (from the TypeScript sources), as an operator starts it: its exit code and output. */
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

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

describe('herald serve refuses a bad configuration before anything starts', () => {
  const base = () => ({ DATABASE_URL: testDatabaseUrl(), DATA_DIR: path.join(os.tmpdir(), `herald-cli-${process.pid}`), HERALD_MASTER_KEY: TEST_MASTER_KEY, WORKER: '0' });

  it('a bad SMTP_URL: stderr names it and the problem, never its password; exit 2', async () => {
    const { code, stdout, stderr } = await heraldProcess({ ...base(), SMTP_URL: 'smtps://mailer:Pw-s3cret-77@smtp.example.com:notaport' }, 'serve');
    expect(code).toBe(2);
    expect(stderr).toBe('Invalid configuration:\n  SMTP_URL (value not shown): has a port that is not a number from 0 to 65535\n');
    expect(stdout + stderr).not.toContain('s3cret');
  });

  it('INBOUND_SMTP_PORT without BOUNCE_DOMAIN: exit 2 and nothing listening (it used to log "listening", then exit 1)', async () => {
    const [port, inboundPort] = await freePorts(2);
    const { code, stdout, stderr } = await heraldProcess({ ...base(), PORT: String(port), INBOUND_SMTP_PORT: String(inboundPort) }, 'serve');
    expect({ code, stderr }).toEqual({ code: 2, stderr: expect.stringContaining('INBOUND_SMTP_PORT needs BOUNCE_DOMAIN') });
    expect(stdout + stderr).not.toMatch(/listening/i);
    expect(await listening(port)).toBe(false);
    expect(await listening(inboundPort)).toBe(false);
  });

  it('herald inbound without BOUNCE_DOMAIN: exit 2 before touching the database', async () => {
    const { code, stderr } = await heraldProcess({ ...base(), DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, 'inbound');
    expect(code).toBe(2);
    expect(stderr).toContain('herald inbound needs BOUNCE_DOMAIN');
  });
});

describe('how Herald is started (issue 33: the V8 flags, npm run screenshots)', () => {
  const ROOT = path.resolve(__dirname, '..', '..');
  /** Node's options of every way Herald starts (docs/decisions.md: pretenuring off, 8 MB semi-spaces). */
  const FLAGS = ['--no-allocation-site-pretenuring', '--max-semi-space-size=8'];

  /** Runs `file args` with a preload that reports the process's node options (process.execArgv). */
  function execArgvOf(file: string, args: string[]): Promise<string[]> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-execargv-'));
    const report = path.join(dir, 'execargv.json');
    fs.writeFileSync(path.join(dir, 'preload.js'), `require('fs').writeFileSync(${JSON.stringify(report)}, JSON.stringify(process.execArgv));\n`);
    const child = spawn(file, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_OPTIONS: `--require ${path.join(dir, 'preload.js')}` },
      stdio: 'ignore',
    });
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('close', () => {
        try {
          resolve(JSON.parse(fs.readFileSync(report, 'utf8')) as string[]);
        } catch (err) {
          reject(err);
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
      });
    });
  }

  it('the herald command runs with its V8 flags from its command line (the shebang), not set after start', async () => {
    expect(await execArgvOf(path.join(ROOT, 'bin', 'herald.js'), ['--version'])).toEqual(FLAGS);
    expect(fs.readFileSync(path.join(ROOT, 'bin', 'herald.js'), 'utf8')).not.toMatch(/setFlagsFromString\s*\(/);
  });

  it('npm start and the Docker image pass the flags to node before bin/herald.js', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe(`node ${FLAGS.join(' ')} bin/herald.js serve`);
    const entrypoint = /^ENTRYPOINT (.*)$/m.exec(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))?.[1];
    expect(JSON.parse(entrypoint ?? '[]')).toEqual(['node', ...FLAGS, 'bin/herald.js']);
  });

  /** `npm run screenshots` (scripts/screenshots.ts) with `env`; the demo accounts it wrote, before and after. */
  async function screenshots(env: Record<string, string>): Promise<{ code: number | null; stderr: string; demoAccounts: [number, number] }> {
    const demos = async () => Number((await db('accounts').where('email', 'like', 'demo.%@acme.example').count<{ n: string }[]>('* as n'))[0].n);
    const before = await demos();
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'screenshots.ts'), '--out', os.tmpdir()], {
      cwd: ROOT,
      env: { HOME: process.env.HOME ?? '', DATABASE_URL: testDatabaseUrl(), ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    return { code, stderr, demoAccounts: [before, await demos()] };
  }

  it('npm run screenshots without a browser says how to get one and exits 1 before writing anything', async () => {
    // A PATH holding node only: no chromium on it.
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-nochromium-'));
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    try {
      const none = await screenshots({ PATH: bin });
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/^npm run screenshots: no Chromium found: install it \(Debian: apt-get install chromium\) or set CHROMIUM_PATH/);
      expect(none.stderr).not.toMatch(/\n\s+at /); // a message, not a stack
      expect(none.demoAccounts[1]).toBe(none.demoAccounts[0]);

      const wrong = await screenshots({ PATH: bin, CHROMIUM_PATH: path.join(bin, 'chromium') });
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain(`CHROMIUM_PATH=${path.join(bin, 'chromium')} is not an executable file`);
      expect(wrong.demoAccounts[1]).toBe(wrong.demoAccounts[0]);
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });
});

describe('herald config check', () => {
  const base = () => ({ DATA_DIR: path.join(os.tmpdir(), `herald-cli-${process.pid}`), HERALD_MASTER_KEY: TEST_MASTER_KEY });

  /** A TCP listener on loopback that counts who connects (a database or SMTP server that must not be reached). */
  async function countingListener(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
    let n = 0;
    const server = net.createServer((socket) => {
      n += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      port: (server.address() as net.AddressInfo).port,
      connections: () => n,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }

  it('a good configuration: "configuration OK", exit 0, and neither the database nor the SMTP server is reached', async () => {
    const [database, smtp] = [await countingListener(), await countingListener()];
    try {
      const { code, stdout, stderr } = await heraldProcess(
        {
          ...base(),
          DATABASE_URL: `postgres://herald:Pw-s3cret@127.0.0.1:${database.port}/herald`,
          SMTP_URL: `smtp://mailer:Pw-s3cret@127.0.0.1:${smtp.port}`,
          PUBLIC_URL: 'https://herald.example.com',
          BOUNCE_DOMAIN: 'bounces.example.com',
        },
        'config',
        'check',
      );
      expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: 'configuration OK\n', stderr: '' });
      expect({ database: database.connections(), smtp: smtp.connections() }).toEqual({ database: 0, smtp: 0 });
    } finally {
      await database.close();
      await smtp.close();
    }
  });

  it('a configuration serve refuses: the same errors serve prints (secrets not shown), exit 1, nothing started', async () => {
    const env = {
      ...base(),
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      // Started before BOUNCE_DOMAIN needed INBOUND_HOSTNAME with an IP in PUBLIC_URL (CHANGELOG, "Upgrading").
      PUBLIC_URL: 'http://203.0.113.7:3000',
      BOUNCE_DOMAIN: 'bounces.example.com',
      PORT: String(await freePort()),
    };
    const check = await heraldProcess(env, 'config', 'check');
    expect(check.code).toBe(1);
    expect(check.stdout).toBe('');
    expect(check.stderr).toBe("Invalid configuration:\n  BOUNCE_DOMAIN needs INBOUND_HOSTNAME when PUBLIC_URL's host is an IP address: the bounce domain's MX record names a host\n");
    const serve = await heraldProcess(env, 'serve');
    expect({ code: serve.code, stderr: serve.stderr }).toEqual({ code: 2, stderr: check.stderr });
    // With the setting the message asks for, the same configuration passes.
    expect((await heraldProcess({ ...env, INBOUND_HOSTNAME: 'mx.example.com' }, 'config', 'check')).stdout).toBe('configuration OK\n');
  });

  it('shows no password of a URL setting, PUBLIC_URL’s included', async () => {
    const { code, stdout, stderr } = await heraldProcess(
      { ...base(), SMTP_URL: 'smtps://mailer:Pw-s3cret-77@smtp.example.com:notaport', PUBLIC_URL: 'https://admin:Pw-s3cret-78@herald.example.com' },
      'config',
      'check',
    );
    expect(code).toBe(1);
    expect(stderr).toBe(
      [
        'Invalid configuration:',
        '  SMTP_URL (value not shown): has a port that is not a number from 0 to 65535',
        '  PUBLIC_URL="https://***@herald.example.com": must not contain a user name or password: every link in Herald’s mail starts with it',
        '',
      ].join('\n'),
    );
    expect(stdout + stderr).not.toMatch(/s3cret|admin|mailer/);
  });
});
