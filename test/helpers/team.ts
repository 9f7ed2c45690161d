import { createHash, randomBytes } from 'node:crypto';
import express, { type Express } from 'express';
import type { Knex } from 'knex';
import request from 'supertest';
import { createMember, sealText, type Member } from '../../src/team/members';
import { hashPassword } from '../../src/team/passwords';
import type { Role } from '../../src/team/permissions';
import { newTotpSecret, totpCode } from '../../src/team/totp';
import { TEST_MASTER_KEY } from './master-key';

/**
 * Users of an account for tests (issue 37): `addMember` makes one with a password (and a second
 * factor when asked), `signInAs` signs in to the dashboard as one through the sign-in form
 * (POST /app/sign-in with email, password and code), as a browser would.
 */

/** The password every user made here has unless told otherwise. */
export const MEMBER_PASSWORD = 'correct horse battery staple';

/** What the app seals with in tests (HERALD_MASTER_KEY of test/helpers/app.ts). */
export const TEST_SEAL = { masterKey: Buffer.from(TEST_MASTER_KEY, 'base64'), dataDir: '' };

export interface AddedMember {
  id: number;
  /** The account (members.user_id). */
  userId: number;
  email: string;
  role: Role;
  password: string;
  /** The TOTP secret (base32) when the user has a second factor. */
  totpSecret?: string;
  member: Member;
}

export interface AddMemberOptions {
  email?: string;
  name?: string;
  /** Default MEMBER_PASSWORD; null: no password (an invited user who has not set one yet). */
  password?: string | null;
  /** Give the user a second factor (a new TOTP secret). */
  totp?: boolean;
}

let seq = 0;
/** Hashing costs ~0.1–0.25 s: the shared password's hash is made once per process (sealed per user). */
const hashes = new Map<string, Promise<string>>();
const hashOf = (password: string) => {
  let h = hashes.get(password);
  if (!h) hashes.set(password, (h = hashPassword(password)));
  return h;
};

/** A user of account `userId` with `role`, a password (sealed scrypt hash) and, optionally, a TOTP secret. */
export async function addMember(db: Knex, userId: number, role: Role, opts: AddMemberOptions = {}): Promise<AddedMember> {
  seq += 1;
  const email = opts.email ?? `${role}.${seq}.${process.pid}.${randomBytes(3).toString('hex')}@team.test`;
  const member = await createMember(db, userId, { email, name: opts.name ?? `${role[0].toUpperCase()}${role.slice(1)} ${seq}`, role });
  const password = opts.password === undefined ? MEMBER_PASSWORD : opts.password;
  const totpSecret = opts.totp ? newTotpSecret() : undefined;
  const update: Record<string, unknown> = {};
  if (password !== null) {
    update.password_hash = sealText(TEST_SEAL, await hashOf(password));
    update.password_changed_at = db.fn.now();
  }
  if (totpSecret) {
    update.totp_secret = sealText(TEST_SEAL, totpSecret);
    update.recovery_codes = [];
  }
  if (Object.keys(update).length) await db('members').where({ user_id: userId, id: member.id }).update(update);
  return {
    id: member.id,
    userId,
    email,
    role,
    password: password ?? '',
    ...(totpSecret ? { totpSecret } : {}),
    member: { ...member, active: password !== null, two_factor: Boolean(totpSecret) },
  };
}

/**
 * A TOTP code the app accepts now for a user, for a step later than the last one used: the current
 * step's, else the next one's (accepted as +1 step), else it waits for the next step. The code of
 * the step before is never chosen: on a slow machine it may be two steps old when it arrives.
 */
export async function nextTotpCode(db: Knex, m: Pick<AddedMember, 'userId' | 'id'>, secret: string): Promise<string> {
  const row = (await db('members').where({ user_id: m.userId, id: m.id }).first('totp_last_step')) as { totp_last_step: string | number | null };
  const last = row.totp_last_step === null ? -1 : Number(row.totp_last_step);
  for (;;) {
    const now = Date.now();
    for (const offset of [0, 30_000]) {
      if (Math.floor((now + offset) / 30_000) > last) return totpCode(secret, now + offset);
    }
    await new Promise((resolve) => setTimeout(resolve, 30_000 - (now % 30_000) + 50));
  }
}

