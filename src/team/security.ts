import type { Knex } from 'knex';
import { recordAudit } from '../audit/record';
import type { Config } from '../config';
import type { Actor } from '../context';
import { openSession } from '../dashboard/session';
import { escapeHtml } from '../mail/escape-html';
import { sendSystemMail, systemMailHtml, type SystemMailDeps } from '../mail/system-mail';
import { consumeToken, EMAIL_TAKEN, emailKey, findMember, findMemberByEmail, issueToken, sealText, TOKEN_HOURS, unsealText, type MemberRow, type TokenPurpose } from './members';
import { hashPassword, passwordProblem, verifyPassword } from './passwords';
import { checkSecondFactor, emailHash, memberActor } from './sign-in';
import { acceptTotp, newRecoveryCodes, newTotpSecret, recoveryDigest, totpUri } from './totp';

/**
 * A user's own security (issue 37, docs/decisions.md "Teams"): the setup and invitation links,
 * password reset by mail, changing the password, the second factor (TOTP and recovery codes). The
 * one module that writes members' password and TOTP columns besides T's second-factor reset.
 * Passwords and TOTP secrets are stored sealed (members.ts sealText) and never leave here except a
 * new TOTP secret to its own user while they set it up; recovery codes are returned once.
 */

/** A refusal a person can fix, beside the field it concerns. */
export class SecurityError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export const LINK_GONE = 'This link is invalid or no longer works. Ask for a new one.';
export const WRONG_PASSWORD = 'The current password is not right.';
export const WRONG_CODE = 'The code is not right. Type the code your app shows now, or one of your recovery codes.';
export const TWO_FACTOR_REQUIRED = 'Your account requires a second factor: it cannot be turned off.';
export const RESET_ANSWER = 'If that address is a user’s, a link is on its way. It works once, for 1 hour.';
/** A second reset mail for a user waits this long after the first (a form sent again and again does not flood their inbox). */
export const RESET_MAIL_EVERY_SECONDS = 60;

const NAME_MAX = 200;

function checkName(name: string): string {
  const n = name.trim();
  if (!n) throw new SecurityError('name', 'The name field is required.');
  if (n.length > NAME_MAX) throw new SecurityError('name', `The name must not be greater than ${NAME_MAX} characters.`);
  return n;
}

function checkNewPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem) throw new SecurityError('password', problem);
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

async function sealedPassword(config: Config, password: string): Promise<Buffer> {
  return sealText(config, await hashPassword(password));
}

// ---- one-time links: setup, invitation ----

export interface WelcomeInput {
  name: string;
  password: string;
  /** The first owner's setup link only: the address they sign in with (may change the one Herald made). */
  email?: string;
}

/**
 * Uses a setup or invitation link: sets the user's name and password (and, for a setup link, their
 * address), marks the link used, and opens a session for them. Validation comes before the link is
 * used, so a refused password does not spend it. undefined: the link is unknown, used, expired or
 * tampered with.
 */
export async function completeWelcome(
  db: Knex,
  config: Config,
  token: string,
  input: WelcomeInput,
  address: string | null,
): Promise<{ cookie: string; userId: number; memberId: number; purpose: TokenPurpose } | undefined> {
  const name = checkName(input.name);
  checkNewPassword(input.password);
  const email = input.email?.trim();
  if (email !== undefined && (!EMAIL_RE.test(email) || email.length > 254)) throw new SecurityError('email', 'The email must be a valid email address.');
  const sealed = await sealedPassword(config, input.password);
  return db.transaction(async (trx) => {
    const used = await consumeToken(trx, token, ['setup', 'invite']);
    if (!used) return undefined;
    const m = await findMember(trx, used.userId, used.memberId);
    if (!m) return undefined;
    const update: Record<string, unknown> = { name, password_hash: sealed, password_changed_at: trx.fn.now(), updated_at: trx.fn.now(), last_sign_in_at: trx.fn.now() };
    let label = m.email;
    if (used.purpose === 'setup' && email && emailKey(email) !== emailKey(m.email)) {
      const taken = await trx('member_logins').where({ email: emailKey(email) }).first('email');
      if (taken) throw new SecurityError('email', EMAIL_TAKEN);
      await trx('member_logins').where({ email: emailKey(m.email), user_id: m.user_id }).delete();
      await trx('member_logins').insert({ email: emailKey(email), user_id: m.user_id, member_id: m.id });
      update.email = email;
      label = email;
    } else if (used.purpose === 'setup' && email) {
      update.email = email;
      label = email;
    }
    await trx('members').where({ user_id: m.user_id, id: m.id }).update(update);
    const actor: Actor = { ...memberActor(m, address), label };
    await recordAudit(trx, m.user_id, actor, {
      action: 'user.setup_completed',
      objectKind: 'user',
      objectId: m.id,
      summary: used.purpose === 'setup' ? `Set up the account’s first user (${label})` : `Accepted the invitation as ${m.role} (${label})`,
    });
    const account = (await trx('accounts').where({ id: m.user_id }).first('public_key')) as { public_key: string };
    const cookie = await openSession(trx, config, m.user_id, { memberId: m.id, via: 'password', publicKey: account.public_key });
    await recordAudit(trx, m.user_id, actor, { action: 'session.signed_in', objectKind: 'user', objectId: m.id, summary: 'Signed in with a password (a new user’s first sign-in)' });
    return { cookie, userId: m.user_id, memberId: m.id, purpose: used.purpose };
  });
}

