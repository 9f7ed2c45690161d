import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePorts } from './net';
import { waitFor } from './wait';

/**
 * A real IMAP server for the bounce-mailbox tests: Debian's Dovecot (`dovecot-imapd`, which
 * `.ci/run` installs), started in the foreground with a configuration of its own in a temporary
 * directory — its own port, a passwd-file user, a maildir under that directory; with `tls`, also
 * an imaps port with a certificate for 127.0.0.1 made by `openssl` for the occasion — and stopped
 * afterwards. Nothing of the system's Dovecot (service, /etc/dovecot) is used.
 */
const DOVECOT = ['/usr/sbin/dovecot', '/usr/local/sbin/dovecot'].find((p) => fs.existsSync(p));

/**
 * `describe` for tests that need Dovecot: skipped with a warning on a developer's machine
 * without it, a failure in CI (CI=true), as the browser tests do (test/helpers/browser.ts).
 */
export function describeDovecot(name: string, fn: () => void): void {
  if (DOVECOT) {
    describe(`${name} (Dovecot at ${DOVECOT})`, fn);
    return;
  }
  const why = 'no Dovecot found (Debian: apt-get install dovecot-imapd)';
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('needs Dovecot', () => {
        throw new Error(`CI=true and ${why}`);
      });
    });
    return;
  }
  console.warn(`Skipping "${name}": ${why}.`);
  describe.skip(name, fn);
}

export interface Dovecot {
  host: string;
  port: number;
  user: string;
  password: string;
  /** imap://user:pass@127.0.0.1:port/INBOX, or imaps:// on the TLS port. */
  url(mailbox?: string, opts?: { secure?: boolean }): string;
  /** With `tls`: the imaps port and the PEM file of the server's (self-signed) certificate, to trust. */
  tls?: { port: number; certFile: string };
  /** Cuts every IMAP connection of the user (`doveadm kick`), as a server restart would. */
  kick(): void;
  stop(): Promise<void>;
}

/** The user Dovecot's own processes and the mail run as: ourselves, or `nobody` when we are root. */
function accounts(): { uid: number; gid: number; internal: string; group: string } {
  const uid = process.getuid?.() ?? 1000;
  const gid = process.getgid?.() ?? 1000;
  if (uid !== 0) {
    const name = os.userInfo().username;
    const group = spawnSync('id', ['-gn'], { encoding: 'utf8' }).stdout.trim() || name;
    return { uid, gid, internal: name, group };
  }
  // Dovecot refuses mail access as root; `nobody` owns the temporary maildir instead.
  return { uid: 65534, gid: 65534, internal: 'nobody', group: 'nogroup' };
}

export async function startDovecot(opts: { tls?: boolean } = {}): Promise<Dovecot> {
  if (!DOVECOT) throw new Error('startDovecot() without Dovecot: use describeDovecot()');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-dovecot-'));
  fs.chmodSync(dir, 0o755);
  const [port, tlsPort] = await freePorts(2);
  const tls = opts.tls ? { port: tlsPort, certFile: path.join(dir, 'cert.pem') } : undefined;
  const keyFile = path.join(dir, 'key.pem');
  if (tls) {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', tls.certFile, '-days', '1', '-subj', '/CN=imap.herald.test', '-addext', 'subjectAltName=IP:127.0.0.1'],
      { stdio: 'ignore' },
    );
    fs.chmodSync(keyFile, 0o644); // read by Dovecot's own processes
  }
  const user = 'bounces';
  const password = 'secret-imap-password';
  const who = accounts();
  const mail = path.join(dir, 'mail');
  fs.mkdirSync(path.join(dir, 'run'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'state'), { recursive: true });
  fs.mkdirSync(mail, { recursive: true });
  fs.chownSync(mail, who.uid, who.gid);
  fs.writeFileSync(path.join(dir, 'passwd'), `${user}:{PLAIN}${password}:${who.uid}:${who.gid}::${mail}/${user}\n`);
  const conf = path.join(dir, 'dovecot.conf');
  fs.writeFileSync(
    conf,
    `# Written by test/helpers/dovecot.ts for one test file.
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/dovecot.log
instance_name = herald-test-${port}
protocols = imap
listen = 127.0.0.1
${tls ? `ssl = yes\nssl_cert = <${tls.certFile}\nssl_key = <${keyFile}` : 'ssl = no'}
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = ${who.internal}
default_internal_group = ${who.group}
default_login_user = ${who.internal}
first_valid_uid = ${Math.min(who.uid, 65534)}
first_valid_gid = ${Math.min(who.gid, 65534)}
mail_uid = ${who.uid}
mail_gid = ${who.gid}
mail_location = maildir:~/Maildir
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/passwd
}
userdb {
  driver = passwd-file
  args = username_format=%u ${dir}/passwd
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = ${tls?.port ?? 0}
  }
}
service anvil {
  chroot =
}
service stats {
  unix_listener stats-reader {
    mode = 0666
  }
  unix_listener stats-writer {
    mode = 0666
  }
}
`,
  );
  const child: ChildProcess = spawn(DOVECOT, ['-F', '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  let exited: number | null | undefined;
  child.on('exit', (code) => (exited = code));
  const log = () => {
    try {
      return output + fs.readFileSync(path.join(dir, 'dovecot.log'), 'utf8');
    } catch {
      return output;
    }
  };
  await waitFor(
    'Dovecot to listen',
    async () => {
      if (exited !== undefined) throw new Error(`dovecot exited (${exited}): ${log()}`);
      return new Promise<boolean>((resolve) => {
        const sock = net.connect(port, '127.0.0.1');
        sock.once('data', (d: Buffer) => {
          sock.destroy();
          resolve(d.toString().startsWith('* OK'));
        });
        sock.once('error', () => resolve(false));
      });
    },
    { timeoutMs: 10_000, intervalMs: 100, describe: log },
  );
  return {
    host: '127.0.0.1',
    port,
    user,
    password,
    url: (mailbox = 'INBOX', { secure = false } = {}) =>
      `${secure ? 'imaps' : 'imap'}://${user}:${password}@127.0.0.1:${secure ? tls!.port : port}/${encodeURIComponent(mailbox)}`,
    tls,
    kick() {
      const doveadm = path.join(path.dirname(DOVECOT!), '..', 'bin', 'doveadm');
      const r = spawnSync(fs.existsSync(doveadm) ? doveadm : 'doveadm', ['-c', conf, 'kick', user], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`doveadm kick failed: ${r.stderr}${r.stdout}`);
    },
    async stop() {
      if (exited === undefined) {
        const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        await gone;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
