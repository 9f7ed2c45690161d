import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { runAutomations } from './automation-engine';
import { DesignCache } from './designs';
import { MailError, type Mailer } from './mailer';
import { claimBatch, recordOutcomes, releaseExpiredLeases, type ClaimedRow, type Outcome } from './queue';
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
  private wake?: () => void;

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
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    let lastLeaseCheck = 0;
    while (this.running) {
      let busy = 0;
      try {
        if (Date.now() - lastLeaseCheck > 10_000) {
          lastLeaseCheck = Date.now();
          await releaseExpiredLeases(this.deps.db);
        }
        busy = await this.tick();
      } catch (err) {
        this.deps.logger.error({ err }, 'worker round failed; retrying shortly');
        busy = 0;
      }
      if (!busy && this.running) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.deps.config.workerPollMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
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
    const outcomes: Outcome[] = new Array(rows.length);
    let next = 0;
    const lane = async () => {
      while (next < rows.length) {
        const i = next++;
        outcomes[i] = await this.sendOne(rows[i]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(config.sendConcurrency, rows.length) }, lane));
    await db.transaction(async (trx) => {
      await recordOutcomes(trx, outcomes);
      await bumpStatistics(trx, rows, outcomes);
    });
    return rows.length;
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