// ---- password reset ----

/**
 * Asks for a reset link: when the address is a user's with a password, a link valid 1 hour is
 * mailed (not more than one a minute). The caller answers RESET_ANSWER whatever happened, and does
 * not wait for this (so the time does not tell either): the mail goes out after the answer.
 */
export async function requestReset(deps: SystemMailDeps, email: string): Promise<boolean> {
  const typed = email.trim().slice(0, 320);
  if (!typed) return false;
  const m = await findMemberByEmail(deps.db, typed);
  if (!m || !m.password_hash) return false;
  const recent = await deps.db('member_tokens')
    .where({ user_id: m.user_id, member_id: m.id, purpose: 'reset' })
    .whereNull('used_at')
    .where('created_at', '>', deps.db.raw(`now() - make_interval(secs => ?)`, [RESET_MAIL_EVERY_SECONDS]))
    .first('member_id');
  if (recent) return false;
  const link = await issueToken(deps.db, deps.config, m.user_id, m.id, 'reset');
  const html = systemMailHtml('Choose a new password', [
    `Someone (we hope you) asked to reset the password of ${escapeHtml(m.email)} for the Herald dashboard.`,
    `<a href="${escapeHtml(link.url)}">Choose a new password</a>. The link works once, for ${TOKEN_HOURS.reset} hour. Using it signs you out everywhere.`,
    'If you did not ask for it, ignore this mail: your password stays as it is.',
  ]);
  await sendSystemMail(deps, { to: { email: m.email, name: m.name || null }, subject: 'Reset your Herald password', html, link: link.url });
  return true;
}

/**
 * Uses a reset link: the new password, every session of the user ended, the address's failed
 * sign-ins forgotten. undefined: the link does not work (any reason).
 */
export async function completeReset(db: Knex, config: Config, token: string, password: string, address: string | null): Promise<{ userId: number; memberId: number } | undefined> {
  checkNewPassword(password);
  const sealed = await sealedPassword(config, password);
  return db.transaction(async (trx) => {
    const used = await consumeToken(trx, token, ['reset']);
    if (!used) return undefined;
    const m = await findMember(trx, used.userId, used.memberId);
    if (!m) return undefined;
    await trx('members').where({ user_id: m.user_id, id: m.id }).update({ password_hash: sealed, password_changed_at: trx.fn.now(), updated_at: trx.fn.now() });
    const ended = await trx('dashboard_sessions').where({ user_id: m.user_id, member_id: m.id }).delete();
    await trx('member_sign_in_failures').where({ email_hash: emailHash(m.email) }).delete();
    await recordAudit(trx, m.user_id, memberActor(m, address), {
      action: 'user.password_reset',
      objectKind: 'user',
      objectId: m.id,
      summary: `Reset the password by mail (${ended} ${ended === 1 ? 'session' : 'sessions'} ended)`,
    });
    return { userId: m.user_id, memberId: m.id };
  });
}

// ---- my account ----

async function me(db: Knex, actor: Actor, userId: number): Promise<MemberRow> {
  const m = actor.memberId === null ? undefined : await findMember(db, userId, actor.memberId);
  if (!m) throw new SecurityError('_form', 'Signed in with the account’s keys: there is no user to change.');
  return m;
}

export async function changeName(db: Knex, userId: number, actor: Actor, name: string): Promise<void> {
  const n = checkName(name);
  const m = await me(db, actor, userId);
  if (n === m.name) return;
  await db.transaction(async (trx) => {
    await trx('members').where({ user_id: userId, id: m.id }).update({ name: n, updated_at: trx.fn.now() });
    await recordAudit(trx, userId, actor, { action: 'user.name_changed', objectKind: 'user', objectId: m.id, summary: `Changed their name to ${n}` });
  });
}

/** Changes the password (the current one checked) and ends every other session of the user. */
export async function changePassword(
  db: Knex,
  config: Config,
  userId: number,
  actor: Actor,
  input: { current: string; password: string },
  keepTokenHash: Buffer,
): Promise<number> {
  const m = await me(db, actor, userId);
  if (!m.password_hash || !(await verifyPassword(input.current.slice(0, 200), unsealText(config, m.password_hash)))) throw new SecurityError('current_password', WRONG_PASSWORD);
  checkNewPassword(input.password);
  const sealed = await sealedPassword(config, input.password);
  return db.transaction(async (trx) => {
    await trx('members').where({ user_id: userId, id: m.id }).update({ password_hash: sealed, password_changed_at: trx.fn.now(), updated_at: trx.fn.now() });
    const ended = await trx('dashboard_sessions').where({ user_id: userId, member_id: m.id }).whereNot({ token_hash: keepTokenHash }).delete();
    await recordAudit(trx, userId, actor, {
      action: 'user.password_changed',
      objectKind: 'user',
      objectId: m.id,
      summary: `Changed their password (${ended} other ${ended === 1 ? 'session' : 'sessions'} ended)`,
    });
    return ended;
  });
}

