import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { runAutomations } from './automation-engine';
import { DesignCache, designKey } from './designs';
import { MailError, type Mailer } from './mailer';
import { claimBatch, recordOutcomes, releaseClaimed, releaseExpiredLeases, type ClaimedRow, type Outcome } from './queue';
import { completeSends, fanOutSome, startDueSends } from './scheduler';
import { GlobalThrottle, Throttle } from './throttle';

export interface WorkerDeps {
  config: Config;
  db: Knex;
  logger: Logger;
  mailer: Mailer;
}

function retryDelay(config: Config, attempts: number): number {
  return Math.min(config.retryBaseMs * 2 ** Math.max(0, attempts - 1), 6 * 3600_000);
}

/**
 * The delivery worker: starts due sends, writes audiences, claims recipient rows, renders
 * and sends them, records outcomes and statistics in batches, completes sends. Everything it
 * knows is in PostgreSQL, so it can be killed at any point and another worker (or itself,
 * restarted) carries on.
 */
export class Worker {
  private readonly designs: DesignCache;
  private readonly throttle: { take(): Promise<void> };
  private running = false;
  private loop?: Promise<void>;
  /** Wakes the sending loop (new rows may be due) / the housekeeping loop (the queue ran dry). */
  private wakeSender?: () => void;
  private wakeHousekeeping?: () => void;

  constructor(private readonly deps: WorkerDeps) {
    this.designs = new DesignCache(deps.db, deps.config);
    this.throttle =
      deps.config.sendRateScope === 'global' ? new GlobalThrottle(deps.db, deps.config.sendRate) : new Throttle(deps.config.sendRate);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops claiming new work, lets the messages in flight finish, and resolves. */
  async stop(): Promise<void> {
    this.running = false;
    this.wakeSender?.();
    this.wakeHousekeeping?.();
    await this.loop;
  }

  /**
   * The long-running worker is two loops side by side: housekeeping (due sends, automations,
   * fan-out, completion, expired leases) and sending (see sendingLoop), so writing a large
   * audience never holds sending up and sending never waits for housekeeping.
   */
  private async run(): Promise<void> {
    await Promise.all([this.housekeepingLoop(), this.sendingLoop()]);
  }

  private async housekeepingLoop(): Promise<void> {
    let lastLeaseCheck = 0;
    while (this.running) {
      let busy = 0;
      try {
        if (Date.now() - lastLeaseCheck > 10_000) {
          lastLeaseCheck = Date.now();
          await releaseExpiredLeases(this.deps.db);
        }
        busy += await startDueSends(this.deps);
        busy += await runAutomations(this.deps);
        busy += await fanOutSome(this.deps.db, this.deps.logger);
        busy += await completeSends(this.deps);
      } catch (err) {
        this.deps.logger.error({ err }, 'worker round failed; retrying shortly');
        busy = 0;
      }
      // Rows may have become due (fan-out, automation steps): the sender need not wait its poll.
      if (busy) this.wakeSender?.();
      else if (this.running) await this.nap((wake) => (this.wakeHousekeeping = wake));
    }
  }

  /**
   * Sending, pipelined in half-batches (SEND_BATCH_SIZE / 2 rows): while one half is being
   * sent, the half before it is recorded and then the next one claimed, so the SMTP
   * connections do not wait for the database between batches. What crash safety rests on
   * holds as with whole batches sent one after the other: at most SEND_BATCH_SIZE rows are
   * claimed and unrecorded by this process at any moment, and a half's messages start only
   * once every message of the half before has been answered.
   */
  private async sendingLoop(): Promise<void> {
    const { config, db, logger } = this.deps;
    const size = config.sendBatchSize >= 2 ? Math.floor(config.sendBatchSize / 2) : config.sendBatchSize;
    const failed = (err: unknown) => logger.error({ err }, 'worker round failed; retrying shortly');
    const claim = () => claimBatch(db, size, config.sendLeaseMs);
    while (this.running) {
      let current: ClaimedRow[] = [];
      let sent = 0;
      try {
        current = await claim();
      } catch (err) {
        failed(err);
      }
      let recorded: Promise<boolean> = Promise.resolve(true);
      while (current.length > 0) {
        const rows = current;
        const prefetch = recorded
          .then((ok) => (ok && this.running ? claim() : []))
          .catch((err: unknown) => {
            failed(err);
            return [] as ClaimedRow[];
          });
        const outcomes = await this.sendRows(rows);
        let next = await prefetch;
        if (!this.running && next.length > 0) {
          // Stopping: the claimed half not started goes back to the queue.
          await releaseClaimed(db, next.map((r) => r.id)).catch(failed);
          next = [];
        }
        recorded = this.record(rows, outcomes).then(
          () => true,
          (err: unknown) => {
            failed(err);
            return false;
          },
        );
        sent += rows.length;
        current = next;
      }
      await recorded;
      // The queue ran dry (everything recorded): a send may be complete now.
      this.wakeHousekeeping?.();
      if (!sent && this.running) await this.nap((wake) => (this.wakeSender = wake));
    }
  }

  /** Waits WORKER_POLL_MS, or less when woken through the function handed to `register`. */
  private nap(register: (wake: () => void) => void): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.deps.config.workerPollMs);
      register(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** One round of work; returns how much it did (0 = idle). Tests drive the worker with it. */
  async tick(): Promise<number> {
    let done = 0;
    done += await startDueSends(this.deps);
    done += await runAutomations(this.deps);
    done += await fanOutSome(this.deps.db, this.deps.logger);
    done += await this.sendBatch();
    done += await completeSends(this.deps);
    return done;
  }

  /** Runs rounds until there is nothing left to do now (tests and the CLI's drain). */
  async drain(maxRounds = 10_000): Promise<void> {
    for (let i = 0; i < maxRounds; i += 1) if ((await this.tick()) === 0) return;
  }

  private async sendOne(row: ClaimedRow): Promise<Outcome> {
    try {
      const design = await this.designs.get(row);
      if (!design) return { id: row.id, status: 'failed', error: 'The message’s send or design no longer exists.' };
      const messageId = `<${row.token}@${design.domain}>`;
      const message = design.compiled.render({ email: row.email, token: row.token, data: row.data }, messageId);
      await this.throttle.take();
      await this.deps.mailer.send({ from: design.fromEmail, to: row.email, raw: message.raw });
      return { id: row.id, status: 'sent', messageId };
    } catch (err) {
      // Anything but an SMTP refusal (a database hiccup loading the design, say) is temporary.
      const e = err instanceof MailError ? err : new MailError(String((err as Error)?.message ?? err), false);
      if (e.permanent) return { id: row.id, status: 'bounced', error: e.message };
      if (row.attempts >= this.deps.config.maxAttempts) return { id: row.id, status: 'failed', error: e.message };
      return { id: row.id, status: 'queued', error: e.message, retryAt: new Date(Date.now() + retryDelay(this.deps.config, row.attempts)) };
    }
  }

  /** Claims a batch and sends it with bounded concurrency; outcomes and counters in one write each. */
  private async sendBatch(): Promise<number> {
    if (!this.running && this.loop) return 0;
    const { config, db } = this.deps;
    const rows = await claimBatch(db, config.sendBatchSize, config.sendLeaseMs);
    if (rows.length === 0) return 0;
    await this.record(rows, await this.sendRows(rows));
    return rows.length;
  }

  /** Sends claimed rows SEND_CONCURRENCY at a time; never throws (failures are outcomes). */
  private async sendRows(rows: ClaimedRow[]): Promise<Outcome[]> {
    // Each design once before the lanes start, which would otherwise all miss the cache together.
    const firstOfDesign = new Map<string, ClaimedRow>();
    for (const row of rows) if (!firstOfDesign.has(designKey(row))) firstOfDesign.set(designKey(row), row);
    for (const row of firstOfDesign.values()) await this.designs.get(row).catch(() => undefined);
    const outcomes: Outcome[] = new Array(rows.length);
    let next = 0;
    const lane = async () => {
      while (next < rows.length) {
        const i = next++;
        outcomes[i] = await this.sendOne(rows[i]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.deps.config.sendConcurrency, rows.length) }, lane));
    return outcomes;
  }

