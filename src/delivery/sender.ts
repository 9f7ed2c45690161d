import type { Knex } from 'knex';
import type { Config } from '../config';
import { secret } from '../db/secrets';
import { signPieces } from '../dkim/sign';
import type { Logger } from '../logger';
import { clickSigner, recipientToken } from '../recipient-token';
import { verpAddress } from '../bounces/verp';
import { retryDelay } from '../jobs/backoff';
import { DeliveryStatus } from '../states';
import { designKey, type DesignCache, type LoadedDesign } from './designs';
import { MailError, type Mailer } from '../mail/mailer';
import { claimBatch, DUE_ROWS, recordOutcomes, releaseClaimed, ReleasingTests, type ClaimedRow, type SendOutcome } from '../deliveries/queue';
import { AccountTurns, onCitus } from '../db/per-account';
import { FanOutPace } from './fanout-pace';
import { countDeferral, countMessage } from '../metrics';
import type { RecipientData } from '../render/render';

export interface SenderDeps {
  config: Config;
  db: Knex;
  logger: Logger;
  mailer: Mailer;
  designs: DesignCache;
  throttle: { take(): Promise<void> };
}

/** A temporary failure is retried after RETRY_BASE_MS doubling, the doubling capped at 6 h (src/jobs/backoff.ts). */
const retryBackoff = (config: Config) => ({ baseMs: config.retryBaseMs, maxMs: 6 * 3600_000 });

/** What the renderer reads of a claimed row: a contact's current values, or a hand-added recipient's copy. */
function recipientData(row: ClaimedRow, token: string, clickUrl: (linkId: number) => string): RecipientData {
  return row.contact_id === null && row.data
    ? { email: row.email, token, fields: row.data, clickUrl }
    : { email: row.email, token, fields: row, custom: row.custom_fields, clickUrl };
}

/** A claimed half-batch: its rows, how many were started and finished, their outcomes. */
interface Half {
  rows: ClaimedRow[];
  outcomes: SendOutcome[];
  started: number;
  finished: number;
}

/**
 * Sending, in half-batches of SEND_BATCH_SIZE / 2 claimed rows and SEND_CONCURRENCY lanes.
 * At most two halves are claimed and unrecorded at any moment — SEND_BATCH_SIZE rows, the
 * most a killed worker can leave to go out twice — and the next half is claimed as soon as
 * one is recorded, so it is there before the lanes run out of rows. A lane moves on to the
 * next half's rows while the last messages of a half are still with the SMTP server: the
 * connections never wait for a half to drain, nor for the database. A half is recorded (its
 * outcomes and statistics in one statement) once every message of it was answered.
 */
export class Sender {
  private accounts?: AccountTurns;
  private readonly releasing = new ReleasingTests();
  /** Held to FANOUT_SEND_RATE while an audience is being written, so the fan-out gets the machine (none when 0). */
  private pace?: FanOutPace | null;

  constructor(private readonly deps: SenderDeps) {}

