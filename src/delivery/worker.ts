import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { runOutbox } from '../events/outbox';
import { purgeBounceReports, purgeEvents } from '../events/retention';
import { purgeDeliveries, runWebhooks } from '../webhooks/dispatch';
import { runAutomations } from './automation-engine';
import { DesignCache } from './designs';
import { BounceMailboxFollower } from '../bounces/imap-follower';
import type { Mailer } from '../mail/mailer';
import { completeSends, fanOutSome, startDueSends } from './scheduler';
import { Sender } from './sender';
import { GlobalThrottle, Throttle } from './throttle';
import { Alarm } from '../alarm';

export interface WorkerDeps {
  config: Config;
  db: Knex;
  logger: Logger;
  mailer: Mailer;
}


/**
 * The delivery worker: starts due sends, writes audiences, claims recipient rows, renders
 * and sends them, records outcomes and their events in batches, completes sends, does the
 * outbox's jobs (notification mail), delivers webhooks and purges old events. Everything it
 * knows is in PostgreSQL, so it can be killed at any point and another worker (or itself,
 * restarted) carries on.
 */
export class Worker {
  private readonly sender: Sender;
  private running = false;
  private loop?: Promise<void>;
  /** Rings the sending loop (new rows may be due) / the housekeeping loop (the queue ran dry). */
  private readonly senderAlarm = new Alarm();
  private readonly housekeepingAlarm = new Alarm();
  private readonly webhookAlarm = new Alarm();
  private readonly outboxAlarm = new Alarm();
  /** When events were last purged (EVENTS_RETENTION_DAYS); 0: not yet in this process. */
  private lastPurge = 0;
  /** Follows BOUNCE_IMAP_URL when set (its own connection and loop; one worker at a time holds the mailbox). */
  private readonly bounceMailbox?: BounceMailboxFollower;

  constructor(private readonly deps: WorkerDeps) {
    const throttle =
      deps.config.sendRateScope === 'global' ? new GlobalThrottle(deps.db, deps.config.sendRate) : new Throttle(deps.config.sendRate);
    this.sender = new Sender({ ...deps, designs: new DesignCache(deps.db, deps.config), throttle });
    if (deps.config.bounceImapUrl) this.bounceMailbox = new BounceMailboxFollower(deps);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
    this.bounceMailbox?.start();
  }

  /** Stops claiming new work, lets the messages in flight finish, and resolves. */
  async stop(): Promise<void> {
    this.running = false;
    this.senderAlarm.ring();
    this.housekeepingAlarm.ring();
    this.webhookAlarm.ring();
    this.outboxAlarm.ring();
    await Promise.all([this.loop, this.bounceMailbox?.stop()]);
  }

  /**
   * The worker is four loops side by side: housekeeping (due sends, automations, fan-out,
   * completion), sending (see Sender), webhooks, and the outbox (notification mail), so writing
   * a large audience never holds sending up, sending never waits for housekeeping, and a slow
   * webhook endpoint (up to WEBHOOK_TIMEOUT_MS per request) or a notice the SMTP server is slow
   * to take (up to SMTP_TIMEOUT_MS) holds up nothing else.
   */
  private async run(): Promise<void> {
    await Promise.all([
      this.housekeepingLoop(),
      this.sendingLoop(),
      // Batches new events for webhook endpoints and delivers due batches (src/webhooks/dispatch.ts).
      this.pollingLoop('webhook', this.webhookAlarm, () => runWebhooks(this.deps)),
      // Notification mail: side effects queued by requests and by housekeeping (src/events/outbox.ts).
      this.pollingLoop('outbox', this.outboxAlarm, () => runOutbox(this.deps)),
    ]);
  }

  /** Rounds of `round` while it finds work, else a nap of WORKER_POLL_MS (or until `alarm` rings). */
  private async pollingLoop(what: string, alarm: Alarm, round: () => Promise<number>): Promise<void> {
    while (this.running) {
      let busy = 0;
      try {
        busy = await round();
      } catch (err) {
        this.deps.logger.error({ err }, `${what} round failed; retrying shortly`);
      }
      if (!busy && this.running) await alarm.nap(this.deps.config.workerPollMs);
    }
  }

  private async housekeepingLoop(): Promise<void> {
    while (this.running) {
      let busy = 0;
      try {
        busy += await startDueSends(this.deps);
        busy += await runAutomations(this.deps);
        // Each chunk of an audience can be sent as soon as it is written.
        busy += await fanOutSome(this.deps.db, this.deps.logger, () => this.senderAlarm.ring());
        busy += await completeSends(this.deps);
        await this.purgeHourly();
        // A send started or completed: its notice is queued (the outbox loop would find it within its poll anyway).
        if (busy) this.outboxAlarm.ring();
      } catch (err) {
        this.deps.logger.error({ err }, 'worker round failed; retrying shortly');
        busy = 0;
      }
      // Rows may have become due (fan-out, automation steps): the sender need not wait its poll.
      if (busy) this.senderAlarm.ring();
      else if (this.running) await this.housekeepingAlarm.nap(this.deps.config.workerPollMs);
    }
  }

  private async purgeHourly(): Promise<void> {
    if (Date.now() - this.lastPurge < 3600_000) return;
    this.lastPurge = Date.now();
    const purged = await purgeEvents(this.deps.db, this.deps.config.eventsRetentionDays);
    const batches = await purgeDeliveries(this.deps.db, this.deps.config.eventsRetentionDays);
    const reports = await purgeBounceReports(this.deps.db, this.deps.config.bounceRetentionDays);
    if (purged || batches || reports) this.deps.logger.info({ purged, webhookBatches: batches, bounceReports: reports }, 'old events purged');
  }

  /** Sending (see Sender) until stopped; when the queue runs dry, housekeeping may complete a send. */
  private async sendingLoop(): Promise<void> {
    while (this.running) {
      const handled = await this.sender.sendUntilDry(() => this.running);
      this.housekeepingAlarm.ring();
      if (!handled && this.running) await this.senderAlarm.nap(this.deps.config.workerPollMs);
    }
  }
}
