import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { recordAudit } from '../audit/record';
import type { Config } from '../config';
import type { Actor } from '../context';
import { addressHeld, countAddressFailure, openSession } from '../dashboard/session';
import { emailKey, findMemberByEmail, unsealText, type MemberRow } from './members';
import { decoyHash, MAX_PASSWORD, verifyPassword } from './passwords';
import { acceptTotp, looksLikeRecoveryCode, recoveryDigest } from './totp';

/**
 * Signing in as a user (issue 37, docs/decisions.md "Teams"): email, password and, when the user
 * has a second factor, a TOTP code or one of their recovery codes.
 *
 * Two limits, both in PostgreSQL so every process shares them:
 * - per client address, as for the keys (src/dashboard/session.ts): 10 failures in 10 minutes,
 *   then 429;
 * - per address typed (its SHA-256, whether or not a user has it), from any client addresses: 10
 *   failures in 10 minutes hold it. A held address is answered exactly as a wrong password (401,
 *   SIGN_IN_REFUSED, a password hash checked against a decoy so the time is the same too), so the
 *   hold tells neither that it holds nor that the address is a user's. Attempts while held are not
 *   counted again (the hold ends when the window has fewer than 10 failures).
 *
 * Both checks and the counting run under transaction-level advisory locks (the client address,
 * then the typed address: always in that order), so parallel guesses cannot pass either limit.
 * Every attempt counts before its password is checked; a success takes its own back, so up to 10
 * sign-ins in flight at once from one client address could briefly see the limit (429).
 */
export const SIGN_IN_REFUSED = 'Invalid email, password or code.';

export const MAX_EMAIL_FAILURES = 10;
export const EMAIL_FAILURE_WINDOW_MINUTES = 10;
/** Advisory-lock class for one typed address's sign-in attempts. */
const EMAIL_LOCK_CLASS = 0x6465; // 'de'

export type PasswordSignInOutcome =
  | { ok: true; cookie: string; userId: number; memberId: number; recovery: boolean }
  | { ok: false; retryAfterSeconds?: number };

const digest = (text: string) => createHash('sha256').update(text).digest();

/** The typed address's digest, as member_sign_in_failures keeps it. */
export const emailHash = (email: string) => digest(emailKey(email));

async function emailHeld(trx: Knex.Transaction, hash: Buffer): Promise<boolean> {
  await trx.raw('SELECT pg_advisory_xact_lock(?, hashtext(?))', [EMAIL_LOCK_CLASS, hash.toString('hex')]);
  const window = trx.raw(`now() - make_interval(mins => ?)`, [EMAIL_FAILURE_WINDOW_MINUTES]);
  await trx('member_sign_in_failures').where({ email_hash: hash }).where('failed_at', '<', window).delete();
  const recent = (await trx('member_sign_in_failures').where({ email_hash: hash }).where('failed_at', '>=', window).first(trx.raw('count(*)::int AS n'))) as { n: number };
  return recent.n >= MAX_EMAIL_FAILURES;
}

/**
 * Checks the second factor of a user who has one: a TOTP code (its step stored by compare-and-set,
 * so a code is accepted once) or a recovery code (removed by compare-and-set: used once).
 * undefined: refused.
 */
export async function checkSecondFactor(trx: Knex | Knex.Transaction, config: Config, m: MemberRow, code: string): Promise<'totp' | 'recovery' | undefined> {
  if (!m.totp_secret) return undefined;
  const typed = code.trim();
  if (looksLikeRecoveryCode(typed)) {
    const d = recoveryDigest(typed);
    const used = await trx('members')
      .where({ user_id: m.user_id, id: m.id })
      .whereRaw('? = ANY(recovery_codes)', [d])
      .update({ recovery_codes: trx.raw('array_remove(recovery_codes, ?)', [d]), updated_at: trx.fn.now() })
      .returning('id');
    return used.length === 1 ? 'recovery' : undefined;
  }
  const last = m.totp_last_step === null ? null : Number(m.totp_last_step);
  const step = acceptTotp(unsealText(config, m.totp_secret), typed, last);
  if (step === undefined) return undefined;
  const stored = await trx('members')
    .where({ user_id: m.user_id, id: m.id })
    .where((q) => q.whereNull('totp_last_step').orWhere('totp_last_step', '<', step))
    .update({ totp_last_step: step })
    .returning('id');
  return stored.length === 1 ? 'totp' : undefined;
}

/** A user's actor (the audit log's "who") in a dashboard request from `address`. */
export const memberActor = (m: Pick<MemberRow, 'id' | 'role' | 'email'>, address: string | null): Actor => ({
  memberId: m.id,
  role: m.role,
  label: m.email,
  via: 'dashboard',
  address,
});

/**
 * Email, password and code → a session, or a refusal: 429 (per client address, with the seconds to
 * wait) or SIGN_IN_REFUSED for everything else (unknown address, no password set yet, wrong
 * password, missing or wrong code, held address).
 *
 * The attempt is counted as a failure first, in a short transaction under the two locks, and the
 * password hash (0.1–0.25 s) is checked after it committed: a flood of guesses at one address waits
 * on its lock for milliseconds, not for each other's hashing, and never holds the pool's
 * connections meanwhile. A success takes its own failure back (and forgets the address's others).
 */
export async function signInWithPassword(
  db: Knex,
  config: Config,
  address: string,
  input: { email: string; password: string; code: string },
): Promise<PasswordSignInOutcome> {
  const email = input.email.trim().slice(0, 320);
  const password = input.password.slice(0, MAX_PASSWORD);
  const hash = emailHash(email);
  const gate = await db.transaction(async (trx) => {
    const wait = await addressHeld(trx, address);
    if (wait !== undefined) return { wait };
    const held = await emailHeld(trx, hash);
    const addressFailure = await countAddressFailure(trx, address);
    // Attempts while held are not counted again: the hold ends when the window has fewer than 10.
    if (!held) await trx('member_sign_in_failures').insert({ email_hash: hash });
    return { held, addressFailure };
  });
  if ('wait' in gate) return { ok: false, retryAfterSeconds: gate.wait };
  const m = email ? await findMemberByEmail(db, email) : undefined;
  if (gate.held || !m || !m.password_hash) {
    await verifyPassword(password, await decoyHash());
    return { ok: false };
  }
  if (!(await verifyPassword(password, unsealText(config, m.password_hash)))) return { ok: false };
  return db.transaction(async (trx): Promise<PasswordSignInOutcome> => {
    let recovery = false;
    if (m.totp_secret) {
      const factor = await checkSecondFactor(trx, config, m, input.code);
      if (!factor) return { ok: false };
      recovery = factor === 'recovery';
    }
    await trx('dashboard_sign_in_failures').where({ id: gate.addressFailure }).delete();
    await trx('member_sign_in_failures').where({ email_hash: hash }).delete();
    await trx('members').where({ user_id: m.user_id, id: m.id }).update({ last_sign_in_at: trx.fn.now() });
    const account = (await trx('accounts').where({ id: m.user_id }).first('public_key')) as { public_key: string };
    const cookie = await openSession(trx, config, m.user_id, { memberId: m.id, via: 'password', publicKey: account.public_key });
    await recordAudit(trx, m.user_id, memberActor(m, address), {
      action: 'session.signed_in',
      objectKind: 'user',
      objectId: m.id,
      summary: recovery ? 'Signed in with a password and a recovery code' : m.totp_secret ? 'Signed in with a password and a code' : 'Signed in with a password',
    });
    return { ok: true, cookie, userId: m.user_id, memberId: m.id, recovery };
  });
}
