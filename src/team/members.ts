import { createHash, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../config';
import { masterKey, seal, unseal } from '../dkim/master-key';
import type { Role } from './permissions';

/**
 * An account's users (table `members`, docs/decisions.md "Teams"): the one module that writes
 * `members`, `member_logins` and `member_tokens`. Every statement names the account (`user_id`), so
 * it is one shard's on Citus; `member_logins` (a global table) is the only lookup by address alone.
 */
export interface Member {
  id: number;
  user_id: number;
  email: string;
  name: string;
  role: Role;
  /** A password is set (false: invited, or the first owner before the setup link was used). */
  active: boolean;
  two_factor: boolean;
  created_at: Date;
  last_sign_in_at: Date | null;
}

/** What a member row holds besides the public fields (never leaves this module's callers' hands). */
export interface MemberSecrets {
  password_hash: Buffer | null;
  totp_secret: Buffer | null;
  totp_pending: Buffer | null;
  totp_last_step: string | number | null;
  recovery_codes: string[];
}

export type MemberRow = Member & MemberSecrets;

export const MEMBER_COLUMNS = ['id', 'user_id', 'email', 'name', 'role', 'created_at', 'last_sign_in_at'] as const;

/** Addresses are kept as typed; compared and looked up in lower case. */
export const emailKey = (email: string) => email.trim().toLowerCase();

export function toMember(row: Record<string, unknown>): Member {
  return {
    id: row.id as number,
    user_id: row.user_id as number,
    email: row.email as string,
    name: row.name as string,
    role: row.role as Role,
    active: row.password_hash !== null && row.password_hash !== undefined,
    two_factor: row.totp_secret !== null && row.totp_secret !== undefined,
    created_at: row.created_at as Date,
    last_sign_in_at: (row.last_sign_in_at as Date | null) ?? null,
  };
}

/** Seals a secret (a password hash, a TOTP secret) with the installation's master key. */
export const sealText = (config: Pick<Config, 'masterKey' | 'dataDir'>, text: string) => seal(masterKey(config), Buffer.from(text, 'utf8'));
export const unsealText = (config: Pick<Config, 'masterKey' | 'dataDir'>, sealed: Buffer) => unseal(masterKey(config), sealed).toString('utf8');

export class MemberError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The address is another user's already (of this account or another: an address signs in to one account). */
export const EMAIL_TAKEN = 'This email address is already a user’s.';

/**
 * Adds a user without a password (they set one through a setup or invitation link). Throws
 * MemberError(email) when the address is taken. In `db`, which may be the caller's transaction.
 */
export async function createMember(db: Knex, userId: number, input: { email: string; name?: string; role: Role }): Promise<Member> {
  const run = async (trx: Knex.Transaction) => {
    const key = emailKey(input.email);
    const taken = await trx('member_logins').where({ email: key }).first('email');
    if (taken) throw new MemberError('email', EMAIL_TAKEN);
    const [row] = await trx('members')
      .insert({ user_id: userId, email: input.email.trim(), name: input.name?.trim() ?? '', role: input.role })
      .returning([...MEMBER_COLUMNS, 'password_hash', 'totp_secret']);
    await trx('member_logins').insert({ email: key, user_id: userId, member_id: row.id });
    return toMember(row);
  };
  try {
    return db.isTransaction ? await run(db as Knex.Transaction) : await db.transaction(run);
  } catch (err) {
    // Two requests for one address at once: the second meets the first's key.
    if ((err as { code?: string }).code === '23505') throw new MemberError('email', EMAIL_TAKEN);
    throw err;
  }
}

export async function findMember(db: Knex, userId: number, memberId: number): Promise<MemberRow | undefined> {
  const row = await db('members').where({ user_id: userId, id: memberId }).first();
  return row ? ({ ...toMember(row), ...pickSecrets(row) } as MemberRow) : undefined;
}

/** The user an address signs in as (any account), with their secrets. */
export async function findMemberByEmail(db: Knex, email: string): Promise<MemberRow | undefined> {
  const login = await db('member_logins').where({ email: emailKey(email) }).first('user_id', 'member_id');
  return login ? findMember(db, login.user_id as number, login.member_id as number) : undefined;
}

export async function listMembers(db: Knex, userId: number): Promise<Member[]> {
  const rows = await db('members').where({ user_id: userId }).orderBy('id').select([...MEMBER_COLUMNS, 'password_hash', 'totp_secret']);
  return rows.map(toMember);
}

function pickSecrets(row: Record<string, unknown>): MemberSecrets {
  return {
    password_hash: (row.password_hash as Buffer | null) ?? null,
    totp_secret: (row.totp_secret as Buffer | null) ?? null,
    totp_pending: (row.totp_pending as Buffer | null) ?? null,
    totp_last_step: (row.totp_last_step as string | number | null) ?? null,
    recovery_codes: (row.recovery_codes as string[] | null) ?? [],
  };
}

/** Ends every dashboard session of a user (role or password change, removal, "sign out everywhere"). */
export async function endMemberSessions(db: Knex, userId: number, memberId: number): Promise<number> {
  return db('dashboard_sessions').where({ user_id: userId, member_id: memberId }).delete();
}

// ---- one-time links ----

export type TokenPurpose = 'setup' | 'invite' | 'reset';

/** How long each kind of link works. */
export const TOKEN_HOURS: Record<TokenPurpose, number> = { setup: 24, invite: 72, reset: 1 };

/** Where each kind of link leads (under PUBLIC_URL). */
export const TOKEN_PATHS: Record<TokenPurpose, string> = { setup: '/app/welcome', invite: '/app/welcome', reset: '/app/reset' };

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/**
 * Issues a one-time link for a user: `<PUBLIC_URL><path>/<account id>.<32 random bytes>`. Only its
 * SHA-256 is stored. The user's earlier unused links of the same purpose stop working.
 */
export async function issueToken(db: Knex, config: Pick<Config, 'publicUrl'>, userId: number, memberId: number, purpose: TokenPurpose): Promise<{ url: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const purposes = purpose === 'reset' ? ['reset'] : ['setup', 'invite'];
  await db('member_tokens').where({ user_id: userId, member_id: memberId }).whereIn('purpose', purposes).whereNull('used_at').delete();
  const [row] = await db('member_tokens')
    .insert({
      user_id: userId,
      member_id: memberId,
      token_hash: sha256(token),
      purpose,
      expires_at: db.raw(`now() + make_interval(hours => ?)`, [TOKEN_HOURS[purpose]]),
    })
    .returning(['expires_at']);
  return { url: `${config.publicUrl.replace(/\/+$/, '')}${TOKEN_PATHS[purpose]}/${userId}.${token}`, expiresAt: row.expires_at as Date };
}

/** Parses `<account id>.<token>` as a link carries it (undefined: not one of ours). */
export function parseToken(text: string): { userId: number; hash: Buffer } | undefined {
  const m = /^([1-9]\d{0,9})\.([A-Za-z0-9_-]{43})$/.exec(text);
  if (!m || Number(m[1]) > 2_147_483_647) return undefined;
  return { userId: Number(m[1]), hash: sha256(m[2]) };
}

/**
 * The user a link names, when it is unused, not expired and of one of `purposes` (reading only:
 * the page that asks for the password). undefined otherwise, whatever the reason.
 */
export async function peekToken(db: Knex, text: string, purposes: TokenPurpose[]): Promise<{ userId: number; memberId: number; purpose: TokenPurpose } | undefined> {
  const t = parseToken(text);
  if (!t) return undefined;
  const row = await db('member_tokens')
    .where({ user_id: t.userId, token_hash: t.hash })
    .whereIn('purpose', purposes)
    .whereNull('used_at')
    .where('expires_at', '>', db.fn.now())
    .first('member_id', 'purpose');
  return row ? { userId: t.userId, memberId: row.member_id as number, purpose: row.purpose as TokenPurpose } : undefined;
}

/**
 * Uses a link once, in the caller's transaction: marks it used and returns whom it names; a second
 * use, an expired or a tampered link is undefined.
 */
export async function consumeToken(trx: Knex.Transaction, text: string, purposes: TokenPurpose[]): Promise<{ userId: number; memberId: number; purpose: TokenPurpose } | undefined> {
  const t = parseToken(text);
  if (!t) return undefined;
  const [row] = await trx('member_tokens')
    .where({ user_id: t.userId, token_hash: t.hash })
    .whereIn('purpose', purposes)
    .whereNull('used_at')
    .where('expires_at', '>', trx.fn.now())
    .update({ used_at: trx.fn.now() })
    .returning(['member_id', 'purpose']);
  return row ? { userId: t.userId, memberId: row.member_id as number, purpose: row.purpose as TokenPurpose } : undefined;
}
