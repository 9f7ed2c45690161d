import type { Knex } from 'knex';
import type { Config } from '../../config';
import type { Actor, Ctx } from '../../context';
import { recordAudit } from '../../audit/record';
import { AppError, forbidden, invalid, notFound1, refused } from '../../http/errors';
import { escapeHtml } from '../../mail/escape-html';
import { sendSystemMail, systemMailHtml, type SystemMailDeps } from '../../mail/system-mail';
import { createMember, emailKey, endMemberSessions, issueToken, listMembers, MemberError, MEMBER_COLUMNS, toMember, TOKEN_HOURS, type Member } from '../../team/members';
import { can, refusedMessage, type Role } from '../../team/permissions';
import type { InviteInput, UserRecord } from './users.schemas';

/**
 * An account's users, as the owner or an admin manages them (the API's /users routes, the
 * dashboard's Team page, the CLI). Rules (docs/decisions.md "Teams"):
 * - an owner, or making one, needs `account:manage` (an admin manages everybody else);
 * - the account keeps at least one owner, and one with a password while it had one (the last
 *   owner is neither demoted nor removed);
 * - a role change, a removal and a second-factor reset end the user's dashboard sessions.
 * Every statement names the account (`user_id`): one shard's on Citus.
 */

export const TAKEN = 'The email has already been taken.';
export const LAST_OWNER = 'The account must keep an owner: make another user the owner first.';
export const NOT_INVITED = 'This user has set a password already: there is no invitation to resend.';
const MAIL_FAILED = 'The invitation mail could not be sent. Try again later.';

/** The CLI's actor (docs/decisions.md "Teams"): an operator at the server acts as the owner. */
export const CLI_ACTOR: Actor = { memberId: null, role: 'owner', label: 'operator (CLI)', via: 'cli', address: null };

export function toUserRecord(m: Member): UserRecord {
  return {
    id: m.id,
    email: m.email,
    name: m.name,
    role: m.role,
    status: m.active ? 'active' : 'invited',
    two_factor: m.two_factor,
    created_at: m.created_at as unknown as string,
    last_sign_in_at: (m.last_sign_in_at as unknown as string | null) ?? null,
  };
}

const SELECT = [...MEMBER_COLUMNS, 'password_hash', 'totp_secret'];

/** The account's users, oldest first. */
export async function listUsers(ctx: Ctx): Promise<UserRecord[]> {
  return (await listMembers(ctx.db, ctx.userId)).map(toUserRecord);
}

/** One user of the account (NF1: none of that id in this account). */
export async function findUser(ctx: Ctx, id: number, db: Knex = ctx.db): Promise<UserRecord> {
  const row = await db('members').where({ user_id: ctx.userId, id }).first(SELECT);
  if (!row) throw notFound1();
  return toUserRecord(toMember(row));
}

/** The user an address names in this account (undefined: none). */
export async function findUserByEmail(ctx: Ctx, email: string): Promise<UserRecord | undefined> {
  const row = await ctx.db('members').where({ user_id: ctx.userId }).whereRaw('lower(email) = ?', [emailKey(email)]).first(SELECT);
  return row ? toUserRecord(toMember(row)) : undefined;
}

const actorRole = (ctx: Ctx): Role => ctx.actor?.role ?? 'owner';

/** An owner, or making one, needs account:manage (403 naming it otherwise). */
function guardOwner(ctx: Ctx, ...roles: Role[]): void {
  if (roles.includes('owner') && !can(actorRole(ctx), 'account:manage')) throw forbidden(refusedMessage('account:manage'));
}

interface Locked {
  row: Record<string, unknown>;
  member: Member;
}

/**
 * In a transaction: the account's owners, then the user, locked (in that order in every change,
 * so two changes of one account wait for each other instead of deadlocking). NF1 when the user
 * is not the account's.
 */
async function lockUser(ctx: Ctx, trx: Knex.Transaction, id: number): Promise<Locked & { owners: Member[] }> {
  const owners = (await trx('members').where({ user_id: ctx.userId, role: 'owner' }).orderBy('id').forUpdate().select(SELECT)).map(toMember);
  const row = await trx('members').where({ user_id: ctx.userId, id }).forUpdate().first();
  if (!row) throw notFound1();
  return { row, member: toMember(row), owners };
}

