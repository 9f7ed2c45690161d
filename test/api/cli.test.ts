import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli';
import { setupApp, testDatabaseUrl } from '../helpers/app';

const { app, db } = setupApp();

/** Commander exits the process on usage errors unless every (sub)command says otherwise. */
function throwInsteadOfExit(cmd: Command): Command {
  cmd.exitOverride();
  cmd.commands.forEach(throwInsteadOfExit);
  return cmd;
}

/** Runs `herald <args>` in-process against the test database; returns what it printed. */
async function herald(...args: string[]): Promise<{ out: string; err: string; exitCode: number }> {
  const saved = { ...process.env };
  process.env.DATABASE_URL = testDatabaseUrl();
  process.env.DATA_DIR = path.join(os.tmpdir(), `herald-cli-${process.pid}`);
  process.env.LOG_LEVEL = 'silent';
  let out = '';
  let err = '';
  const o = jest.spyOn(process.stdout, 'write').mockImplementation((c) => ((out += String(c)), true));
  const e = jest.spyOn(process.stderr, 'write').mockImplementation((c) => ((err += String(c)), true));
  process.exitCode = 0;
  try {
    await throwInsteadOfExit(buildProgram()).parseAsync(['node', 'herald', ...args]);
  } finally {
    o.mockRestore();
    e.mockRestore();
    process.env = saved;
  }
  const exitCode = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { out, err, exitCode };
}

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
