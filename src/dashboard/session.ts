import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Knex } from 'knex';
import * as cookie from 'cookie';
import { findKeyOwner } from '../accounts/accounts.service';
import { hashSecret } from '../accounts/keys';
import { KEYS_LABEL, keysActor, recordAudit } from '../audit/record';
import type { Config } from '../config';
import type { Actor } from '../context';
import type { Role } from '../team/permissions';

/**
 * Signing in to the dashboard (docs/decisions.md, "Dashboard" and "Teams"): a user's email,
 * password and code (src/team/sign-in.ts), or the account's key pair, are exchanged once for a
 * server-side session. The cookie holds `<account id>.<random token>` (HttpOnly,
 * SameSite=Strict, Secure on an https PUBLIC_URL); the database keeps the token's SHA-256, the
 * user it signs in as (none: the keys, acting as the owner), the account's public key at
 * sign-in (a rotation ends the session) and a CSRF token.
 */
export const SESSION_COOKIE = 'herald_session';
/** Before a session exists, the sign-in form's CSRF token is checked against this cookie. */
export const SIGN_IN_COOKIE = 'herald_sign_in';
/** The browser's time zone, written by the dashboard's script (assets/dashboard/app.js). */
export const TZ_COOKIE = 'herald_tz';
export const COOKIE_PATH = '/app';

/** Failed sign-ins allowed per client address within FAILURE_WINDOW_MINUTES; then 429. */
export const MAX_FAILURES = 10;
export const FAILURE_WINDOW_MINUTES = 10;
/**
 * last_seen_at is written at most once a second per session (a page and its script's requests
 * in the same second write once), and a session is current while it was seen within the idle
 * window plus that second: it ends no sooner than DASHBOARD_SESSION_IDLE_MINUTES after its last
 * request, and at most a second later. (Written once a minute, a session ended up to a minute
 * before its time: the requests of the minute after a write were not counted.)
 */
const TOUCH_EVERY_SECONDS = 1;
/** A session seen within this window (minutes, seconds) is current. */
const idleWindow = (config: Config): [number, number] => [config.dashboardSessionIdleMinutes, TOUCH_EVERY_SECONDS];
/** Advisory-lock class for one client address's sign-in attempts (pg_advisory_xact_lock(class, hash)). */
const SIGN_IN_LOCK_CLASS = 0x6461; // 'da'

/** How a session was opened: the account's keys (acts as the owner) or a user's password. */
export type SessionVia = 'keys' | 'password';

export interface Session {
  userId: number;
  csrf: string;
  /** The user signed in (members.id); null for a session opened with the account's keys. */
  memberId: number | null;
  role: Role;
  /** The user's email, or "API keys". */
  label: string;
  via: SessionVia;
  /** The account requires a second factor and this user has none: every page but its set-up is refused. */
  mustEnrol: boolean;
  /** The token's SHA-256 (this session's key: "sign out everywhere else" keeps it). */
  tokenHash: Buffer;
}

/** Who acts in a session's requests (Ctx.actor). */
export function sessionActor(session: Session, address: string | null): Actor {
  if (session.memberId === null) return keysActor('dashboard', address);
  return { memberId: session.memberId, role: session.role, label: session.label, via: 'dashboard', address };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest();
const newToken = () => randomBytes(32).toString('base64url');

export function readCookies(req: Request): Record<string, string | undefined> {
  return cookie.parse(req.headers.cookie ?? '');
}

function cookieOptions(config: Config, maxAgeSeconds?: number): cookie.SerializeOptions {
  return {
    httpOnly: true,
    sameSite: 'strict',
    secure: config.publicUrl.startsWith('https:'),
    path: COOKIE_PATH,
    ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }),
  };
}

export function setCookie(res: Response, config: Config, name: string, value: string, maxAgeSeconds?: number): void {
  res.append('Set-Cookie', cookie.serialize(name, value, cookieOptions(config, maxAgeSeconds)));
}

