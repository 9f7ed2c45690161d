import type { Knex } from 'knex';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Config } from '../config';
import type { Dns } from '../dns';
import type { Logger } from '../logger';
import { classifySmtpError, MailError, smtpPoolOptions, type DeferReason, type Mailer, type OutgoingMail } from '../mail/mailer';
import { SmtpPool, type SmtpFailure, type SmtpPoolOptions } from '../mail/smtp-pool';
import { countDeferral, countMessage } from '../metrics';
import { classifyFailure } from './patterns';
import { accountRoutes } from './pinning';
import { providerOf } from './providers';
import {
  addUsage,
  claimProbe,
  endThrottle,
  ensureRoutes,
  grantTokens,
  markThrottled,
  markUp,
  readShared,
  recordProbeFailure,
  recordRouteFailure,
  reserveUsage,
  resetFailures,
  returnUsage,
  upsertBlock,
  type Period,
  type SharedState,
} from './state';
import type { RouteConfig, Stream } from './types';
import { warmupCap } from './warmup';

/**
 * The delivery routes at run time (issue 36): each message goes to one of the routes carrying its
 * stream, allowed for its account, not down, not blocked by the recipient's provider, with room
 * under its quotas — by weight. What the routes share with the other processes (health, blocks,
 * the per-second bucket, the hourly and daily counters) is in the route tables (./state.ts);
 * each process re-reads it every couple of seconds in the background and writes on transitions.
 *
 * One route without quotas or warm-up (SMTP_URL alone) costs no database access per message:
 * the shared state is read at most every REFRESH_MS, off the message's path, and a success
 * writes nothing unless the route had failures to forget.
 */

/** How often the shared state is re-read (in the background, while mail goes). */
const REFRESH_MS = 2000;
/** How long an account's pinned routes are trusted. */
const PIN_TTL_MS = 5000;
/** A route back from down carries half its weight this long. */
const RECOVERY_MS = 5 * 60_000;
/** A per-second token this close is waited for in the process (a longer wait: the message is deferred)… */
const MAX_WAIT_MS = 1000;
/** …for this long at most in all, then the message is deferred (a route paced far below the lanes' pace). */
const MAX_PACED_MS = 30_000;
/** A route failure that did not (yet) make the route down defers its message this long when no other route takes it. */
const FAILED_DEFER_MS = 10_000;

export interface RouterDeps {
  db: Knex;
  logger: Logger;
  dns: Dns;
  /** Records the account event `route.blocked` (src/events/account-events.ts, handed in by ./create-mailer.ts). */
  recordBlock: (userId: number, subject: string, facts: { route: string; provider: string; diagnostic: string }) => Promise<void>;
}

/** The user name and password of each route's URL, as written and decoded: never stored or logged. */
function secretsOf(routes: RouteConfig[]): string[] {
  const out = new Set<string>();
  for (const r of routes) {
    try {
      const u = new URL(r.url);
      for (const s of [u.username, u.password]) {
        if (s.length < 2) continue;
        out.add(s);
        out.add(decodeURIComponent(s));
      }
    } catch {
      // src/routes/config.ts refuses a bad URL at start.
    }
  }
  // The longest first: a password containing the user name is removed whole.
  return [...out].sort((a, b) => b.length - a.length);
}

/**
 * `(text) => text` without credentials: any URL's user information, and the routes' own user
 * names and passwords wherever they appear (a relay may echo the login in its answer).
 */
export function credentialStripper(routes: RouteConfig[]): (text: string) => string {
  const secrets = secretsOf(routes);
  return (text) => {
    let out = text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, '$1');
    for (const s of secrets) out = out.split(s).join('***');
    return out.slice(0, 1000);
  };
}

/** A reservation of hourly or daily messages held by this process. */
interface Reservation {
  start: number;
  left: number;
}

