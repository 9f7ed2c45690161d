import { createHash, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { toDatetime } from '../../db/types';
import { ensureKey, signingDomain } from '../../dkim/keys';
import { escapeHtml } from '../../mail/escape-html';
import { sendSystemMail, systemMailHtml, type SystemMailDeps } from '../../mail/system-mail';
import { AppError, invalid, notFound1, refused, type FieldErrors } from '../../http/errors';
import { MAX_INT } from '../../http/fields';
import { listRows, type Paging } from '../../http/pagination';
import { recordAccountEvent } from '../../events/account-events';
import { sendUsingSender } from '../../single-sends/rows';
import { SenderVerification, senderVerification } from '../../states';
import { findOrFail, liveRows, scoped } from '../shared/crud';
import type { SenderInput, SenderRecord } from './senders.schemas';

const TABLE = 'senders';
/** Every column of the record; `verify_token_hash` is deliberately not among them. */
const COLUMNS = [
  'id',
  'user_id',
  'from_name',
  'from_email',
  'reply_to_email',
  'country_id',
  'state_id',
  'city_id',
  'zip_code',
  'company_address',
  'company_address2',
  'nickname',
  'is_verified',
  'utr',
  'send_at',
  'created_at',
  'updated_at',
  'deleted_at',
].map((c) => `${TABLE}.${c}`);
const UTR_CONSTRAINT = 'senders_utr_unique';
const IN_USE = 'The sender is used by a single send that is ready or running.';
const IN_USE_BY_AUTOMATION = 'The sender is used by an automation email.';
const MAIL_FAILED = 'The verification mail could not be sent. Try again later.';

/** A row as the database returns it: `send_at` is still a `<timestamp>`. */
type SenderRow = Omit<SenderRecord, 'send_at'> & { send_at: string | null };

/** VAL messages on `sender_id` for single sends and automation emails (docs/decisions.md, "Conventions": verified senders only). */
export const senderIdMessages = {
  missing: 'The selected sender id is invalid.',
  unverified: 'The selected sender id is not verified.',
} as const;

function toRecord(row: SenderRow): SenderRecord {
  return { ...row, send_at: toDatetime(row.send_at) };
}

/** The account's senders that are not deleted. */
function isUtrClash(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && e.constraint === UTR_CONSTRAINT;
}

/** The link's secret: only its SHA-256 is stored, so a database dump cannot verify anything. */
interface VerificationToken {
  token: string;
  hash: Buffer;
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/**
 * A verification link names its account, `<user_id>.<random>`, so opening it reads and writes
 * only that account's rows (one node on Citus; the random part alone is what makes it
 * unguessable). Links mailed before this format have no account part: they are found by their
 * hash alone (tokenAccount).
 */
function newVerificationToken(userId: number): VerificationToken {
  const token = `${userId}.${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashToken(token) };
}

/** The account a verification link belongs to, if any sender has it. */
async function tokenAccount(db: Knex, token: string): Promise<number | undefined> {
  const named = /^(\d{1,10})\./.exec(token);
  if (named) return Number(named[1]) <= MAX_INT ? Number(named[1]) : undefined;
  const row = (await db(TABLE).where({ verify_token_hash: hashToken(token) }).whereNull('deleted_at').first('user_id')) as { user_id: number } | undefined;
  return row?.user_id;
}

function columns(input: SenderInput) {
  return {
    from_name: input.from_name,
    from_email: input.from_email,
    reply_to_email: input.reply_to_email,
    country_id: input.country_id,
    state_id: input.state_id ?? null,
    city_id: input.city_id ?? null,
    zip_code: input.zip_code ?? '',
    company_address: input.company_address,
    company_address2: input.company_address2 ?? '',
    nickname: input.nickname,
  };
}

/**
 * The geography rules need the database, so they run after the form rules; the three are
 * reported together. A state must be of the country, a city of the country and of the state
 * when one is given. One statement, so it can run inside the caller's transaction.
 */
async function checkPlaces(db: Knex, input: SenderInput): Promise<void> {
  const { country_id: countryId, state_id: stateId, city_id: cityId } = input;
  const exists = (q: Knex.QueryBuilder) => db.raw('EXISTS (?)', [q.select(db.raw('1'))]);
  const unchecked = db.raw('true');
  const city = cityId === undefined ? undefined : db('cities').where({ id: cityId, country_id: countryId });
  if (city && stateId !== undefined) city.where('state_id', stateId);
  const found = (await db
    .select({
      country: exists(db('countries').where({ id: countryId })),
      state: stateId === undefined ? unchecked : exists(db('states').where({ id: stateId, country_id: countryId })),
      city: city ? exists(city) : unchecked,
    })
    .first()) as { country: boolean; state: boolean; city: boolean };
  const errors: FieldErrors = {};
  if (!found.country) errors.country_id = ['The selected country id is invalid.'];
  if (!found.state) errors.state_id = ['The selected state id is invalid.'];
  if (!found.city) errors.city_id = ['The selected city id is invalid.'];
  if (Object.keys(errors).length) throw invalid(errors);
}

function verificationMail(
  config: SystemMailDeps['config'],
  sender: Pick<SenderRecord, 'from_name' | 'from_email' | 'nickname'>,
  token: string,
) {
  const link = `${config.publicUrl}/senders/verify/${token}`;
  const html = systemMailHtml('Verify your sender address', [
    `Herald was asked to send email as <strong>${escapeHtml(sender.from_name)}</strong> ` +
      `&lt;${escapeHtml(sender.from_email)}&gt; (sender “${escapeHtml(sender.nickname)}”).`,
    `To confirm that this address is yours, open this link:<br><a href="${escapeHtml(link)}">${escapeHtml(link)}</a>`,
    'If you did not ask for this, ignore this message: nothing is sent as this address until it is verified.',
  ]);
  return {
    to: { name: sender.from_name, email: sender.from_email },
    subject: `Verify your sender address ${sender.from_email}`,
    html,
    link,
  };
}

/**
 * Mails the link and records when it went out. A mail that cannot be sent does not undo the
 * save: it is logged, `send_at` stays as it was, and resend-mail tries again. `send_at` is
 * only set while this token is still the current one (a concurrent resend may have replaced it).
 */
async function mailVerificationBestEffort(
  ctx: Ctx,
  mail: SystemMailDeps,
  sender: Pick<SenderRecord, 'id' | 'from_name' | 'from_email' | 'nickname'>,
  token: VerificationToken,
): Promise<void> {
  try {
    await sendSystemMail(mail, verificationMail(mail.config, sender, token.token));
  } catch (err) {
    mail.logger.warn({ sender: sender.id, err: (err as Error).message }, 'sender verification mail could not be sent');
    return;
  }
  await liveRows(ctx, TABLE)
    .where({ id: sender.id, verify_token_hash: token.hash })
    .update({ send_at: ctx.db.fn.now(), updated_at: ctx.db.fn.now() });
}

/**
 * A new sending domain gets its DKIM key now, so GET /sender/dns has its record to publish
 * before the first message. Best effort: signing makes a missing key on first use anyway.
 */
async function ensureDomainKey(ctx: Ctx, mail: SystemMailDeps, email: string): Promise<void> {
  try {
    await ensureKey(ctx.db, mail.config, ctx.userId, signingDomain(email));
  } catch (err) {
    mail.logger.warn({ err: (err as Error).message }, 'DKIM key could not be made for a sender domain');
  }
}

/** Newest first. */
export async function listSenders(ctx: Ctx, paging?: Paging) {
  const base = liveRows(ctx, TABLE);
  const listed = await listRows<SenderRow>(base.clone().select(COLUMNS).orderBy(`${TABLE}.id`, 'desc'), base, paging);
  return { ...listed, rows: listed.rows.map(toRecord) };
}

export async function findSender(ctx: Ctx, id: number): Promise<SenderRecord> {
  const row = await findOrFail<SenderRow>(liveRows(ctx, TABLE).where(`${TABLE}.id`, id).select(COLUMNS), notFound1);
  return toRecord(row);
}

/** `utr` is unique across accounts; a clash (1 in 2^64 per pair) just draws again. */
export async function saveSender(ctx: Ctx, mail: SystemMailDeps, input: SenderInput): Promise<void> {
  await checkPlaces(ctx.db, input);
  const token = newVerificationToken(ctx.userId);
  let id: number | undefined;
  for (let attempt = 1; id === undefined; attempt += 1) {
    try {
      const [row] = await ctx.db(TABLE)
        .insert({
          user_id: ctx.userId,
          ...columns(input),
          utr: randomBytes(8).toString('hex'),
          verify_token_hash: token.hash,
        })
        .returning(['id']);
      id = row.id as number;
    } catch (err) {
      if (attempt < 5 && isUtrClash(err)) continue;
      throw err;
    }
  }
  await ensureDomainKey(ctx, mail, input.from_email);
  await mailVerificationBestEffort(ctx, mail, { id, ...input }, token);
}

/** A new from_email is unverified, whatever the old one was. */
const UNVERIFY = senderVerification.move([SenderVerification.Unverified, SenderVerification.Verified], SenderVerification.Unverified);

/**
 * Replaces the sender's fields (absent optional ones become empty). A new `from_email`
 * (compared case-insensitively) is unverified again and gets its own verification mail.
 */
export async function updateSender(ctx: Ctx, mail: SystemMailDeps, id: number, input: SenderInput): Promise<void> {
  const token = newVerificationToken(ctx.userId);
  const emailChanged = await ctx.db.transaction(async (trx) => {
    const current = await findOrFail<Pick<SenderRow, 'from_email'>>(
      liveRows(ctx, TABLE, trx).where(`${TABLE}.id`, id).forUpdate().select(`${TABLE}.from_email`),
      notFound1,
    );
    await checkPlaces(trx, input);
    const changed = current.from_email.toLowerCase() !== input.from_email.toLowerCase();
    await liveRows(ctx, TABLE, trx)
      .where(`${TABLE}.id`, id)
      .update({
        ...columns(input),
        ...(changed ? { is_verified: UNVERIFY.to, verify_token_hash: token.hash, send_at: null } : {}),
        updated_at: trx.fn.now(),
      });
    return changed;
  });
  if (emailChanged) {
    await ensureDomainKey(ctx, mail, input.from_email);
    await mailVerificationBestEffort(ctx, mail, { id, ...input }, token);
  }
}

/**
 * Soft delete. Refused while a ready or running single send, or an email of an automation
 * that is not deleted, uses the sender: the worker still needs it. The sender row is locked
 * first, and single-send create/update and automation-email create hold it FOR SHARE
 * (findVerifiedSender's `lock`) until they commit, so neither can appear between the check
 * and the delete (test/api/senders.test.ts races them).
 */
export async function deleteSender(ctx: Ctx, id: number): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    await findOrFail(liveRows(ctx, TABLE, trx).where(`${TABLE}.id`, id).forUpdate().select(`${TABLE}.id`), notFound1);
    // A send's own sender, or one of its A/B test's sender variations.
    const inUse = await sendUsingSender(trx, ctx.userId, id);
    if (inUse) throw refused(IN_USE);
    const inAutomation = await scoped(ctx, 'automation_schedules', trx)
      .join('automations', function () {
        this.on('automations.id', '=', 'automation_schedules.automation_id').andOn('automations.user_id', '=', 'automation_schedules.user_id');
      })
      .where('automation_schedules.sender_id', id)
      .whereNull('automation_schedules.deleted_at')
      .whereNull('automations.deleted_at')
      .first('automation_schedules.id');
    if (inAutomation) throw refused(IN_USE_BY_AUTOMATION);
    await liveRows(ctx, TABLE, trx)
      .where(`${TABLE}.id`, id)
      .update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
  });
}

/**
 * A fresh link for the sender, whether or not it is verified already (opening it again is
 * harmless). The mail goes first and the token is stored only once it was accepted, so a
 * failed mail leaves the previous link working; the caller learns it failed (503).
 */
export async function resendVerification(ctx: Ctx, mail: SystemMailDeps, id: number): Promise<void> {
  const sender = await findSender(ctx, id);
  const token = newVerificationToken(ctx.userId);
  try {
    await sendSystemMail(mail, verificationMail(mail.config, sender, token.token));
  } catch (err) {
    mail.logger.warn({ sender: id, err: (err as Error).message }, 'sender verification mail could not be sent');
    throw new AppError(503, MAIL_FAILED, { 'Retry-After': '60' });
  }
  const changed = await liveRows(ctx, TABLE)
    .where(`${TABLE}.id`, id)
    .update({ verify_token_hash: token.hash, send_at: ctx.db.fn.now(), updated_at: ctx.db.fn.now() });
  if (!changed) throw notFound1();
}

/**
 * For single sends and automation emails: the live, verified sender of the account, or why it
 * cannot be used (VAL `senderIdMessages[reason]`). Pass the caller's transaction and `lock` to
 * hold the sender (FOR SHARE) until it commits, so a concurrent delete waits for it.
 */
export async function findVerifiedSender(
  ctx: Ctx,
  id: number,
  opts: { db?: Knex; lock?: boolean } = {},
): Promise<SenderRecord | 'missing' | 'unverified'> {
  const q = liveRows(ctx, TABLE, opts.db ?? ctx.db).where(`${TABLE}.id`, id).select(COLUMNS);
  if (opts.lock) q.forShare();
  const row = (await q.first()) as SenderRow | undefined;
  if (!row) return 'missing';
  if (row.is_verified !== SenderVerification.Verified) return 'unverified';
  return toRecord(row);
}

export interface ConfirmedSender {
  id: number;
  user_id: number;
  from_name: string;
  from_email: string;
  nickname: string;
}

/** Whether a verification link is current, without using it (HEAD requests, link scanners). */
export async function isCurrentToken(db: Knex, token: string): Promise<boolean> {
  const userId = await tokenAccount(db, token);
  if (userId === undefined) return false;
  const row = await db(TABLE).where({ user_id: userId, verify_token_hash: hashToken(token) }).whereNull('deleted_at').first('id');
  return Boolean(row);
}

const VERIFY = senderVerification.move([SenderVerification.Unverified, SenderVerification.Verified], SenderVerification.Verified);

/**
 * Opens a verification link: the sender becomes verified and the link is used up (a second
 * use finds nothing). The account's notification recipients hear of it when the sender was
 * not verified before: the `sender.verified` event is written in the same transaction, so the
 * change and its event are both there or neither is.
 */
export async function confirmSender(db: Knex, token: string): Promise<ConfirmedSender | null> {
  const userId = await tokenAccount(db, token);
  if (userId === undefined) return null;
  return db.transaction(async (trx) => {
    const { rows } = (await trx.raw(
      `UPDATE senders s
          SET is_verified = ${VERIFY.toSql}, verify_token_hash = NULL, updated_at = now()
         FROM (SELECT id, is_verified FROM senders
                WHERE user_id = ? AND verify_token_hash = ? AND deleted_at IS NULL
                FOR UPDATE) old
        WHERE s.user_id = ? AND s.id = old.id
    RETURNING s.id, s.user_id, s.from_name, s.from_email, s.nickname, old.is_verified AS was_verified`,
      [userId, hashToken(token), userId],
    )) as { rows: Array<ConfirmedSender & { was_verified: number }> };
    const row = rows[0];
    if (!row) return null;
    const { was_verified: wasVerified, ...sender } = row;
    if (wasVerified !== SenderVerification.Verified) {
      await recordAccountEvent({ db: trx }, sender.user_id, 'sender.verified', `Sender verified: ${sender.from_email}`, {
        sender_id: sender.id,
        nickname: sender.nickname,
        from_name: sender.from_name,
        from_email: sender.from_email,
      });
    }
    return sender;
  });
}
