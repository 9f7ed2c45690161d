import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Knex } from 'knex';
import * as cookie from 'cookie';
import { findKeyOwner } from '../accounts/accounts.service';
import { hashSecret } from '../accounts/keys';
import type { Config } from '../config';

/**
 * Signing in to the dashboard (docs/decisions.md, "Dashboard"): the account's key pair is
 * exchanged once for a server-side session. The cookie holds `<account id>.<random token>`
 * (HttpOnly, SameSite=Strict, Secure on an https PUBLIC_URL); the database keeps the token's
 * SHA-256, the account's public key at sign-in (a rotation ends the session) and a CSRF token.
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

export interface Session {
  userId: number;
  csrf: string;
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

/** The session a request's cookie names, if it is current: known, not idle too long, its account's keys unchanged. */
export async function findSession(db: Knex, config: Config, req: Request): Promise<Session | undefined> {
  const m = /^([1-9]\d{0,9})\.([A-Za-z0-9_-]{43})$/.exec(readCookies(req)[SESSION_COOKIE] ?? '');
  if (!m || Number(m[1]) > 2_147_483_647) return undefined;
  const key = { user_id: Number(m[1]), token_hash: sha256(m[2]) };
  const row = (await db('dashboard_sessions as s')
    .join('accounts as a', 'a.id', 's.user_id')
    .where({ 's.user_id': key.user_id, 's.token_hash': key.token_hash })
    .first(
      's.csrf_token',
      db.raw('s.public_key = a.public_key AS keys_current'),
      db.raw(`s.last_seen_at > now() - make_interval(mins => ?, secs => ?) AS fresh`, idleWindow(config)),
      db.raw(`s.last_seen_at < now() - make_interval(secs => ?) AS touch`, [TOUCH_EVERY_SECONDS]),
    )) as { csrf_token: string; keys_current: boolean; fresh: boolean; touch: boolean } | undefined;
  if (!row) return undefined;
  if (!row.keys_current || !row.fresh) {
    await db('dashboard_sessions').where(key).delete();
    return undefined;
  }
  if (row.touch) await db('dashboard_sessions').where(key).update({ last_seen_at: db.fn.now() });
  return { userId: key.user_id, csrf: row.csrf_token };
}

export type SignInOutcome = { ok: true; cookie: string } | { ok: false; retryAfterSeconds?: number };

/**
 * Checks a key pair and opens a session. Failures are counted per client address under a lock
 * on that address, so parallel guesses cannot pass the limit together; successes are not
 * counted. Another address is not slowed by them, nor is the API (its limit is its own).
 */
export async function signIn(db: Knex, config: Config, address: string, publicKey: string, secretKey: string): Promise<SignInOutcome> {
  return db.transaction(async (trx) => {
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
    if (recent.n >= MAX_FAILURES) return { ok: false, retryAfterSeconds: Math.max(1, recent.wait ?? 1) };
    const userId = publicKey.length <= 200 && secretKey.length <= 200 ? await findKeyOwner(trx, publicKey, hashSecret(secretKey)) : undefined;
    if (userId === undefined) {
      await trx('dashboard_sign_in_failures').insert({ address });
      return { ok: false };
    }
    const token = newToken();
    // The account's own expired sessions only: another process may run with a longer
    // DASHBOARD_SESSION_IDLE_MINUTES, and other accounts' sessions are not this sign-in's to end
    // by this process's window (one shard's rows on Citus, too). Others' expired rows go when met.
    await trx('dashboard_sessions')
      .where({ user_id: userId })
      .where('last_seen_at', '<=', trx.raw(`now() - make_interval(mins => ?, secs => ?)`, idleWindow(config)))
      .delete();
    await trx('dashboard_sessions').insert({ user_id: userId, token_hash: sha256(token), public_key: publicKey, csrf_token: newToken() });
    return { ok: true, cookie: `${userId}.${token}` };
  });
}

/** Ends the session the request's cookie names (if any). */
export async function signOut(db: Knex, req: Request): Promise<void> {
  const m = /^([1-9]\d{0,9})\.([A-Za-z0-9_-]{43})$/.exec(readCookies(req)[SESSION_COOKIE] ?? '');
  if (!m || Number(m[1]) > 2_147_483_647) return;
  await db('dashboard_sessions').where({ user_id: Number(m[1]), token_hash: sha256(m[2]) }).delete();
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
