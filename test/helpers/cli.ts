import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli';
import { testDatabaseUrl } from './app';
import { TEST_MASTER_KEY } from './master-key';

/** Commander exits the process on usage errors unless every (sub)command says otherwise. */
function throwInsteadOfExit(cmd: Command): Command {
  cmd.exitOverride();
  cmd.commands.forEach(throwInsteadOfExit);
  return cmd;
}

export interface CliRun {
  out: string;
  err: string;
  exitCode: number;
}

/**
 * Runs `herald <args>` in-process against the test database (the test master key, a temporary
 * DATA_DIR, no log), with `env` on top; returns what it printed and its exit code. A usage error
 * rejects with commander's error.
 */
export async function runHerald(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const saved = { ...process.env };
  process.env.DATABASE_URL = testDatabaseUrl();
  process.env.DATA_DIR = path.join(os.tmpdir(), `herald-cli-${process.pid}`);
  process.env.LOG_LEVEL = 'silent';
  process.env.HERALD_MASTER_KEY = TEST_MASTER_KEY;
  Object.assign(process.env, env);
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