  /**
   * Claims, sends and records until the queue has no due row or `running()` turns false;
   * then releases the rows it claimed and did not start. Returns the rows it handled.
   */
  async sendUntilDry(running: () => boolean): Promise<number> {
    const { config, db, logger } = this.deps;
    const size = Math.max(1, Math.floor(config.sendBatchSize / 2));
    const failed = (err: unknown) => logger.error({ err }, 'sending round failed; retrying shortly');
    let key: Buffer;
    try {
      key = await secret(db, 'tracking');
    } catch (err) {
      failed(err);
      return 0;
    }
    const halves: Half[] = [];
    const recording: Array<Promise<void>> = [];
    let claiming: Promise<void> | undefined;
    let dry = false;
    let handled = 0;
    let wake: () => void = () => undefined;
    let changed = new Promise<void>((resolve) => (wake = resolve));
    const notify = () => {
      const w = wake;
      changed = new Promise<void>((resolve) => (wake = resolve));
      w();
    };

    const claimMore = () => {
      if (claiming || dry || !running() || halves.length >= 2) return;
      claiming = this.claimHalf(size, running)
        .then(
          (rows) => {
            if (rows.length) halves.push({ rows, outcomes: new Array(rows.length), started: 0, finished: 0 });
            else dry = true;
          },
          (err: unknown) => {
            failed(err);
            dry = true;
          },
        )
        .finally(() => {
          claiming = undefined;
          notify();
        });
    };

    const finish = (half: Half) => {
      handled += half.rows.length;
      const done = recordOutcomes(db, half.rows, half.outcomes, config).then(
        () => undefined,
        (err: unknown) => {
          // Unrecorded rows stay `sending` and go out again after their lease: stop claiming for now.
          failed(err);
          dry = true;
        },
      );
      recording.push(
        done.finally(() => {
          halves.splice(halves.indexOf(half), 1);
          claimMore();
          notify();
        }),
      );
    };

    const nextRow = async (): Promise<[Half, number] | undefined> => {
      for (;;) {
        if (!running()) return undefined;
        const half = halves.find((h) => h.started < h.rows.length);
        if (half) return [half, half.started++];
        claimMore();
        if (dry && !claiming) return undefined;
        await changed;
      }
    };

    const lane = async () => {
      for (let next = await nextRow(); next; next = await nextRow()) {
        const [half, i] = next;
        half.outcomes[i] = await this.sendOne(half.rows[i], key);
        half.finished += 1;
        if (half.finished === half.rows.length) finish(half);
      }
    };

    claimMore();
    await Promise.all(Array.from({ length: config.sendConcurrency }, lane));
    await claiming;
    await Promise.all(recording);
    await this.releaseUnstarted(halves).catch(failed);
    return handled;
  }

  /**
   * Claims a half, at the fan-out's pace while an audience is being written (src/delivery/fanout-pace.ts),
   * and loads each of its designs once (the lanes would otherwise all miss the cache together).
   */
  private async claimHalf(size: number, running: () => boolean): Promise<ClaimedRow[]> {
    const { db, config } = this.deps;
    const pace = (this.pace ??= config.fanoutSendRate > 0 ? new FanOutPace(config.fanoutSendRate) : null);
    await pace?.beforeClaim(db, running);
    if (!running()) return [];
    // No route has room (all down, at their quotas or warm-up caps): the rows stay queued and the
    // lanes idle until one has, rather than claiming rows only to defer each of them.
    const until = await this.deps.mailer.room?.('marketing');
    if (until) {
      this.deps.logger.debug({ until }, 'no delivery route has room: waiting');
      return [];
    }
    // On Citus a claim takes one account's rows, the accounts in turn (src/db/per-account.ts).
    // An A/B test releasing its rest to the winner: the claim also takes those rows (src/deliveries/queue.ts).
    const released = await this.releasing.any(db);
    const rows = (await onCitus(db))
      ? await (this.accounts ??= new AccountTurns(db, DUE_ROWS)).claim((userId) => claimBatch(db, size, config.sendLeaseMs, userId, released))
      : await claimBatch(db, size, config.sendLeaseMs, undefined, released);
    pace?.claimed(rows.length);
    const firstOfDesign = new Map<string, ClaimedRow>();
    for (const row of rows) if (!firstOfDesign.has(designKey(row))) firstOfDesign.set(designKey(row), row);
    for (const row of firstOfDesign.values()) await this.deps.designs.get(row).catch(() => undefined);
    return rows;
  }

  /**
   * Stopping: halves partly sent are recorded for what was tried, and their rows never
   * started go back to the queue, due at once, as if never claimed.
   */
  private async releaseUnstarted(halves: Half[]): Promise<void> {
    for (const half of halves) {
      const tried = half.started;
      if (tried > 0) {
        this.deps.logger.debug({ tried, released: half.rows.length - tried }, 'stopping: half-batch partly sent');
        await recordOutcomes(this.deps.db, half.rows.slice(0, tried), half.outcomes.slice(0, tried), this.deps.config);
      }
      await releaseClaimed(this.deps.db, half.rows.slice(tried));
    }
  }

