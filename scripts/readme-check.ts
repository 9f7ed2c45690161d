/**
 * Runs the README's commands against a fresh Herald, as a newcomer would type them (issue 33: every
 * command in the README is run by a test or a script in CI).
 *
 *   npm run readme:check          (npx tsx scripts/readme-check.ts [--keep])
 *
 * - Herald is started the way the quick start says, `npm start`, on a temporary DATA_DIR (embedded
 *   PostgreSQL), a free PORT and EMBEDDED_DB_PORT, with `WEBHOOK_ALLOW_HOSTS=127.0.0.1` (what the
 *   Webhooks section tells a reader to start with) and `DNS_SERVERS` pointing at a closed loopback port,
 *   so the DNS checks look nothing up beyond this machine. Mail goes to the outbox (no SMTP_URL), as the
 *   README's examples assume.
 * - Every ```sh block of the README is either run or named in NOT_RUN with the reason; a block that is
 *   neither fails the check, so a new example cannot be added without being run (or excused).
 * - The blocks run in their order, in one bash (`set -euo pipefail`), so the shell variables the README
 *   defines ($HERALD, $PK, $SK, $H) carry on from block to block. The only substitutions are the
 *   placeholders the README tells the reader to fill in: `http://localhost:3000` in `HERALD=` (the port
 *   Herald was given), `pk_…`/`sk_…` (the keys the first start printed), `<link>` (the verification
 *   link Herald logged), `<utr>`, `<next_cursor>` and `whsec_…` (from the answers to earlier calls).
 *   The Webhooks section's receiver (the README's ```js block) is saved as receiver.js in the working
 *   folder, beside a link to the clone's bin/ (the blocks' ./bin/herald.js); NODE_PATH stands in for
 *   the receiver's `npm install express standardwebhooks`.
 * - Any command that exits non-zero, or any answer with "status":"failed" or "status":"error", fails the
 *   check. Afterwards Herald is stopped with SIGTERM, must exit 0, and must leave no PostgreSQL behind.
 *
 * Exits 0 and prints "README check: N passed, 0 failed" when every block ran.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePorts } from '../test/helpers/net';

const ROOT = path.resolve(__dirname, '..');
const README = path.join(ROOT, 'README.md');

/** README blocks (matched by a line they contain) that this script does not run, and why. */
const NOT_RUN: Array<{ line: string; why: string }> = [
  { line: 'npm install && npm start', why: '.ci/run runs npm ci (which compiles, as npm install does) and npm test; this script starts Herald with npm start' },
  { line: 'npm run build', why: '.ci/run runs npm ci (prepare → build), npm run lint, npm run typecheck and npm test' },
  { line: 'docker compose up --build', why: 'no Docker on the CI machine (the images are not in a package registry it reaches)' },
  { line: 'BOUNCE_IMAP_URL=', why: 'needs an IMAP mailbox; test/bounces runs the follower against a local Dovecot' },
  { line: 'SMTP_ROUTES_FILE=', why: 'needs the relays it names; test/delivery/routes-*.test.ts run routes documents against SMTP servers on loopback, test/api/routes-config.test.ts the refusals at start' },
  { line: 'user create --account 2', why: 'an operator command against the database of a running installation (account 2 is an example); test/api/users-cli.test.ts runs user create, link, list and remove' },
  { line: 'account routes --id', why: 'needs SMTP_ROUTES with the route it names (this check sends to the outbox); test/api/account-routes-cli.test.ts runs the command' },
];
/** Single lines of run blocks that are left out, and why. */
const LINES_NOT_RUN: Array<{ line: string; why: string }> = [
  { line: 'suppressions/message?id=<id>', why: 'needs a bounce or complaint report received; test/api/suppressions.test.ts reads one back' },
];
/** How much of each output line the log shows. */
const LINE_MAX = 300;
/** Commands named in the README's text (not in a block), run elsewhere or not at all, and why. */
const INLINE_ELSEWHERE = [
  'npm run citus:up / citus:down: needs Citus built from its source; .ci/run runs npm run test:citus, which uses the same scripts',
  'docker compose -f docker-compose.citus.yml up: no Docker on the CI machine',
  'npm run screenshots: test/api/cli.test.ts runs it without a browser; .ci/run installs Chromium for the browser tests',
  'apt-get install …: .ci/run installs the same packages',
  './bin/herald.js account create / rotate-keys / migrate / seed / config check / dns: test/api/cli.test.ts',
  './bin/herald.js user list / create / link / remove: test/api/users-cli.test.ts',
];