/** One route as this process runs it. */
class Route {
  readonly pool: SmtpPool;
  readonly options: SmtpPoolOptions;
  state: SharedState = { status: 'up', failures: 0, probeAt: null, recoveredAt: null, throttledAt: null, throttledRate: null };
  /** Blocks in force: provider → until. */
  blocked = new Map<string, Date>();
  /** This hour's and today's counters as last read (every process's reservations included). */
  used = { hour: 0, day: 0 };
  /** Per-second tokens granted to this process and not spent. */
  tokens = 0;
  /** A grant of tokens under way: the lanes wait for the one statement. */
  granting?: Promise<void>;
  /** The earliest time the bucket will have a token, as the last empty grant said. */
  tokensAt = 0;
  reservations: Partial<Record<Period, Reservation>> = {};
  /** Messages sent in a period the route has no cap for (nothing reserved them), not yet added to route_usage. */
  unflushed: Partial<Record<Period, Reservation>> = {};
  reserving: Partial<Record<Period, Promise<number>>> = {};
  /** Messages handed to it this second and the last: the rate it was sending at, when a throttle has no max_per_second to halve. */
  second = { at: 0, n: 0, previous: 0 };
  /** Probing now (this process). */
  probing = false;
  /** endThrottle written for this throttle. */
  ending?: number;

  constructor(
    readonly cfg: RouteConfig,
    socketTimeoutMs: number,
  ) {
    this.options = smtpPoolOptions(cfg.url, { poolSize: cfg.poolSize, socketTimeoutMs });
    this.pool = new SmtpPool(this.options);
  }

  get name(): string {
    return this.cfg.name;
  }

  /** Counts one message handed to it (for the rate it sends at). */
  handed(now: number): void {
    const s = Math.floor(now / 1000);
    if (s !== this.second.at) {
      this.second.previous = s === this.second.at + 1 ? this.second.n : 0;
      this.second.at = s;
      this.second.n = 0;
    }
    this.second.n += 1;
  }

  sendingRate(): number {
    return Math.max(this.second.previous, this.second.n, 1);
  }
}

/** The recipient's domain, lower-cased. */
function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;

const startOf = (period: Period, now: number): number => {
  const size = period === 'hour' ? HOUR_MS : DAY_MS;
  return Math.floor(now / size) * size;
};

/** Why a message could not go through one route now, and when it might. */
interface NoRoom {
  reason: DeferReason;
  until: number;
  /** The route whose room or answer this is. */
  route?: string;
  /** The route's answer, when one was tried. */
  error?: string;
  code?: number;
}

export class RoutedMailer implements Mailer {
  readonly target: string;
  private readonly routes: Route[];
  private readonly byStream: Record<Stream, Route[]>;
  /** Credentials removed (for what is stored and logged). */
  private readonly strip: (text: string) => string;
  private readonly settings: Pick<Config, 'routeDownAfter' | 'routeProbeSeconds' | 'routeThrottleMinutes' | 'routeBlockHours'>;
  /** Some route has an hourly, daily or warm-up cap: the counters are read with the state. */
  private readonly counted: boolean;
  private refreshedAt = -Infinity;
  private refreshing?: Promise<void>;
  private ensured = false;
  private closed = false;
  private readonly pins = new Map<number, { at: number; names: string[] | null }>();
  /** Tallies of past periods not yet added to route_usage (flushUsage). */
  private readonly pendingUsage: Array<{ route: string; period: Period; start: Date; n: number }> = [];

  constructor(
    config: Config,
    routes: RouteConfig[],
    private readonly deps: RouterDeps,
  ) {
    this.settings = config;
    this.routes = routes.map((r) => new Route(r, config.smtpTimeoutMs));
    this.byStream = {
      marketing: this.routes.filter((r) => r.cfg.streams.includes('marketing')),
      system: this.routes.filter((r) => r.cfg.streams.includes('system')),
    };
    this.strip = credentialStripper(routes);
    this.counted = routes.some((r) => r.maxPerHour || r.maxPerDay || r.warmup);
    this.target = this.routes.map((r) => `${r.name} (${r.options.secure ? 'smtps' : 'smtp'}://${r.options.host}:${r.options.port})`).join(', ');
  }

