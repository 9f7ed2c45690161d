import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { notifications } from '../events/notification-mail';
import { purgeExpired } from '../events/retention';
import { purgeTeamRows } from '../audit/retention';
import { runDueJobs, type JobKind } from '../jobs/runner';
import { abDecision, noticeFinishedTestGroups } from '../ab/decision';
import { runWebhooks } from '../webhooks/dispatch';
import { runAutomations } from '../delivery/automation-engine';
import { DesignCache } from '../delivery/designs';
import { BounceMailboxFollower } from '../bounces/imap-follower';
import type { Mailer } from '../mail/mailer';
import { completeSends, fanOutSome, startDueSends } from '../delivery/scheduler';
import { Sender } from '../delivery/sender';
import { GlobalThrottle, Throttle } from '../delivery/throttle';
import { Alarm, WakeListener } from '../jobs/wake';
import { optinConfirmation } from '../forms/optin-mail';
import { deleteOldPending } from '../forms/pending';
import { purgeGuards } from '../forms/subscribe-guards';
import { purgeOldUsage } from '../routes/state';

export interface WorkerDeps {
  config: Config;
  db: Knex;
  logger: Logger;
  mailer: Mailer;
}

/**
 * Kinds of job of the `jobs` table (src/jobs/kind.ts) the worker runs, each in a loop of its own
 * named after the kind. A new kind is added here.
 */
const JOB_KINDS: ReadonlyArray<JobKind<unknown, WorkerDeps>> = [
  abDecision as JobKind<unknown, WorkerDeps>,
  optinConfirmation as JobKind<unknown, WorkerDeps>,
];

/** One of the worker's loops: its rounds, and how long it naps when a round found nothing to do. */
interface Loop {
  round(): Promise<number>;
  idleMs: number;
}

/**
 * The worker: the composition root of the worker process (src/server.ts starts it beside the API,
 * `herald worker` alone), above everything it runs. Everything it knows is in PostgreSQL, so it can be killed at any point and another
 * worker (or itself, restarted) carries on. Its loops, by name (docs/CONTEXT.md, "worker loop"),
 * each run side by side, so a slow one holds up none of the others — writing a large audience
 * never holds sending up, sending never waits for housekeeping, a slow webhook endpoint (up to
 * WEBHOOK_TIMEOUT_MS a request) or an SMTP server slow to take a notice holds up nothing else:
 *
 * - `housekeeping`: starts due sends, runs automations, writes audiences (fan-out) and completes
 *   sends (src/delivery/scheduler.ts, automation-engine.ts); the API wakes it when it made a send
 *   due or set an automation live (src/jobs/wake.ts, a LISTEN session of the worker's own);
 * - `sending`: claims recipient rows, renders, sends and records them (src/delivery/sender.ts);
 * - `webhooks`: batches new events for webhook endpoints and sends due webhook batches
 *   (src/webhooks/dispatch.ts; batches are jobs of the job runner, src/jobs);
 * - `notifications`: mails account events' notices (src/events/notification-mail.ts, on the job runner);
 * - one loop per kind of the `jobs` table (JOB_KINDS, on the job runner);
 * - `retention`: deletes what is past its retention, hourly (src/events/retention.ts);
 * - `bounce mailbox`: follows BOUNCE_IMAP_URL when it is set, on a connection and loop of its own
 *   (src/bounces/imap-follower.ts; one worker at a time holds the mailbox).
 */
export class Worker {
  private readonly sender: Sender;
  private running = false;
  private loop?: Promise<void>;
  /** Each loop naps on its own alarm; another loop rings it when it made work for it. */
  private readonly alarms = new Map<string, Alarm>();
  private readonly bounceMailbox?: BounceMailboxFollower;
  /** The API's wake-ups (a send due now, an automation set live): housekeeping need not wait its poll. */
  private readonly wakeUps: WakeListener;

  constructor(private readonly deps: WorkerDeps) {
    const throttle =
      deps.config.sendRateScope === 'global' ? new GlobalThrottle(deps.db, deps.config.sendRate) : new Throttle(deps.config.sendRate);
    this.sender = new Sender({ ...deps, designs: new DesignCache(deps.db, deps.config), throttle });
    if (deps.config.bounceImapUrl) this.bounceMailbox = new BounceMailboxFollower(deps);
    this.wakeUps = new WakeListener(deps.db, deps.logger, (loop) => this.wake(loop));
  }

