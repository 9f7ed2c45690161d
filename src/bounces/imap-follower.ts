import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { rootCertificates, type ConnectionOptions } from 'node:tls';
import type { ImapFlow, MailboxObject } from 'imapflow';
import type { Knex } from 'knex';
import type { Deps } from '../context';
import { processInbound } from './inbound';
import { Alarm } from '../jobs/wake';

/**
 * The bounce mailbox follower (BOUNCE_IMAP_URL): for installations whose bounces and
 * complaints land in an ordinary mailbox rather than at Herald's own SMTP receiver. It reads
 * each new message (by UID, with BODY.PEEK, so nothing's \Seen flag changes), hands it to
 * processInbound — the same path as the SMTP receiver — and moves the messages that were a
 * bounce or complaint for one of Herald's messages to BOUNCE_IMAP_DONE_FOLDER. Everything else
 * stays where it is, as it was: the mailbox may be a person's too.
 *
 * It waits with IDLE (imapflow falls back to NOOP polling on a server without it) and also
 * checks every BOUNCE_IMAP_POLL_MS. The highest UID read is kept in `bounce_mailboxes` with
 * the mailbox's UIDVALIDITY, so a restart reads only what is new (a new UIDVALIDITY reads
 * everything again: processing a report twice changes nothing). One worker follows a mailbox
 * at a time, under a lease in the same row; when it dies another takes over.
 */
export type FollowerDeps = Pick<Deps, 'db' | 'config' | 'logger'>;

/** Messages read per round; the rest follow in the next (a backlog never loads whole). */
const BATCH = 50;
const CONNECT_TIMEOUT_MS = 30_000;
const MAX_BACKOFF_MS = 5 * 60_000;

export interface MailboxTarget {
  host: string;
  port: number;
  secure: boolean;
  user: string;
  pass: string;
  mailbox: string;
  /** The row key: host, port, user and mailbox — never the password. */
  key: string;
}

export function mailboxTarget(url: string): MailboxTarget {
  const u = new URL(url);
  const secure = u.protocol === 'imaps:';
  const port = u.port ? Number(u.port) : secure ? 993 : 143;
  const user = decodeURIComponent(u.username);
  const mailbox = decodeURIComponent(u.pathname.replace(/^\/+/, '')) || 'INBOX';
  return { host: u.hostname, port, secure, user, pass: decodeURIComponent(u.password), mailbox, key: `${u.hostname}:${port}/${user}/${mailbox}` };
}


export class BounceMailboxFollower {
  private readonly target: MailboxTarget;
  private readonly owner = randomUUID();
  private readonly wakeup = new Alarm();
  private readonly leaseMs: number;
  /** TLS for imaps:// and STARTTLS: the system's CAs, plus BOUNCE_IMAP_CA_FILE's; certificates are always verified. */
  private readonly tls: ConnectionOptions;
  private running = false;
  private loop?: Promise<void>;
  private client?: ImapFlow;