  /**
   * The rendered, DKIM-signed message. Apart from sendOne, so that the rendered parts (HTML, text,
   * the unsigned MIME) are garbage once it returns rather than held, with sendOne's other locals,
   * across the SMTP round trip: held that long they outlive two scavenges and are promoted, and the
   * old generation then grew by ≈ 100 MB of dead messages between full collections (--trace-gc,
   * bench/README.md "Send").
   */
  private async signedMessage(row: ClaimedRow, key: Buffer, token: string, messageId: string, design: LoadedDesign): Promise<string> {
    const { config } = this.deps;
    // Made on the message's first tracked link (a design without links never pays for it).
    let sign: ((linkId: number) => string) | undefined;
    const clickUrl = (linkId: number) => `${config.publicUrl}/t/click/${(sign ??= clickSigner(key, { deliveryId: row.id, userId: row.user_id }))(linkId)}`;
    const unsigned = design.compiled.render(recipientData(row, token, clickUrl), messageId);
    return signPieces(this.deps.db, config, row.user_id, design.fromEmail, unsigned);
  }

  /** One message: render, send, and what came of it. Never throws (a failure is an outcome). */
  private async sendOne(row: ClaimedRow, key: Buffer): Promise<SendOutcome> {
    const { config, designs, mailer, throttle } = this.deps;
    try {
      const design = designs.peek(row) ?? (await designs.get(row));
      if (!design) return { status: DeliveryStatus.Failed, error: 'The message’s send or design no longer exists.' };
      // The same token (so the same Message-ID) on every attempt: it is derived from the row.
      const token = row.token ?? recipientToken(key, { deliveryId: row.id, userId: row.user_id });
      const messageId = `<${token}@${design.domain}>`;
      const raw = await this.signedMessage(row, key, token, messageId, design);
      if (config.sendRate > 0) await throttle.take();
      // VERP: the envelope sender names the message, so a bounce names it too (the From header is unchanged).
      const from = config.bounceDomain ? verpAddress(config.bounceDomain, token) : design.fromEmail;
      const sent = await mailer.send({ from, to: row.email, raw, userId: row.user_id, stream: 'marketing' });
      return counted({ status: DeliveryStatus.Sent, messageId, route: sent?.route });
    } catch (err) {
      // Anything but an SMTP refusal (a database hiccup loading the design, say) is temporary.
      const e = err instanceof MailError ? err : new MailError(String((err as Error)?.message ?? err), false);
      const route = e.route;
      // The routes deferred it (none with room, throttled, blocked, down): it waits, its attempt given back; never a bounce.
      if (e.deferUntil) return counted({ status: DeliveryStatus.Queued, error: e.message, code: e.code, retryAt: e.deferUntil, route, reason: e.reason ?? 'no_route' });
      if (e.permanent) return counted({ status: DeliveryStatus.Bounced, error: e.message, code: e.code, route });
      if (row.attempts >= config.maxAttempts) return counted({ status: DeliveryStatus.Failed, error: e.message, code: e.code, route });
      return counted({ status: DeliveryStatus.Queued, error: e.message, code: e.code, retryAt: new Date(Date.now() + retryDelay(row.attempts, retryBackoff(config))), route });
    }
  }
}

const METRIC_OUTCOME = {
  [DeliveryStatus.Sent]: 'delivered',
  [DeliveryStatus.Queued]: 'deferred',
  [DeliveryStatus.Bounced]: 'bounced',
  [DeliveryStatus.Failed]: 'failed',
} as const;

/** The outcome, counted in the metrics (src/metrics.ts) under its route (messages that reached none: no route to count them under). */
function counted(outcome: SendOutcome): SendOutcome {
  if (outcome.route) countMessage(outcome.route, METRIC_OUTCOME[outcome.status]);
  if (outcome.status === DeliveryStatus.Queued && outcome.reason) countDeferral(outcome.reason);
  return outcome;
}