interface Block {
  lang: string;
  start: number;
  text: string;
}

function blocks(markdown: string): Block[] {
  const out: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^```(\w*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const start = i + 1;
    let j = i + 1;
    while (j < lines.length && !/^```\s*$/.test(lines[j])) j += 1;
    out.push({ lang: open[1], start, text: lines.slice(i + 1, j).join('\n') });
    i = j;
  }
  return out;
}

/** The bash prelude: curl that checks every answer and keeps the values later placeholders stand for. */
const PRELUDE = String.raw`set -euo pipefail
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
README_UTR= README_NEXT_CURSOR= README_WHSEC=
curl() {
  local out
  out=$(command curl --show-error "$@") || { echo "README check: curl exited $? for: curl $*" >&2; return 1; }
  printf '%s\n' "$out"
  if grep -q '"status":"\(failed\|error\)"' <<<"$out"; then echo "README check: an error answer to: curl $*" >&2; return 1; fi
  local v
  v=$(grep -o '"utr":"[^"]*"' <<<"$out" | head -1 | cut -d'"' -f4 || true); [ -z "$v" ] || README_UTR=$v
  v=$(grep -o '"next_cursor":"[^"]*"' <<<"$out" | head -1 | cut -d'"' -f4 || true); [ -z "$v" ] || README_NEXT_CURSOR=$v
  v=$(grep -o '"secret":"whsec_[^"]*"' <<<"$out" | head -1 | cut -d'"' -f4 || true); [ -z "$v" ] || README_WHSEC=$v
  return 0
}
`;