/** The cookie's account and token digest (undefined: no cookie, or not one of ours). */
function cookieKey(req: Request): { user_id: number; token_hash: Buffer } | undefined {
  const m = /^([1-9]\d{0,9})\.([A-Za-z0-9_-]{43})$/.exec(readCookies(req)[SESSION_COOKIE] ?? '');
  if (!m || Number(m[1]) > 2_147_483_647) return undefined;
  return { user_id: Number(m[1]), token_hash: sha256(m[2]) };
}

/**
 * The session a request's cookie names, if it is current: known, not idle too long, younger than
 * DASHBOARD_SESSION_MAX_HOURS, its account's keys unchanged (and its user still there: removing a
 * user deletes their sessions through the foreign key).
 */
export async function findSession(db: Knex, config: Config, req: Request): Promise<Session | undefined> {
  const key = cookieKey(req);
  if (!key) return undefined;
  const row = (await db('dashboard_sessions as s')
    .join('accounts as a', 'a.id', 's.user_id')
    .leftJoin('members as m', function () {
      this.on('m.user_id', 's.user_id').andOn('m.id', 's.member_id');
    })
    .where({ 's.user_id': key.user_id, 's.token_hash': key.token_hash })
    .first(
      's.csrf_token',
      's.member_id',
      's.via',
      'm.role',
      'm.email',
      db.raw('m.totp_secret IS NOT NULL AS two_factor'),
      'a.require_two_factor',
      db.raw('s.public_key = a.public_key AS keys_current'),
      db.raw(`s.last_seen_at > now() - make_interval(mins => ?, secs => ?) AS fresh`, idleWindow(config)),
      db.raw(`s.created_at > now() - make_interval(hours => ?) AS young`, [config.dashboardSessionMaxHours]),
      db.raw(`s.last_seen_at < now() - make_interval(secs => ?) AS touch`, [TOUCH_EVERY_SECONDS]),
    )) as
    | {
        csrf_token: string;
        member_id: number | null;
        via: SessionVia;
        role: Role | null;
        email: string | null;
        two_factor: boolean | null;
        require_two_factor: boolean;
        keys_current: boolean;
        fresh: boolean;
        young: boolean;
        touch: boolean;
      }
    | undefined;
  if (!row) return undefined;
  if (!row.keys_current || !row.fresh || !row.young || (row.member_id !== null && !row.role)) {
    await db('dashboard_sessions').where(key).delete();
    return undefined;
  }
  if (row.touch) await db('dashboard_sessions').where(key).update({ last_seen_at: db.fn.now() });
  const member = row.member_id !== null;
  return {
    userId: key.user_id,
    csrf: row.csrf_token,
    memberId: row.member_id,
    role: member ? (row.role as Role) : 'owner',
    label: member ? (row.email as string) : KEYS_LABEL,
    via: row.via,
    mustEnrol: member && row.require_two_factor && !row.two_factor,
    tokenHash: key.token_hash,
  };
}

/**
 * The per-address limit (under the address's lock, in the sign-in's transaction): the seconds to
 * wait when MAX_FAILURES failed within the window, undefined when a sign-in may be tried.
 */
export async function addressHeld(trx: Knex.Transaction, address: string): Promise<number | undefined> {
  await trx.raw('SELECT pg_advisory_xact_lock(?, hashtext(?))', [SIGN_IN_LOCK_CLASS, address]);
  const window = trx.raw(`now() - make_interval(mins => ?)`, [FAILURE_WINDOW_MINUTES]);
  await trx('dashboard_sign_in_failures').where('failed_at', '<', window).delete();
  const recent = (await trx('dashboard_sign_in_failures')
    .where({ address })
    .where('failed_at', '>=', window)
    .first(trx.raw('count(*)::int AS n'), trx.raw(`ceil(extract(epoch FROM min(failed_at) + make_interval(mins => ?) - now()))::int AS wait`, [FAILURE_WINDOW_MINUTES]))) as {
    n: number;
    wait: number | null;
  };
  return recent.n >= MAX_FAILURES ? Math.max(1, recent.wait ?? 1) : undefined;
}

/** Counts a failed sign-in against the client address (the row's id: a success may take it back). */
export async function countAddressFailure(trx: Knex.Transaction, address: string): Promise<number> {
  const [row] = await trx('dashboard_sign_in_failures').insert({ address }).returning('id');
  return Number((row as { id: string | number }).id);
}