/** Waits, when the current 30-second step has less than `ms` left, for the next one (a test that needs a step to last). */
export async function freshTotpStep(ms = 15_000): Promise<void> {
  const left = 30_000 - (Date.now() % 30_000);
  if (left < ms) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

export interface SignedIn {
  /** A supertest agent carrying the session's cookie (and the sign-in form's) on /app. */
  agent: ReturnType<typeof request.agent>;
  /** The session's CSRF token (the `_csrf` field or X-CSRF-Token header). */
  csrf: string;
  /** The Cookie header, for tests that send it themselves (test/dashboard/lib/session.ts's Browserish). */
  cookie: string;
  member: AddedMember;
}

/** `name=value` pairs of a response's Set-Cookie headers. */
function cookiesOf(res: request.Response): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of (res.headers['set-cookie'] as unknown as string[] | undefined) ?? []) {
    const [pair] = c.split(';');
    const i = pair.indexOf('=');
    out[pair.slice(0, i)] = pair.slice(i + 1);
  }
  return out;
}

/**
 * Signs in to the dashboard as a user: `who` is a role (a new user with it is made), a member id
 * (a user made by addMember with MEMBER_PASSWORD and no second factor), or addMember's result.
 * A user with a second factor signs in with a TOTP code (or `opts.code`).
 */
export async function signInAs(app: Express, db: Knex, userId: number, who: Role | number | AddedMember, opts: { code?: string } = {}): Promise<SignedIn> {
  let member: AddedMember;
  if (typeof who === 'string') member = await addMember(db, userId, who);
  else if (typeof who === 'number') {
    const row = (await db('members').where({ user_id: userId, id: who }).first()) as (Member & { totp_secret: Buffer | null }) | undefined;
    if (!row) throw new Error(`no user ${who} in account ${userId}`);
    if (row.totp_secret) throw new Error(`user ${who} has a second factor: pass addMember's result to signInAs`);
    member = { id: row.id, userId, email: row.email, role: row.role, password: MEMBER_PASSWORD, member: row };
  } else member = who;

  const agent = request.agent(app);
  const form = await agent.get('/app');
  const token = /name="_csrf" value="([^"]+)"/.exec(form.text)?.[1] ?? '';
  const code = opts.code ?? (member.totpSecret ? await nextTotpCode(db, member, member.totpSecret) : '');
  const res = await agent.post('/app/sign-in').type('form').send({ _csrf: token, email: member.email, password: member.password, code });
  if (res.status !== 303) throw new Error(`sign-in as ${member.email} answered ${res.status}`);
  const session = cookiesOf(res).herald_session;
  const digest = createHash('sha256').update(session.split('.')[1]).digest();
  const row = (await db('dashboard_sessions').where({ user_id: userId, token_hash: digest }).first('csrf_token')) as { csrf_token: string };
  return { agent, csrf: row.csrf_token, cookie: `herald_session=${session}`, member };
}

/**
 * The app behind a proxy it trusts on loopback, so a test's request can come "from" an address of
 * its own (X-Forwarded-For: clientAddress()). Sign-in failures count per client address, and the
 * loopback address's count is shared by every test file that runs at the same time.
 */
export function behindProxy(app: Express): Express {
  const outer = express();
  outer.set('trust proxy', 'loopback');
  outer.use(app);
  return outer;
}

let addressSeq = 0;
/**
 * A random part per test file: jest may run several files in one process (one worker), each with
 * this module afresh, so neither the process id nor the count alone tells their addresses apart.
 */
const ADDRESS_PREFIX = randomBytes(6).toString('hex').match(/.{4}/g)!.join(':');
/** An address no other test file uses (IPv6 documentation space, a random part of this file's in it). */
export function clientAddress(): string {
  addressSeq += 1;
  return `2001:db8:${ADDRESS_PREFIX}::${addressSeq.toString(16)}`;
}