  /** A batch's outcomes and statistics, in one transaction. */
  private async record(rows: ClaimedRow[], outcomes: Outcome[]): Promise<void> {
    await this.deps.db.transaction(async (trx) => {
      await recordOutcomes(trx, outcomes);
      await bumpStatistics(trx, rows, outcomes);
    });
  }
}

/** delivered / bounces per send (and per automation), one UPDATE each per batch. */
async function bumpStatistics(db: Knex, rows: ClaimedRow[], outcomes: Outcome[]): Promise<void> {
  const perSend = new Map<number, { delivered: number; bounces: number }>();
  const perAutomation = new Map<number, { delivered: number; bounces: number }>();
  outcomes.forEach((o, i) => {
    const row = rows[i];
    const delivered = o.status === 'sent' ? 1 : 0;
    const bounced = o.status === 'bounced' || o.status === 'failed' ? 1 : 0;
    if (!delivered && !bounced) return;
    const map = row.single_send_id ? perSend : perAutomation;
    const key = (row.single_send_id ?? row.automation_id) as number;
    if (!key) return;
    const s = map.get(key) ?? { delivered: 0, bounces: 0 };
    s.delivered += delivered;
    s.bounces += bounced;
    map.set(key, s);
  });
  for (const [id, s] of perSend) {
    await db('single_sends')
      .where({ id })
      .update({ delivered: db.raw('delivered + ?', [s.delivered]), bounces: db.raw('bounces + ?', [s.bounces]) });
  }
  for (const [id, s] of perAutomation) {
    await db('automations')
      .where({ id })
      .update({ total_delivered: db.raw('total_delivered + ?', [s.delivered]), total_bounces: db.raw('total_bounces + ?', [s.bounces]) });
  }
}