export interface TwoFactorState {
  enabled: boolean;
  /** Setting up: the secret (base32) and the otpauth:// address the QR code carries. */
  pending?: { secret: string; uri: string };
  recoveryCodesLeft: number;
  required: boolean;
}

export async function twoFactorState(db: Knex, config: Config, userId: number, actor: Actor): Promise<TwoFactorState> {
  const m = await me(db, actor, userId);
  const account = (await db('accounts').where({ id: userId }).first('require_two_factor')) as { require_two_factor: boolean };
  const secret = m.totp_pending ? unsealText(config, m.totp_pending) : undefined;
  return {
    enabled: m.totp_secret !== null,
    ...(secret && !m.totp_secret ? { pending: { secret, uri: totpUri(secret, m.email) } } : {}),
    recoveryCodesLeft: m.recovery_codes.length,
    required: account.require_two_factor,
  };
}

/** Starts setting up TOTP: a new secret kept (sealed) as pending until a code from it is confirmed. */
export async function startTwoFactor(db: Knex, config: Config, userId: number, actor: Actor): Promise<void> {
  const m = await me(db, actor, userId);
  if (m.totp_secret) throw new SecurityError('code', 'A second factor is already set up.');
  await db('members').where({ user_id: userId, id: m.id }).update({ totp_pending: sealText(config, newTotpSecret()), updated_at: db.fn.now() });
}

async function storeRecoveryCodes(trx: Knex.Transaction, userId: number, memberId: number): Promise<string[]> {
  const codes = newRecoveryCodes();
  await trx('members').where({ user_id: userId, id: memberId }).update({ recovery_codes: codes.map(recoveryDigest) });
  return codes;
}

/** Confirms the pending secret with a code from it: TOTP on, ten recovery codes (returned once). */
export async function confirmTwoFactor(db: Knex, config: Config, userId: number, actor: Actor, code: string): Promise<string[]> {
  const m = await me(db, actor, userId);
  if (m.totp_secret) throw new SecurityError('code', 'A second factor is already set up.');
  if (!m.totp_pending) throw new SecurityError('code', 'Start setting up first.');
  const step = acceptTotp(unsealText(config, m.totp_pending), code, null);
  if (step === undefined) throw new SecurityError('code', 'The code is not right. Type the code your app shows now.');
  return db.transaction(async (trx) => {
    const done = await trx('members')
      .where({ user_id: userId, id: m.id })
      .whereNull('totp_secret')
      .where({ totp_pending: m.totp_pending })
      .update({ totp_secret: m.totp_pending, totp_pending: null, totp_last_step: step, updated_at: trx.fn.now() })
      .returning('id');
    if (done.length !== 1) throw new SecurityError('code', 'A second factor is already set up.');
    const codes = await storeRecoveryCodes(trx, userId, m.id);
    await recordAudit(trx, userId, actor, { action: 'user.two_factor_enabled', objectKind: 'user', objectId: m.id, summary: 'Turned on two-factor sign-in (TOTP), with ten recovery codes' });
    return codes;
  });
}

async function checkCode(db: Knex, config: Config, m: MemberRow, code: string): Promise<void> {
  if (!(await checkSecondFactor(db, config, m, code))) throw new SecurityError('code', WRONG_CODE);
}

/** Ten new recovery codes (the old ones stop working), with a current code. */
export async function regenerateRecoveryCodes(db: Knex, config: Config, userId: number, actor: Actor, code: string): Promise<string[]> {
  const m = await me(db, actor, userId);
  if (!m.totp_secret) throw new SecurityError('code', 'Set up a second factor first.');
  await checkCode(db, config, m, code);
  return db.transaction(async (trx) => {
    const codes = await storeRecoveryCodes(trx, userId, m.id);
    await recordAudit(trx, userId, actor, { action: 'user.recovery_codes_regenerated', objectKind: 'user', objectId: m.id, summary: 'Made ten new recovery codes (the old ones no longer work)' });
    return codes;
  });
}

/** Turns TOTP off (with a current code), refused while the account requires a second factor. */
export async function disableTwoFactor(db: Knex, config: Config, userId: number, actor: Actor, code: string): Promise<void> {
  const m = await me(db, actor, userId);
  if (!m.totp_secret) return;
  const account = (await db('accounts').where({ id: userId }).first('require_two_factor')) as { require_two_factor: boolean };
  if (account.require_two_factor) throw new SecurityError('code', TWO_FACTOR_REQUIRED);
  await checkCode(db, config, m, code);
  await db.transaction(async (trx) => {
    await trx('members')
      .where({ user_id: userId, id: m.id })
      .update({ totp_secret: null, totp_pending: null, totp_last_step: null, recovery_codes: [], updated_at: trx.fn.now() });
    await recordAudit(trx, userId, actor, { action: 'user.two_factor_disabled', objectKind: 'user', objectId: m.id, summary: 'Turned off two-factor sign-in' });
  });
}