/** The account keeps an owner, and one with a password while it had one (422 otherwise). */
function keepOwner(owners: Member[], leaving: Member): void {
  if (leaving.role !== 'owner') return;
  const rest = owners.filter((o) => o.id !== leaving.id);
  if (rest.length === 0 || (leaving.active && !rest.some((o) => o.active))) throw refused(LAST_OWNER);
}

async function accountName(db: Knex, userId: number): Promise<string> {
  const row = await db('accounts').where({ id: userId }).first('name');
  return (row?.name as string | undefined) ?? '';
}

const ROLE_ARTICLE: Record<Role, string> = { owner: 'an owner', admin: 'an admin', sender: 'a sender', editor: 'an editor', viewer: 'a viewer' };

/** The invitation's mail: who invited, to which account, as what; the link (72 hours, once). */
async function mailInvitation(ctx: Ctx, mail: SystemMailDeps, member: Member, link: string): Promise<void> {
  const account = await accountName(ctx.db, ctx.userId);
  const who = ctx.actor && ctx.actor.memberId !== null ? ctx.actor.label : 'The account’s owner';
  const html = systemMailHtml('You are invited to Herald', [
    `${escapeHtml(who)} invited you to the Herald account “${escapeHtml(account)}” as ${ROLE_ARTICLE[member.role]}.`,
    `<a href="${escapeHtml(link)}">Accept the invitation</a> and choose your password. The link works once, for ${TOKEN_HOURS.invite} hours.`,
    'If you did not expect this, ignore this mail.',
  ]);
  try {
    await sendSystemMail(mail, { to: { email: member.email, name: member.name || null }, subject: `Your invitation to Herald (${account})`, html, link });
  } catch (err) {
    mail.logger.warn({ member: member.id, err: (err as Error).message }, 'invitation mail could not be sent');
    throw new AppError(503, MAIL_FAILED, { 'Retry-After': '60' });
  }
}

/**
 * Invites a user: the user (without a password) and a one-time link valid 72 hours, mailed. All
 * or nothing: when the mail server does not take the mail, nothing is kept (503).
 */
export async function inviteUser(ctx: Ctx, mail: SystemMailDeps, input: InviteInput): Promise<{ user: UserRecord; expires_at: string }> {
  guardOwner(ctx, input.role);
  return ctx.db.transaction(async (trx) => {
    let member: Member;
    try {
      member = await createMember(trx, ctx.userId, { email: input.email, name: input.name, role: input.role });
    } catch (err) {
      if (err instanceof MemberError) throw invalid({ email: [TAKEN] });
      throw err;
    }
    const link = await issueToken(trx, mail.config, ctx.userId, member.id, 'invite');
    await mailInvitation(ctx, mail, member, link.url);
    return { user: toUserRecord(member), expires_at: link.expiresAt as unknown as string };
  });
}

/** A new invitation link for a user who has not set a password yet; the earlier one stops working. */
export async function resendInvitation(ctx: Ctx, mail: SystemMailDeps, id: number): Promise<{ user: UserRecord; expires_at: string }> {
  return ctx.db.transaction(async (trx) => {
    const { member } = await lockUser(ctx, trx, id);
    guardOwner(ctx, member.role);
    if (member.active) throw refused(NOT_INVITED);
    const link = await issueToken(trx, mail.config, ctx.userId, member.id, 'invite');
    await mailInvitation(ctx, mail, member, link.url);
    return { user: toUserRecord(member), expires_at: link.expiresAt as unknown as string };
  });
}

/** Gives a user another role; their sessions end (they sign in again with the new one). */
export async function changeRole(ctx: Ctx, id: number, role: Role): Promise<{ user: UserRecord; from: Role }> {
  return ctx.db.transaction(async (trx) => {
    const { member, owners } = await lockUser(ctx, trx, id);
    guardOwner(ctx, member.role, role);
    if (member.role === role) return { user: toUserRecord(member), from: role };
    if (role !== 'owner') keepOwner(owners, member);
    const [row] = await trx('members').where({ user_id: ctx.userId, id }).update({ role, updated_at: trx.fn.now() }).returning(SELECT);
    await endMemberSessions(trx, ctx.userId, id);
    return { user: toUserRecord(toMember(row)), from: member.role };
  });
}