  async send(mail: OutgoingMail): Promise<{ route: string }> {
    const stream = mail.stream ?? 'marketing';
    try {
      const route = await this.route(mail, stream);
      if (stream === 'system') countMessage(route, 'delivered');
      return { route };
    } catch (err) {
      if (stream === 'system' && err instanceof MailError) {
        if (err.route) countMessage(err.route, err.deferUntil ? 'deferred' : err.permanent ? 'bounced' : 'deferred');
        if (err.reason) countDeferral(err.reason);
      }
      throw err;
    }
  }

  /** The message through one route; resolves with its name, or throws a MailError (a deferral when no route could try it). */
  private async route(mail: OutgoingMail, stream: Stream): Promise<string> {
    await this.fresh();
    let candidates = this.byStream[stream];
    if (mail.userId !== undefined) {
      const pinned = await this.pinned(mail.userId);
      if (pinned) candidates = candidates.filter((r) => pinned.includes(r.name));
    }
    if (candidates.length === 0) {
      throw new MailError(`no configured route may carry this ${stream} mail${mail.userId !== undefined ? ' for this account' : ''}`, false, undefined, {
        deferUntil: new Date(Date.now() + 60_000),
        reason: 'no_route',
      });
    }
    const excluded = new Set<Route>();
    let provider: string | undefined;
    /** The route that last had the message (a deferral names it). */
    let tried: Route | undefined;
    let best: NoRoom | undefined;
    const note = (no: NoRoom) => {
      // The soonest time wins; the reason of a route that answered beats one that was not tried.
      if (!best || (no.error && !best.error) || (!!no.error === !!best.error && no.until < best.until)) best = no;
    };
    const started = Date.now();
    for (;;) {
      const now = Date.now();
      const open: Route[] = [];
      for (const r of candidates) {
        if (excluded.has(r)) continue;
        if (r.state.status === 'down') {
          note({ reason: 'down', until: Math.max(now + 1000, r.state.probeAt?.getTime() ?? now + this.settings.routeProbeSeconds * 1000), route: r.name });
          continue;
        }
        if (r.blocked.size) {
          const p = (provider ??= await providerOf(this.deps.dns, domainOf(mail.to)));
          const until = r.blocked.get(p);
          if (until && until.getTime() > now) {
            note({ reason: 'blocked', until: until.getTime(), route: r.name });
            continue;
          }
        }
        open.push(r);
      }
      let chosen: Route | undefined;
      while (open.length) {
        const r = this.pick(open, now);
        const room = await this.take(r, now);
        if (room === true) {
          chosen = r;
          break;
        }
        open.splice(open.indexOf(r), 1);
        note({ ...room, route: r.name });
      }
      if (!chosen) {
        const no: NoRoom = best ?? { reason: 'no_route', until: now + 60_000 };
        const wait = no.until - Date.now();
        // A per-second token a moment away is waited for here (the lanes are paced, as SEND_RATE paces
        // them); a route that answered, or anything longer, waits in the queue.
        if (!no.error && (no.reason === 'quota' || no.reason === 'throttled') && wait <= MAX_WAIT_MS && Date.now() - started < MAX_PACED_MS) {
          await new Promise((resolve) => setTimeout(resolve, Math.max(5, wait)));
          best = undefined;
          continue;
        }
        throw this.deferral(no, tried);
      }
      tried = chosen;
      chosen.handed(now);
      try {
        await chosen.pool.send(mail.from, mail.to, mail.raw);
        this.answered(chosen);
        this.tally(chosen, now);
        return chosen.name;
      } catch (err) {
        const e = (err ?? {}) as SmtpFailure;
        const text = this.strip(e.response ?? e.message ?? String(err));
        const code = typeof e.responseCode === 'number' ? e.responseCode : undefined;
        const kind = classifyFailure(e);
        if (kind === 'message') {
          this.answered(chosen);
          const m = classifySmtpError(err);
          throw new MailError(this.strip(m.message), m.permanent, m.code, { route: chosen.name });
        }
        if (kind === 'half_sent') {
          // It may have arrived: retried as today (an attempt used), and the route counts a failure.
          await this.failed(chosen, text);
          throw new MailError(text, false, code, { route: chosen.name });
        }
        excluded.add(chosen);
        if (kind === 'route') {
          await this.failed(chosen, text);
          const down = chosen.state.status === 'down';
          note({ reason: 'down', until: down && chosen.state.probeAt ? chosen.state.probeAt.getTime() : Date.now() + FAILED_DEFER_MS, error: text, code });
        } else if (kind === 'throttle') {
          await this.throttled(chosen, text);
          note({ reason: 'throttled', until: Date.now() + Math.max(1000, Math.ceil(1000 / (this.rateOf(chosen, Date.now()) ?? 1))), error: text, code });
        } else {
          const until = await this.blockedBy(chosen, mail, text);
          note({ reason: 'blocked', until, error: text, code });
        }
        // Another route takes it at once, without an attempt (the next round); none: the deferral noted.
      }
    }
  }