async function waitFor(what: string, check: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`README check: ${what} within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<number> {
  const started = Date.now();
  const markdown = fs.readFileSync(README, 'utf8');
  const all = blocks(markdown);
  const receiver = all.find((b) => b.lang === 'js' && b.text.includes("require('standardwebhooks')"));
  if (!receiver) throw new Error('README check: the Webhooks section has no receiver (```js block using standardwebhooks)');

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-readme-'));
  fs.chmodSync(work, 0o755); // as root the embedded PostgreSQL runs as `postgres`, which must enter it
  const dataDir = path.join(work, 'data');
  fs.writeFileSync(path.join(work, 'receiver.js'), `${receiver.text}\n`);
  // The blocks run in the working folder (receiver.js is there) as if in the clone: ./bin/herald.js
  // is the clone's (node follows the link, so it finds the clone's dist/).
  fs.symlinkSync(path.join(ROOT, 'bin'), path.join(work, 'bin'));
  const [port, dbPort, closedPort] = await freePorts(3);
  if (!(await freePortIs(4000))) throw new Error('README check: port 4000 (the README receiver\'s) is in use');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LANG: process.env.LANG,
    DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDED_DB_PORT: String(dbPort),
    WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    DNS_SERVERS: `127.0.0.1:${closedPort}`,
  };
  const logFile = path.join(work, 'herald.log');
  const log = fs.openSync(logFile, 'w');
  // npm start in its own process group: the SIGTERM at the end reaches npm, its shell and Herald.
  const herald = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', log, log], detached: true });
  fs.closeSync(log);
  const exited = new Promise<number | null>((resolve) => herald.once('exit', (code) => resolve(code)));
  const logText = () => fs.readFileSync(logFile, 'utf8');
  let ran = 0;
  let failed = 0;
  try {
    await waitFor(
      'Herald answered /healthz',
      async () => {
        if (herald.exitCode !== null) throw new Error(`README check: npm start exited ${herald.exitCode}:\n${logText().slice(-3000)}`);
        return fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
      },
      120_000,
    );
    const pk = /PublicKey: (pk_\w+)/.exec(logText())?.[1];
    const sk = /SecretKey: (sk_\w+)/.exec(logText())?.[1];
    if (!pk || !sk) throw new Error(`README check: the first start printed no keys:\n${logText().slice(-3000)}`);
    process.stdout.write(`Herald up in ${((Date.now() - started) / 1000).toFixed(1)} s on port ${port}\n`);

    for (const block of all.filter((b) => b.lang === 'sh')) {
      const skip = NOT_RUN.find((n) => block.text.includes(n.line));
      if (skip) {
        process.stdout.write(`- README.md:${block.start} not run: ${skip.why}\n`);
        continue;
      }
      const lines = block.text.split('\n').filter((line) => {
        const left = LINES_NOT_RUN.find((n) => line.includes(n.line));
        if (left) process.stdout.write(`- README.md:${block.start}: line left out: ${left.why}\n`);
        return !left;
      });
      const script = lines
        .join('\n')
        .replace(/^HERALD=http:\/\/localhost:3000\b/m, `HERALD=http://localhost:${port}`)
        .replace(/'pk_…'/g, `'${pk}'`)
        .replace(/'sk_…'/g, `'${sk}'`)
        .replace(/<utr>/g, '"$README_UTR"')
        .replace(/<next_cursor>/g, '$README_NEXT_CURSOR')
        .replace(/'whsec_…'/g, '"$README_WHSEC"')
        // The verification link: logged once the sender is saved, so read from the log when the line runs.
        .replace(/<link>/g, '"$(README_LINK)"')
        // A command put in the background (the webhook receiver) gets a second to start listening.
        .replace(/ &$/gm, ' &\nsleep 1');
      const state = path.join(work, 'state.sh');
      const bash = [
        PRELUDE,
        `README_LINK() { grep -o '"link":"http://localhost:${port}/senders/verify/[^"]*"' ${JSON.stringify(logFile)} | tail -1 | cut -d'"' -f4; }`,
        fs.existsSync(state) ? `. ${JSON.stringify(state)}` : '',
        script,
        // What the next block needs: the README's own variables and the answers' values.
        `declare -p HERALD PK SK H README_UTR README_NEXT_CURSOR README_WHSEC 2>/dev/null | sed 's/^declare -[-a-z]* /declare -g /' > ${JSON.stringify(state)} || true`,
        // A receiver started in the background (the Webhooks section) lives until the block ends.
        'wait_jobs=$(jobs -p); [ -z "$wait_jobs" ] || kill $wait_jobs 2>/dev/null || true',
      ].join('\n');
      process.stdout.write(`\n# README.md:${block.start}\n`);
      const res = spawnSync('bash', ['-c', bash], { cwd: work, env: { ...env, NODE_PATH: path.join(ROOT, 'node_modules') }, encoding: 'utf8', timeout: 120_000 });
      // Each answer as it came, cut at LINE_MAX characters (the design list alone is 40 KB).
      process.stdout.write(res.stdout.split('\n').map((l) => `  ${l.length > LINE_MAX ? `${l.slice(0, LINE_MAX)}… (${l.length} characters)` : l}`).join('\n') + '\n');
      if (res.status === 0) {
        ran += 1;
      } else {
        failed += 1;
        process.stdout.write(`README check: the block at README.md:${block.start} failed (exit ${res.status ?? res.signal}):\n${res.stderr}\n`);
      }
    }
  } finally {
    // Ctrl-C, as the quick start stops it: SIGINT to npm start's whole process group.
    if (herald.exitCode === null) process.kill(-herald.pid!, 'SIGINT');
    const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 60_000))]);
    if (code === 'timeout') process.kill(-herald.pid!, 'SIGKILL');
    if (code === 'timeout' || !/"msg":"stopped"/.test(logText())) {
      failed += 1;
      process.stdout.write(`README check: Herald did not stop cleanly on Ctrl-C (npm start: ${code}):\n${logText().slice(-3000)}\n`);
    }
    await new Promise((r) => setTimeout(r, 500));
    const left = spawnSync('pgrep', ['-f', `postgres -D ${dataDir}`], { encoding: 'utf8' }).stdout.trim();
    if (left) {
      failed += 1;
      process.stdout.write(`README check: an embedded PostgreSQL was left running (${left})\n`);
    }
    if (!process.argv.includes('--keep')) fs.rmSync(work, { recursive: true, force: true });
    else process.stdout.write(`kept ${work}\n`);
  }
  process.stdout.write(`\nNot run here, and where they are run instead:\n${INLINE_ELSEWHERE.map((l) => `- ${l}`).join('\n')}\n`);
  process.stdout.write(`\nREADME check took ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  process.stdout.write(`README check: ${ran} blocks ran, ${failed} failed\n`);
  return failed === 0 ? 0 : 1;
}

async function freePortIs(port: number): Promise<boolean> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