/** Removes a user: their sign-in address, links and sessions go with them. Their audit entries stay. */
export async function removeUser(ctx: Ctx, id: number, db: Knex = ctx.db): Promise<UserRecord> {
  const run = async (trx: Knex.Transaction) => {
    const { member, owners } = await lockUser(ctx, trx, id);
    guardOwner(ctx, member.role);
    keepOwner(owners, member);
    await trx('member_logins').where({ email: emailKey(member.email), user_id: ctx.userId, member_id: id }).delete();
    // member_tokens and dashboard_sessions go by their foreign keys' cascade.
    await trx('members').where({ user_id: ctx.userId, id }).delete();
    return toUserRecord(member);
  };
  return db.isTransaction ? run(db as Knex.Transaction) : db.transaction(run);
}

/** Clears a user's second factor (TOTP and recovery codes) and ends their sessions: they set one up again. */
export async function resetTwoFactor(ctx: Ctx, id: number): Promise<UserRecord> {
  return ctx.db.transaction(async (trx) => {
    const { member } = await lockUser(ctx, trx, id);
    guardOwner(ctx, member.role);
    const [row] = await trx('members')
      .where({ user_id: ctx.userId, id })
      .update({ totp_secret: null, totp_pending: null, totp_last_step: null, recovery_codes: [], updated_at: trx.fn.now() })
      .returning(SELECT);
    await endMemberSessions(trx, ctx.userId, id);
    return toUserRecord(toMember(row));
  });
}

/** Whether every user of the account needs a second factor. */
export async function setRequireTwoFactor(ctx: Ctx, required: boolean): Promise<void> {
  await ctx.db('accounts').where({ id: ctx.userId }).update({ require_two_factor: required, updated_at: ctx.db.fn.now() });
}

export async function requiresTwoFactor(ctx: Ctx): Promise<boolean> {
  const row = await ctx.db('accounts').where({ id: ctx.userId }).first('require_two_factor');
  return Boolean(row?.require_two_factor);
}

/**
 * For operators (the CLI, the first start): a user with a one-time setup link valid 24 hours,
 * printed instead of mailed; an audit entry by `actor`. Throws MemberError when the address is taken.
 */
export async function createUserWithSetupLink(
  db: Knex,
  config: Pick<Config, 'publicUrl'>,
  userId: number,
  input: { email: string; name?: string; role: Role },
  actor: Actor,
): Promise<{ user: UserRecord; setup_link: string; expires_at: string }> {
  return db.transaction(async (trx) => {
    const member = await createMember(trx, userId, input);
    const link = await issueToken(trx, config, userId, member.id, 'setup');
    await recordAudit(trx, userId, actor, { action: 'user.created', objectKind: 'user', objectId: member.id, summary: `${member.email} as ${member.role}, with a setup link` });
    return { user: toUserRecord(member), setup_link: link.url, expires_at: link.expiresAt as unknown as string };
  });
}

/**
 * For operators (the CLI): a new setup link (24 hours) for a user who has not set a password yet
 * (the first owner whose link expired); the earlier link stops working. 422 for a user with a password.
 */
/**
 * A new one-time link for a user, for operators (`herald user link`): a setup link (24 hours) for a
 * user without a password yet, a password-reset link (1 hour; using it ends the user's sessions)
 * for one who has — an owner who lost their password with no mail getting through, or every user
 * after the master key was lost (their sealed hashes cannot be read). The earlier link of the kind stops working.
 */
export async function newUserLink(
  ctx: Ctx,
  config: Pick<Config, 'publicUrl'>,
  id: number,
): Promise<{ user: UserRecord; purpose: 'setup' | 'reset'; link: string; expires_at: string }> {
  return ctx.db.transaction(async (trx) => {
    const { member } = await lockUser(ctx, trx, id);
    const purpose = member.active ? 'reset' : 'setup';
    const link = await issueToken(trx, config, ctx.userId, member.id, purpose);
    if (ctx.actor) await recordAudit(trx, ctx.userId, ctx.actor, { action: `user.${purpose}_link_issued`, objectKind: 'user', objectId: id, summary: member.email });
    return { user: toUserRecord(member), purpose, link: link.url, expires_at: link.expiresAt as unknown as string };
  });
}