/**
 * Opens a session (in the sign-in's transaction) and returns the cookie's value. The account's own
 * expired sessions go first: another process may run with a longer DASHBOARD_SESSION_IDLE_MINUTES,
 * and other accounts' sessions are not this sign-in's to end by this process's window (one shard's
 * rows on Citus, too). Others' expired rows go when met.
 */
export async function openSession(trx: Knex.Transaction, config: Config, userId: number, opts: { memberId: number | null; via: SessionVia; publicKey: string }): Promise<string> {
  const token = newToken();
  await trx('dashboard_sessions')
    .where({ user_id: userId })
    .where((q) =>
      q
        .where('last_seen_at', '<=', trx.raw(`now() - make_interval(mins => ?, secs => ?)`, idleWindow(config)))
        .orWhere('created_at', '<=', trx.raw(`now() - make_interval(hours => ?)`, [config.dashboardSessionMaxHours])),
    )
    .delete();
  await trx('dashboard_sessions').insert({
    user_id: userId,
    token_hash: sha256(token),
    public_key: opts.publicKey,
    csrf_token: newToken(),
    member_id: opts.memberId,
    via: opts.via,
  });
  return `${userId}.${token}`;
}

export type SignInOutcome = { ok: true; cookie: string } | { ok: false; retryAfterSeconds?: number };

/**
 * Checks a key pair and opens a session, which acts as the account's owner (audit:
 * session.signed_in by "API keys"). Failures are counted per client address under a lock on that
 * address, so parallel guesses cannot pass the limit together; successes are not counted. Another
 * address is not slowed by them, nor is the API (its limit is its own).
 */
export async function signIn(db: Knex, config: Config, address: string, publicKey: string, secretKey: string): Promise<SignInOutcome> {
  return db.transaction(async (trx) => {
    const wait = await addressHeld(trx, address);
    if (wait !== undefined) return { ok: false, retryAfterSeconds: wait };
    const userId = publicKey.length <= 200 && secretKey.length <= 200 ? await findKeyOwner(trx, publicKey, hashSecret(secretKey)) : undefined;
    if (userId === undefined) {
      await countAddressFailure(trx, address);
      return { ok: false };
    }
    const cookieValue = await openSession(trx, config, userId, { memberId: null, via: 'keys', publicKey });
    await recordAudit(trx, userId, keysActor('dashboard', address), { action: 'session.signed_in', objectKind: 'session', summary: 'Signed in with the account’s keys, as the owner' });
    return { ok: true, cookie: cookieValue };
  });
}

/** Ends the session the request's cookie names (if any). */
export async function signOut(db: Knex, req: Request): Promise<void> {
  const key = cookieKey(req);
  if (key) await db('dashboard_sessions').where(key).delete();
}

/**
 * "Sign out everywhere": every session of the user (a keys session: every keys session of the
 * account), this one too, with one audit entry. Returns how many ended.
 */
export async function signOutEverywhere(db: Knex, session: Session, actor: Actor): Promise<number> {
  return db.transaction(async (trx) => {
    const q = trx('dashboard_sessions').where({ user_id: session.userId });
    const n = await (session.memberId === null ? q.whereNull('member_id').where({ via: 'keys' }) : q.where({ member_id: session.memberId })).delete();
    await recordAudit(trx, session.userId, actor, {
      action: 'session.signed_out_everywhere',
      objectKind: session.memberId === null ? 'session' : 'user',
      objectId: session.memberId,
      summary: `Signed out everywhere (${n} ${n === 1 ? 'session' : 'sessions'} ended)`,
    });
    return n;
  });
}

/** The sign-in form's token: the one in its cookie, or a new one (set by the caller). */
export function signInToken(req: Request): { token: string; fresh: boolean } {
  const existing = readCookies(req)[SIGN_IN_COOKIE];
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { token: existing, fresh: false };
  return { token: newToken(), fresh: true };
}

/** Constant-time comparison of a presented CSRF token with the expected one. */
export function sameToken(presented: unknown, expected: string | undefined): boolean {
  if (typeof presented !== 'string' || !expected) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