  private deferral(no: NoRoom, tried: Route | undefined): MailError {
    const text = no.error ?? (no.reason === 'no_route' ? 'no route may carry this mail now' : `every route that may carry this mail is ${DESCRIBE[no.reason]}`);
    // The route tried last, or the one whose room it waits for.
    return new MailError(text, false, no.code, { route: tried?.name ?? no.route, deferUntil: new Date(no.until), reason: no.reason });
  }

  /** A weighted random choice among `open`; a route back up for less than RECOVERY_MS counts half its weight. */
  private pick(open: Route[], now: number): Route {
    if (open.length === 1) return open[0];
    const weight = (r: Route) => r.cfg.weight * (r.state.recoveredAt && now - r.state.recoveredAt.getTime() < RECOVERY_MS ? 0.5 : 1);
    let total = 0;
    for (const r of open) total += weight(r);
    let x = Math.random() * total;
    for (const r of open) {
      x -= weight(r);
      if (x < 0) return r;
    }
    return open[open.length - 1];
  }

  /** The route's per-second rate now: its max_per_second, or while throttled the cut rate climbing back; undefined: no limit. */
  private rateOf(r: Route, now: number): number | undefined {
    const s = r.state;
    if (s.status !== 'throttled' || !s.throttledAt || !s.throttledRate) return r.cfg.maxPerSecond;
    const full = r.cfg.maxPerSecond ?? s.throttledRate * 2;
    const past = now - s.throttledAt.getTime() - this.settings.routeThrottleMinutes * 60_000;
    if (past < 0) return s.throttledRate;
    // +10 % of the full rate a minute after the hold, as Postfix's destination concurrency climbs back.
    return Math.min(full, s.throttledRate + (0.1 * full * past) / 60_000);
  }