  constructor(private readonly deps: FollowerDeps) {
    if (!deps.config.bounceImapUrl) throw new Error('BounceMailboxFollower needs BOUNCE_IMAP_URL');
    this.target = mailboxTarget(deps.config.bounceImapUrl);
    // Renewed every wait (at most BOUNCE_IMAP_POLL_MS): two waits' worth and a minute to spare.
    this.leaseMs = 2 * deps.config.bounceImapPollMs + 60_000;
    const caFile = deps.config.bounceImapCaFile;
    this.tls = caFile ? { ca: [...rootCertificates, fs.readFileSync(caFile, 'utf8')] } : {};
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeup.ring();
    // Ends an IDLE (or a connection attempt) at once; the loop then lets go of the lease.
    this.client?.close();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { logger } = this.deps;
    let failures = 0;
    while (this.running) {
      try {
        if (await this.takeLease()) {
          await this.follow(() => (failures = 0));
        } else {
          await this.wakeup.nap(this.deps.config.bounceImapPollMs);
        }
      } catch (err) {
        if (!this.running) break;
        failures += 1;
        const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(failures, 10));
        logger.warn({ err, mailbox: this.target.key, retryInMs: backoff }, 'bounce mailbox: connection failed; retrying');
        await this.wakeup.nap(backoff);
      }
    }
    await this.releaseLease().catch((err) => logger.warn({ err }, 'bounce mailbox: lease not released'));
  }

  /** One connection: open the mailbox, then read new mail and wait, until stopped, disconnected or the lease is lost. */
  private async follow(connected: () => void): Promise<void> {
    const { config, logger } = this.deps;
    const t = this.target;
    // Loaded here, not at start-up: only BOUNCE_IMAP_URL needs it (≈ 19 MB of modules).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { ImapFlow } = require('imapflow') as typeof import('imapflow');
    const client = new ImapFlow({
      host: t.host,
      port: t.port,
      secure: t.secure,
      auth: { user: t.user, pass: t.pass },
      tls: this.tls,
      logger: false,
      disableAutoIdle: true,
      maxIdleTime: config.bounceImapPollMs,
      connectionTimeout: CONNECT_TIMEOUT_MS,
    });
    this.client = client;
    let closed = false;
    client.on('error', (err: Error) => logger.warn({ err, mailbox: t.key }, 'bounce mailbox: connection error'));
    client.on('close', () => {
      closed = true;
      this.wakeup.ring();
    });
    client.on('exists', () => this.wakeup.ring());
    try {
      if (!this.running) return;
      await client.connect();
      const done = await client.mailboxCreate(config.bounceImapDoneFolder.split('/'));
      const mailbox = await client.mailboxOpen(t.mailbox);
      connected();
      logger.info({ mailbox: t.key, idle: client.capabilities.has('IDLE'), doneFolder: done.path }, 'bounce mailbox: following');
      // Read until nothing new is left, then wait for news (IDLE) or the poll interval; the lease
      // is renewed after every batch and every wait, so a long backlog keeps it too.
      let leased = true;
      while (this.running && !closed && leased) {
        const read = await this.readNew(client, mailbox, done.path);
        if (this.running && !closed && !read) {
          client.idle().catch(() => undefined);
          await this.wakeup.nap(config.bounceImapPollMs);
        }
        leased = !this.running || (await this.takeLease());
      }
      if (!leased) logger.info({ mailbox: t.key }, 'bounce mailbox: lease taken by another worker');
      // The server hung up: reconnect after the usual back-off, never in a tight loop.
      if (closed && this.running) throw new Error('the IMAP server closed the connection');
    } finally {
      this.client = undefined;
      if (!closed) await client.logout().catch(() => client.close());
    }
  }

  /**
   * Reads up to BATCH messages after the last UID read: each goes to processInbound, the
   * handled ones are moved to the done folder, and the last UID is saved. A failure stops at
   * that message, so it is read again next time. Returns how many messages were read.
   */
  private async readNew(client: ImapFlow, mailbox: MailboxObject, donePath: string): Promise<number> {
    const { db, config, logger } = this.deps;
    const validity = String(client.mailbox ? client.mailbox.uidValidity : mailbox.uidValidity);
    const state = await db('bounce_mailboxes').where({ mailbox: this.target.key }).first('uid_validity', 'last_uid');
    let last = state && state.uid_validity !== null && String(state.uid_validity) === validity ? Number(state.last_uid) : 0;
    if (!state || String(state.uid_validity) !== validity) await this.saveProgress(db, validity, 0);

    // `n:*` always names the newest message, even below n: keep only UIDs past the last one.
    const found = (await client.search({ uid: `${last + 1}:*` }, { uid: true })) || [];
    const uids = found.filter((u) => u > last).sort((a, b) => a - b).slice(0, BATCH);
    if (uids.length === 0) return 0;

    const sizes = await client.fetchAll(uids.join(','), { uid: true, size: true }, { uid: true });
    const tooBig = new Set(sizes.filter((m) => (m.size ?? 0) > config.inboundMaxBytes).map((m) => m.uid));
    const wanted = uids.filter((u) => !tooBig.has(u));
    const messages = wanted.length ? await client.fetchAll(wanted.join(','), { uid: true, source: true }, { uid: true }) : [];
    const sources = new Map(messages.map((m) => [m.uid, m.source]));

    const handled: number[] = [];
    let failed = false;
    for (const uid of uids) {
      const source = sources.get(uid);
      if (tooBig.has(uid) || !source) {
        if (tooBig.has(uid)) logger.info({ mailbox: this.target.key, uid }, 'bounce mailbox: message larger than INBOUND_MAX_BYTES left alone');
        last = uid;
        continue;
      }
      try {
        const { handled: ours } = await processInbound(this.deps, source, { via: 'imap' });
        if (ours) handled.push(uid);
        last = uid;
      } catch (err) {
        logger.error({ err, mailbox: this.target.key, uid }, 'bounce mailbox: message not processed; trying again later');
        failed = true;
        break;
      }
    }
    if (handled.length) await client.messageMove(handled.join(','), donePath, { uid: true });
    await this.saveProgress(db, validity, last);
    if (handled.length) logger.info({ mailbox: this.target.key, moved: handled.length }, 'bounce mailbox: reports processed');
    if (failed) throw new Error('bounce mailbox: a message could not be processed');
    return uids.length;
  }

  private async saveProgress(db: Knex, validity: string, lastUid: number): Promise<void> {
    await db('bounce_mailboxes')
      .where({ mailbox: this.target.key })
      .update({ uid_validity: validity, last_uid: lastUid, updated_at: db.fn.now() });
  }

  /** Takes or renews this process's lease on the mailbox (true: it is ours until lease_until). */
  private async takeLease(): Promise<boolean> {
    const r = await this.deps.db.raw(
      `INSERT INTO bounce_mailboxes (mailbox, lease_owner, lease_until)
       VALUES (?, ?, now() + ? * interval '1 millisecond')
       ON CONFLICT (mailbox) DO UPDATE SET lease_owner = excluded.lease_owner, lease_until = excluded.lease_until
       WHERE bounce_mailboxes.lease_owner IS NULL OR bounce_mailboxes.lease_owner = excluded.lease_owner
          OR bounce_mailboxes.lease_until < now()
       RETURNING mailbox`,
      [this.target.key, this.owner, this.leaseMs],
    );
    return (r.rowCount ?? 0) > 0;
  }

  private async releaseLease(): Promise<void> {
    await this.deps.db('bounce_mailboxes')
      .where({ mailbox: this.target.key, lease_owner: this.owner })
      .update({ lease_owner: null, lease_until: null });
  }
}