  /** The loops but the bounce mailbox (see the class comment), by name. */
  private loops(): Record<string, Loop> {
    const { config } = this.deps;
    const poll = config.workerPollMs;
    const jobs = (kind: JobKind<unknown, WorkerDeps>): Loop => ({
      round: () => runDueJobs(kind, this.deps),
      idleMs: kind.settings(config).pollMs ?? poll,
    });
    return {
      housekeeping: { round: () => this.housekeeping(), idleMs: poll },
      sending: { round: () => this.sending(), idleMs: poll },
      webhooks: { round: () => runWebhooks(this.deps), idleMs: poll },
      notifications: jobs(notifications),
      ...Object.fromEntries(JOB_KINDS.map((kind) => [kind.name, jobs(kind)])),
      retention: { round: () => this.retention(), idleMs: 3600_000 },
    };
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const loops = Object.entries(this.loops());
    for (const [name] of loops) this.alarms.set(name, new Alarm());
    this.loop = Promise.all(loops.map(([name, loop]) => this.runLoop(name, loop))).then(() => undefined);
    this.bounceMailbox?.start();
    void this.wakeUps.start();
  }

  /** Stops claiming new work, lets the messages in flight finish, and resolves. */
  async stop(): Promise<void> {
    this.running = false;
    for (const alarm of this.alarms.values()) alarm.ring();
    await Promise.all([this.loop, this.bounceMailbox?.stop(), this.wakeUps.stop()]);
  }

  private wake(name: 'housekeeping' | 'sending' | 'notifications'): void {
    this.alarms.get(name)?.ring();
  }

  /** Rounds while they find work; after a round that found none, a nap (cut short when the loop's alarm rings). */
  private async runLoop(name: string, loop: Loop): Promise<void> {
    const alarm = this.alarms.get(name)!;
    while (this.running) {
      let busy = 0;
      try {
        busy = await loop.round();
      } catch (err) {
        this.deps.logger.error({ err, loop: name }, 'worker round failed; retrying shortly');
      }
      if (!busy && this.running) await alarm.nap(loop.idleMs);
    }
  }

  private async housekeeping(): Promise<number> {
    let busy = 0;
    busy += await startDueSends(this.deps);
    busy += await runAutomations(this.deps);
    // Each chunk of an audience can be sent as soon as it is written.
    busy += await fanOutSome(this.deps.db, this.deps.logger, () => this.wake('sending'));
    busy += await completeSends(this.deps);
    // An A/B test group that finished sending: its decision is queued for the end of its duration.
    busy += await noticeFinishedTestGroups(this.deps.db);
    if (busy) {
      // Rows may have become due (fan-out, automation steps): the sender need not wait its poll.
      this.wake('sending');
      // A send started or completed: its notice is queued (the notifications loop would find it within its poll anyway).
      this.wake('notifications');
    }
    return busy;
  }

  /** Sending until the queue runs dry (or the worker stops); then housekeeping may complete a send. */
  private async sending(): Promise<number> {
    const handled = await this.sender.sendUntilDry(() => this.running);
    this.wake('housekeeping');
    return handled;
  }

  /** OPTIN_PENDING_DAYS: old pending subscriptions go; so do the subscribe endpoint's past counts and spent challenges. */
  async optinCleanup(): Promise<number> {
    const pending = await deleteOldPending(this.deps.db, this.deps.config.optinPendingDays);
    await purgeGuards(this.deps.db);
    if (pending) this.deps.logger.info({ pending }, 'old pending subscriptions deleted');
    return pending;
  }

  private async retention(): Promise<number> {
    const purged = await purgeExpired(this.deps.db, this.deps.config);
    if (purged.events || purged.webhookBatches || purged.bounceReports) this.deps.logger.info(purged, 'expired rows purged');
    await this.optinCleanup();
    const team = await purgeTeamRows(this.deps.db, this.deps.config.auditRetentionDays);
    if (team.auditEntries || team.memberTokens || team.signInFailures) this.deps.logger.info(team, 'expired audit entries, links and sign-in failures purged');
    // The delivery routes' hourly and daily counters of periods past (src/routes/state.ts).
    await purgeOldUsage(this.deps.db);
    // Nothing more until the next hour.
    return 0;
  }
}
