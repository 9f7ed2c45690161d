import type { Knex } from 'knex';
import { anyFanOutRunning } from '../single-sends/schedule';

/**
 * Messages a second the sender claims while some send's audience is being written, by default
 * (`FANOUT_SEND_RATE`; 0 turns the pacing off).
 *
 * On a small machine the sending and the fan-out's `INSERT … SELECT` take the same cores: with
 * sending at full speed beside it, a 1,000,000-recipient fan-out took 1.9–2.9 × the bare insert;
 * paced at this rate, 1.48 × (bench:fanout, alternated on one machine, 2026-11-28). Paced, the send
 * still starts at once — a claim waits only for the claims made during the fan-out before it —
 * and goes on at this rate until its audience is complete, then at full speed: what it did not
 * send during the few seconds of the fan-out it sends after them. Every kind of message is paced
 * (an automation's too, and every account's), for as long as any send's fan-out runs: seconds for a
 * list of a million, longer for a slow segment. Where PostgreSQL has cores of its own, or tenants'
 * sends must never wait for another's fan-out, `FANOUT_SEND_RATE=0` turns it off.
 */
export const FANOUT_SEND_RATE = 100;

/** How often the sender reads whether a fan-out is running (at most once a second). */
const READ_EVERY_MS = 1000;

/** The longest nap between two looks at the clock and the stop flag while a claim waits. */
const NAP_MS = 100;

/**
 * The sender's pace while an audience is being written (by any worker: it is read from the
 * database, at most once a second). A claim of `n` rows made while one is running lets the next
 * claim go only `n / rate` seconds later; a claim made while none was running holds nothing up,
 * so with no fan-out nothing ever waits and the pace costs one small query a second.
 */
export class FanOutPace {
  private known = false;
  private readAt = -Infinity;
  /** When the next claim may go while the fan-out the last claim saw is still running. */
  private nextAt = -Infinity;

  constructor(
    private readonly rate = FANOUT_SEND_RATE,
    private readonly running: (db: Knex) => Promise<boolean> = anyFanOutRunning,
    private readonly now: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  private async fanningOut(db: Knex): Promise<boolean> {
    if (this.now() - this.readAt < READ_EVERY_MS) return this.known;
    this.known = await this.running(db);
    this.readAt = this.now();
    return this.known;
  }

  /**
   * Waits until a claim may go: at once unless a fan-out is running and the last claim's
   * allowance is not used up. Returns early when `going()` turns false (the worker stops) or
   * the fan-out ends.
   */
  async beforeClaim(db: Knex, going: () => boolean): Promise<void> {
    while ((await this.fanningOut(db)) && going() && this.now() < this.nextAt) {
      await this.sleep(Math.min(NAP_MS, this.nextAt - this.now()));
    }
  }

  /** A claim took `n` rows: while a fan-out runs, the next one waits for their share of the rate. */
  claimed(n: number): void {
    this.nextAt = this.known ? this.now() + (n / this.rate) * 1000 : -Infinity;
  }
}