  /**
   * One message's room on route `r`: a per-second token and its hourly and daily reservations.
   * True, or why not and until when. A route without quotas, warm-up or throttle answers at once.
   */
  private async take(r: Route, now: number): Promise<true | NoRoom> {
    const rate = this.rateOf(r, now);
    const cfg = r.cfg;
    if (rate === undefined && !cfg.maxPerHour && !cfg.maxPerDay && !cfg.warmup) return true;
    const throttled = r.state.status === 'throttled';
    if (rate !== undefined) {
      if (r.tokens < 1) {
        if (r.tokensAt > now) return { reason: throttled ? 'throttled' : 'quota', until: r.tokensAt };
        await (r.granting ??= this.grant(r, rate).finally(() => (r.granting = undefined)));
        if (r.tokens < 1) return { reason: throttled ? 'throttled' : 'quota', until: Math.max(r.tokensAt, Date.now() + 5) };
      }
      r.tokens -= 1;
    }
    const { warm, hourCap } = this.caps(r, now);
    const checks: Array<[Period, number, DeferReason]> = [];
    if (cfg.maxPerDay) checks.push(['day', cfg.maxPerDay, 'quota']);
    if (hourCap !== Infinity) checks.push(['hour', hourCap, warm && warm.capPerHour <= (cfg.maxPerHour ?? Infinity) ? 'warmup' : 'quota']);
    const got: Period[] = [];
    for (const [period, cap, reason] of checks) {
      if (!(await this.reserve(r, period, cap, now))) {
        // What was taken for this message goes back to this process's reservations.
        for (const p of got) r.reservations[p]!.left += 1;
        if (rate !== undefined) r.tokens += 1;
        return { reason, until: startOf(period, now) + (period === 'hour' ? HOUR_MS : DAY_MS) };
      }
      got.push(period);
    }
    return true;
  }

  /** The route's warm-up now and its hourly cap (Infinity: none). */
  private caps(r: Route, now: number): { warm: { day: number; capPerHour: number } | null; hourCap: number } {
    const warm = r.cfg.warmup ? warmupCap(r.cfg.warmup, new Date(now)) : null;
    return { warm, hourCap: Math.min(r.cfg.maxPerHour ?? Infinity, warm?.capPerHour ?? Infinity) };
  }

  /**
   * A message sent: counted for each period the route has no cap for (a capped period's reservation
   * counted it already), added to route_usage with the next refresh — not a statement per message.
   */
  private tally(r: Route, now: number): void {
    const uncapped: Period[] = [];
    if (this.caps(r, now).hourCap === Infinity) uncapped.push('hour');
    if (!r.cfg.maxPerDay) uncapped.push('day');
    for (const period of uncapped) {
      const start = startOf(period, now);
      const held = r.unflushed[period];
      if (held && held.start === start) held.left += 1;
      else {
        if (held) this.pendingUsage.push({ route: r.name, period, start: new Date(held.start), n: held.left });
        r.unflushed[period] = { start, left: 1 };
      }
    }
  }

  /** The tallies of every route (and those of past periods) to route_usage; kept for the next time when the write fails. */
  private async flushUsage(): Promise<void> {
    const counts = this.pendingUsage.splice(0);
    for (const r of this.routes) {
      for (const period of ['hour', 'day'] as const) {
        const held = r.unflushed[period];
        if (!held?.left) continue;
        counts.push({ route: r.name, period, start: new Date(held.start), n: held.left });
        held.left = 0;
      }
    }
    if (counts.length === 0) return;
    try {
      await addUsage(this.deps.db, counts);
    } catch (err) {
      this.pendingUsage.push(...counts);
      this.deps.logger.error({ err }, 'route: messages sent could not be counted; counting them later');
    }
  }

  private async grant(r: Route, rate: number): Promise<void> {
    // A tenth of a second's worth at a time, and a burst of no more: the rate holds at the relay within a tenth.
    const chunk = Math.max(1, Math.floor(rate / 10));
    try {
      const { granted, available } = await grantTokens(this.deps.db, r.name, rate, Math.max(1, rate / 10), chunk);
      r.tokens += granted;
      if (granted === 0) r.tokensAt = Date.now() + Math.max(5, Math.ceil(((1 - available) / rate) * 1000));
    } catch (err) {
      this.deps.logger.error({ err, route: r.name }, 'route: per-second tokens could not be granted');
      r.tokensAt = Date.now() + 1000;
    }
  }

