/**
 * Teams benchmark (issue 37): what a password costs and what signing in takes.
 *
 * 1. A password check (src/team/passwords.ts verifyPassword: scrypt N = 2^16, r = 8, p = 1), in this
 *    process, one at a time, `--checks` times after one warm-up. Target: the median between 50 ms
 *    and 250 ms on this machine — dear enough that a stolen table is slow to guess against, cheap
 *    enough for a sign-in. Also four at once (libuv's four threads: a burst of sign-ins), reported.
 * 2. Sign-in at /app as a browser does it, against Herald as `npm start` runs it (`node bin/herald.js
 *    serve`, the built code, connected as the ordinary role that owns the benchmark's database): the
 *    form's GET (its token and cookie), then POST /app/sign-in with email and password, until the
 *    303 with the session cookie. The user is written with SQL (a sealed scrypt hash, the same master
 *    key given to Herald by HERALD_MASTER_KEY). `--signins` sign-ins one after another; each is
 *    timed from the POST to its answer. Target: the median ≤ 300 ms.
 *
 *   npx tsx bench/team.ts [--checks 20] [--signins 20] [--no-build] [--keep]
 *
 * Run it under `flock /tmp/herald-bench.lock`; the load average is recorded beside the figures.
 * Prints a summary, writes bench/out/team.json, exits 1 on a FAIL.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hashPassword, SCRYPT, verifyPassword } from '../src/team/passwords';
import { sealText } from '../src/team/members';
import { build, createAccount, finishRun, log, runMain, startHerald } from './lib/herald';
import { appDatabaseUrl, connect, dropDatabase, recreateDatabase } from './lib/pg';
import { cpuBusy, median, writeResult } from './lib/sample';
import { args } from './lib/setup';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) && opts.get(name) !== true ? Number(opts.get(name)) : dflt);
const CHECKS = Math.max(3, num('checks', 20));
const SIGNINS = Math.max(3, num('signins', 20));
const DB = 'herald_bench_team';
const CHECK_MIN_MS = 50;
const CHECK_MAX_MS = 250;
const SIGN_IN_MAX_MS = 300;
const round = (x: number) => Math.round(x * 10) / 10;
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

async function passwordChecks(): Promise<{ one: number[]; fourAtOnce: number[] }> {
  const stored = await hashPassword('correct horse battery staple');
  await verifyPassword('correct horse battery staple', stored);
  const one: number[] = [];
  for (let i = 0; i < CHECKS; i++) {
    const t0 = process.hrtime.bigint();
    if (!(await verifyPassword(i % 2 ? 'correct horse battery staple' : 'wrong horse battery staple', stored)) !== !(i % 2)) throw new Error('check gave the wrong answer');
    one.push(ms(t0));
  }
  const fourAtOnce: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = process.hrtime.bigint();
    await Promise.all([0, 1, 2, 3].map(() => verifyPassword('nope', stored)));
    fourAtOnce.push(ms(t0));
  }
  return { one, fourAtOnce };
}

async function signInOnce(baseUrl: string, email: string, password: string): Promise<number> {
  const form = await fetch(`${baseUrl}/app`);
  const signInCookie = (form.headers.getSetCookie().find((c) => c.startsWith('herald_sign_in=')) ?? '').split(';')[0];
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const t0 = process.hrtime.bigint();
  const res = await fetch(`${baseUrl}/app/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { Cookie: signInCookie, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: token, email, password }).toString(),
  });
  await res.arrayBuffer();
  const took = ms(t0);
  const session = res.headers.getSetCookie().find((c) => c.startsWith('herald_session='));
  if (res.status !== 303 || !session) throw new Error(`sign-in answered ${res.status}`);
  return took;
}

async function main(): Promise<void> {
  const started = Date.now();
  if (!opts.has('no-build')) build();
  const loadBefore = os.loadavg()[0];
  const busyBefore = await cpuBusy();

  log(`password checks: scrypt N=2^${SCRYPT.logN}, r=${SCRYPT.r}, p=${SCRYPT.p}, ${CHECKS} one at a time`);
  const checks = await passwordChecks();
  const checkMedian = median(checks.one);
  log(`  median ${round(checkMedian)} ms (min ${round(Math.min(...checks.one))}, max ${round(Math.max(...checks.one))}); four at once ${checks.fourAtOnce.map(round).join(', ')} ms`);

  await recreateDatabase(DB);
  const url = appDatabaseUrl(DB);
  const account = await createAccount(url, 'Team');
  const masterKey = randomBytes(32);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-team-'));
  const email = 'owner@team.bench.test';
  const password = randomBytes(18).toString('base64url');
  const c = await connect(url);
  try {
    const sealed = sealText({ masterKey, dataDir }, await hashPassword(password));
    const row = (await c.query(`INSERT INTO members (user_id, email, name, role, password_hash) VALUES ($1, $2, 'Owner', 'owner', $3) RETURNING id`, [account.id, email, sealed])).rows[0] as { id: number };
    await c.query(`INSERT INTO member_logins (email, user_id, member_id) VALUES ($1, $2, $3)`, [email, account.id, row.id]);
  } finally {
    await c.end();
  }
  const herald = await startHerald({ databaseUrl: url, dataDir, env: { HERALD_MASTER_KEY: masterKey.toString('base64') } });
  const signIns: number[] = [];
  try {
    await signInOnce(herald.baseUrl, email, password); // warm-up
    for (let i = 0; i < SIGNINS; i++) signIns.push(await signInOnce(herald.baseUrl, email, password));
  } finally {
    await herald.stop();
    if (!opts.has('keep')) await dropDatabase(DB);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  const signInMedian = median(signIns);
  const loadAfter = os.loadavg()[0];
  log(`sign-in: median ${round(signInMedian)} ms (min ${round(Math.min(...signIns))}, max ${round(Math.max(...signIns))}) of ${SIGNINS}`);

  const checkPass = checkMedian >= CHECK_MIN_MS && checkMedian <= CHECK_MAX_MS;
  const signInPass = signInMedian <= SIGN_IN_MAX_MS;
  process.stdout.write(
    [
      '',
      `Teams: password check and sign-in (load ${round(loadBefore)} → ${round(loadAfter)}, CPUs ${Math.round(busyBefore * 100)} % busy before)`,
      `  password check (scrypt N=2^${SCRYPT.logN}, r=${SCRYPT.r}, p=${SCRYPT.p}): median ${round(checkMedian)} ms (target ${CHECK_MIN_MS}–${CHECK_MAX_MS}) ${checkPass ? 'PASS' : 'FAIL'}`,
      `  sign-in (POST /app/sign-in, email and password): median ${round(signInMedian)} ms (target ≤ ${SIGN_IN_MAX_MS}) ${signInPass ? 'PASS' : 'FAIL'}`,
      '',
    ].join('\n'),
  );
  const file = writeResult('team', { scrypt: SCRYPT, checksMs: checks.one, fourAtOnceMs: checks.fourAtOnce, signInsMs: signIns, checkMedian, signInMedian, loadBefore, loadAfter, busyBefore, checkPass, signInPass });
  finishRun(file, started, checkPass && signInPass, { checkPass, signInPass });
}

runMain(main);