  /** One message of `period` on `r` from this process's reservation, reserving a chunk when it has none left. */
  private async reserve(r: Route, period: Period, cap: number, now: number): Promise<boolean> {
    const start = startOf(period, now);
    for (;;) {
      const held = r.reservations[period];
      if (held && held.start === start && held.left > 0) {
        held.left -= 1;
        return true;
      }
      if (held && held.start !== start) {
        // A past period's reservation not used: given back (the view's counts stay true).
        delete r.reservations[period];
        void returnUsage(this.deps.db, r.name, period, new Date(held.start), held.left).catch(() => undefined);
      }
      if (held && held.start === start && r.used[period] >= cap) return false;
      // One reservation at a time per route and period; the lanes waiting on it then take from it in turn.
      const granted = await (r.reserving[period] ??= this.reserveChunk(r, period, start, cap).finally(() => (r.reserving[period] = undefined)));
      if (granted === 0) return false;
    }
  }

  /** Reserves a chunk of `period` on `r`; returns how many were granted (0: full, or the database failed). */
  private async reserveChunk(r: Route, period: Period, start: number, cap: number): Promise<number> {
    // A hundredth of the cap at a time (1 to 50): few round trips, and little held unused by a process at the end of a period.
    const chunk = Math.min(50, Math.max(1, Math.floor(cap / 100)));
    try {
      const n = await reserveUsage(this.deps.db, r.name, period, new Date(start), cap, chunk);
      const held = r.reservations[period];
      if (held && held.start === start) held.left += n;
      else r.reservations[period] = { start, left: n };
      if (n === 0) r.used[period] = cap;
      return n;
    } catch (err) {
      this.deps.logger.error({ err, route: r.name }, 'route: hourly or daily quota could not be reserved');
      return 0;
    }
  }

  /** The relay answered: its consecutive failures (if it had any) start again. */
  private answered(r: Route): void {
    if (r.state.failures === 0) return;
    r.state.failures = 0;
    void resetFailures(this.deps.db, r.name).catch((err: unknown) => this.deps.logger.error({ err, route: r.name }, 'route: failures could not be reset'));
  }

  /** A failure of the relay: counted; at ROUTE_DOWN_AFTER the route is down. */
  private async failed(r: Route, error: string): Promise<void> {
    if (this.closed) return;
    r.state.failures += 1;
    try {
      await this.ensure();
      const after = await recordRouteFailure(this.deps.db, r.name, error, this.settings.routeDownAfter, this.settings.routeProbeSeconds);
      if (!after) return;
      if (after.status === 'down' && r.state.status !== 'down') {
        this.deps.logger.warn({ route: r.name, failures: after.failures, error }, 'route down: its messages go to the other routes');
      }
      r.state = after;
    } catch (err) {
      this.deps.logger.error({ err, route: r.name }, 'route: failure could not be recorded');
    }
  }

  /** A throttling answer: the rate halved (of max_per_second, or of what it was sending at) for ROUTE_THROTTLE_MINUTES. */
  private async throttled(r: Route, error: string): Promise<void> {
    const now = Date.now();
    const current = this.rateOf(r, now) ?? r.sendingRate();
    const rate = Math.max(0.2, current / 2);
    try {
      await this.ensure();
      const after = await markThrottled(this.deps.db, r.name, rate, error, this.settings.routeThrottleMinutes);
      if (after) {
        r.state = after;
        r.tokens = 0;
        this.deps.logger.warn({ route: r.name, rate, error }, 'route throttled: its rate is halved');
      }
    } catch (err) {
      this.deps.logger.error({ err, route: r.name }, 'route: throttle could not be recorded');
    }
  }

  /** A block text: the route is blocked by the recipient's provider for ROUTE_BLOCK_HOURS; a new block is an account event. Returns its end. */
  private async blockedBy(r: Route, mail: OutgoingMail, error: string): Promise<number> {
    const until = new Date(Date.now() + this.settings.routeBlockHours * HOUR_MS);
    const provider = await providerOf(this.deps.dns, domainOf(mail.to));
    r.blocked.set(provider, until);
    try {
      await this.ensure();
      const fresh = await upsertBlock(this.deps.db, r.name, provider, until, error);
      if (fresh) {
        this.deps.logger.warn({ route: r.name, provider, error }, 'route blocked by a receiving provider');
        if (mail.userId !== undefined) {
          await this.deps.recordBlock(mail.userId, `Route “${r.name}” is blocked by ${provider}`, { route: r.name, provider, diagnostic: error.slice(0, 500) });
        }
      }
    } catch (err) {
      this.deps.logger.error({ err, route: r.name }, 'route: block could not be recorded');
    }
    return until.getTime();
  }

  /** The accounts's pinned routes (null: every route), cached PIN_TTL_MS. */
  private async pinned(userId: number): Promise<string[] | null> {
    const now = Date.now();
    const hit = this.pins.get(userId);
    if (hit && now - hit.at < PIN_TTL_MS) return hit.names;
    if (this.pins.size > 10_000) this.pins.clear();
    try {
      const names = await accountRoutes(this.deps.db, userId);
      this.pins.set(userId, { at: now, names });
      return names;
    } catch (err) {
      // The account's pins as last known (or every route): the message is not held up by a read.
      this.deps.logger.error({ err }, 'route: pinned routes could not be read');
      return hit?.names ?? null;
    }
  }

  private async ensure(): Promise<void> {
    if (this.ensured) return;
    await ensureRoutes(this.deps.db, this.routes.map((r) => r.name));
    this.ensured = true;
  }

  /** The shared state: read before the first message, then every REFRESH_MS in the background. */
  private async fresh(): Promise<void> {
    if (Date.now() - this.refreshedAt < REFRESH_MS) return;
    const refresh = (this.refreshing ??= this.refresh().finally(() => (this.refreshing = undefined)));
    if (this.refreshedAt === -Infinity) await refresh;
  }

  private async refresh(): Promise<void> {
    const now = Date.now();
    try {
      await this.ensure();
      await this.flushUsage();
      const view = await readShared(
        this.deps.db,
        this.routes.map((r) => r.name),
        this.counted ? { hour: new Date(startOf('hour', now)), day: new Date(startOf('day', now)) } : null,
      );
      for (const r of this.routes) {
        const s = view.states.get(r.name);
        if (s) r.state = s;
        r.blocked = view.blocks.get(r.name) ?? new Map();
        const used = view.usage.get(r.name);
        r.used = used ?? { hour: 0, day: 0 };
        if (r.state.status === 'down' && !r.probing && (!r.state.probeAt || r.state.probeAt.getTime() <= now)) void this.probe(r);
        if (r.state.status === 'throttled') this.climbed(r, now);
      }
    } catch (err) {
      this.deps.logger.error({ err }, 'route state could not be read; going on with the last known');
    }
    this.refreshedAt = Date.now();
  }

  /** A throttled route whose rate is back at its quota is up again. */
  private climbed(r: Route, now: number): void {
    const s = r.state;
    if (!s.throttledAt || !s.throttledRate || r.ending === s.throttledAt.getTime()) return;
    const full = r.cfg.maxPerSecond ?? s.throttledRate * 2;
    if ((this.rateOf(r, now) ?? full) < full) return;
    r.ending = s.throttledAt.getTime();
    void endThrottle(this.deps.db, r.name, new Date(s.throttledAt.getTime() + 1))
      .then(() => this.deps.logger.info({ route: r.name }, 'route no longer throttled'))
      .catch((err: unknown) => this.deps.logger.error({ err, route: r.name }, 'route: end of throttle could not be recorded'));
  }

  /** A down route, by the one process that wins its probe: connection and EHLO (and login when it has credentials). */
  private async probe(r: Route): Promise<void> {
    r.probing = true;
    try {
      if (!(await claimProbe(this.deps.db, r.name, this.settings.routeProbeSeconds))) return;
      try {
        await probeRelay(r.options);
      } catch (err) {
        const e = (err ?? {}) as SmtpFailure;
        await recordProbeFailure(this.deps.db, r.name, this.strip(e.response ?? e.message ?? String(err)));
        return;
      }
      await markUp(this.deps.db, r.name);
      r.state = { ...r.state, status: 'up', failures: 0, probeAt: null, recoveredAt: new Date(), throttledAt: null, throttledRate: null };
      this.deps.logger.info({ route: r.name }, 'route up again after a good probe (half its weight for 5 minutes)');
    } catch (err) {
      this.deps.logger.error({ err, route: r.name }, 'route probe could not be recorded');
    } finally {
      r.probing = false;
    }
  }

  /**
   * Null when some route carrying `stream` has room now (or in a moment: a per-second token);
   * otherwise the earliest time one will (down: its next probe; an hourly, daily or warm-up cap
   * reached: the next period). Pins and blocks are per message and not counted here.
   */
  async room(stream: Stream): Promise<Date | null> {
    await this.fresh();
    const now = Date.now();
    let earliest = Infinity;
    for (const r of this.byStream[stream]) {
      if (r.state.status === 'down') {
        earliest = Math.min(earliest, Math.max(now + 1000, r.state.probeAt?.getTime() ?? now + this.settings.routeProbeSeconds * 1000));
        continue;
      }
      const full = this.fullUntil(r, now);
      if (full === null) return null;
      earliest = Math.min(earliest, full);
    }
    return earliest === Infinity ? null : new Date(earliest);
  }

  /** When the route's hourly, daily or warm-up cap reached frees up again; null when it has room. */
  private fullUntil(r: Route, now: number): number | null {
    const cfg = r.cfg;
    const hasLeft = (period: Period) => {
      const held = r.reservations[period];
      return !!held && held.start === startOf(period, now) && held.left > 0;
    };
    if (cfg.maxPerDay && r.used.day >= cfg.maxPerDay && !hasLeft('day')) return startOf('day', now) + DAY_MS;
    const { hourCap } = this.caps(r, now);
    if (r.used.hour >= hourCap && !hasLeft('hour')) return startOf('hour', now) + HOUR_MS;
    return null;
  }

  /** Closes the pools and gives back this process's unused reservations. */
  async close(): Promise<void> {
    this.closed = true;
    for (const r of this.routes) r.pool.close();
    await this.refreshing?.catch(() => undefined);
    await this.flushUsage();
    for (const r of this.routes) {
      for (const period of ['hour', 'day'] as const) {
        const held = r.reservations[period];
        if (!held?.left) continue;
        delete r.reservations[period];
        await returnUsage(this.deps.db, r.name, period, new Date(held.start), held.left).catch((err: unknown) =>
          this.deps.logger.error({ err, route: r.name }, 'route: unused reservations could not be given back'),
        );
      }
    }
  }
}

const DESCRIBE: Record<DeferReason, string> = {
  no_route: 'unavailable',
  quota: 'at its quota',
  warmup: 'at its warm-up cap',
  throttled: 'throttled',
  blocked: 'blocked by this recipient’s provider',
  down: 'down',
};

/** Connects to a relay, says EHLO (and logs in when it has credentials), and quits: a down route's probe. */
function probeRelay(o: SmtpPoolOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const conn = new SMTPConnection({
      host: o.host,
      port: o.port,
      secure: o.secure,
      connectionTimeout: Math.min(o.connectionTimeout, 10_000),
      greetingTimeout: Math.min(o.greetingTimeout, 10_000),
      socketTimeout: Math.min(o.socketTimeout, 10_000),
    });
    let settled = false;
    const done = (err?: unknown) => {
      if (settled) return;
      settled = true;
      if (err) {
        conn.close();
        return reject(err);
      }
      conn.quit();
      resolve();
    };
    conn.on('error', done);
    conn.connect((err) => {
      if (err) return done(err);
      if (!o.auth || !conn.allowsAuth) return done();
      conn.login({ user: o.auth.user, pass: o.auth.pass }, (loginErr) => done(loginErr ?? undefined));
    });
  });
}
