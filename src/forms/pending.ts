import type { Knex } from 'knex';

/**
 * `pending_subscriptions` (migrations/202612300300_pending-subscriptions.ts): submissions to a
 * double opt-in form waiting for their confirmation. Not contacts: no send or automation reads
 * this table. Every statement names the account (one node on Citus).
 */
export interface PendingFields {
  /** Reserved columns of the contact (first_name, last_name, city, …) as submitted. */
  reserved: Record<string, string>;
  /** Custom values by custom field id (as `contacts.custom_fields` keeps them). */
  custom: Record<string, string>;
}

export interface PendingRow {
  id: number;
  user_id: number;
  form_id: number;
  email: string;
  fields: PendingFields;
  contact_type_ids: number[];
  consent_text: string;
  ip: string | null;
  user_agent: string | null;
  created_at: Date;
  last_mailed_at: Date | null;
  generation: number;
  confirmed_at: Date | null;
}

export interface PendingInput {
  userId: number;
  formId: number;
  email: string;
  fields: PendingFields;
  contactTypeIds: number[];
  consentText: string;
  ip: string | null;
  userAgent: string | null;
}

/** A confirmation mail goes at most this often per pending subscription (form and address). */
export const RESEND_MINUTES = 10;

const cut = (v: string | null, n: number) => (v === null ? null : v.slice(0, n));

/**
 * The statement that records a submission — for a CTE of the submission's one statement
 * (src/public/subscribe-service.ts), written when `when` (SQL over the statement's other CTEs)
 * holds: a new row, or the form's row for the address (any case) updated with what was
 * submitted now. A row that was confirmed starts again (a new generation: the links mailed
 * before are dead). The same upsert takes the right to mail it — when it is new, was confirmed,
 * was never mailed, or was last mailed more than RESEND_MINUTES ago, `last_mailed_at` becomes
 * `now` — and returns `id` and `mail` (whether it took it: the caller queues the mail then).
 *
 * `now` is a value, not now(), and so is the time before which a mail may go again (timestamptz −
 * interval is not IMMUTABLE either): Citus refuses such a function in DO UPDATE SET. `mail` compares the stored time with it — PostgreSQL 15 cannot RETURNING the old row. It
 * is unique per submission (submissionTime), so a row mailed before reads as mailed now only if
 * another process stamped it in the same microsecond (at worst, one more confirmation mail).
 */
export function pendingUpsertSql(p: PendingInput, now: string, when: string): { sql: string; bindings: Knex.RawBinding[] } {
  return {
    sql: `INSERT INTO pending_subscriptions AS p (user_id, form_id, email, fields, contact_type_ids, consent_text, ip, user_agent, created_at, last_mailed_at)
     SELECT ?, ?, ?, ?::jsonb, ?::int[], ?, ?, ?, ?::timestamptz, ?::timestamptz WHERE ${when}
     ON CONFLICT (user_id, form_id, lower(email)) DO UPDATE SET
       email = excluded.email, fields = excluded.fields, contact_type_ids = excluded.contact_type_ids,
       consent_text = excluded.consent_text, ip = excluded.ip, user_agent = excluded.user_agent,
       generation = CASE WHEN p.confirmed_at IS NULL THEN p.generation ELSE p.generation + 1 END,
       created_at = CASE WHEN p.confirmed_at IS NULL THEN p.created_at ELSE excluded.created_at END,
       last_mailed_at = CASE WHEN p.confirmed_at IS NOT NULL OR p.last_mailed_at IS NULL
         OR p.last_mailed_at <= ? THEN excluded.last_mailed_at ELSE p.last_mailed_at END,
       confirmed_at = NULL, confirm_ip = NULL, confirm_user_agent = NULL
     RETURNING p.id, p.last_mailed_at = ?::timestamptz AS mail`,
    bindings: [
      ...[p.userId, p.formId, p.email, JSON.stringify(p.fields), p.contactTypeIds, p.consentText, cut(p.ip, 64), cut(p.userAgent, 512), now, now],
      new Date(Date.parse(now) - RESEND_MINUTES * 60_000),
      now,
    ],
  };
}

let lastMicros = 0;

/**
 * The time of a submission as pendingUpsertSql stamps it: now, in microseconds, never the same
 * twice in this process (two in one microsecond take the next one).
 */
export function submissionTime(): string {
  const micros = Math.max(Math.round((performance.timeOrigin + performance.now()) * 1000), lastMicros + 1);
  lastMicros = micros;
  const ms = Math.floor(micros / 1000);
  return `${new Date(ms).toISOString().slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`;
}

/**
 * The right to mail a pending subscription now: true (and `last_mailed_at` set) when it is
 * unconfirmed and was not mailed within RESEND_MINUTES.
 */
export async function takeMailTurn(db: Knex, userId: number, id: number): Promise<boolean> {
  const { rowCount } = await db.raw(
    `UPDATE pending_subscriptions SET last_mailed_at = now()
     WHERE user_id = ? AND id = ? AND confirmed_at IS NULL
       AND (last_mailed_at IS NULL OR last_mailed_at <= now() - make_interval(mins => ?))`,
    [userId, id, RESEND_MINUTES],
  );
  return (rowCount ?? 0) > 0;
}

export async function findPending(db: Knex, userId: number, id: number): Promise<PendingRow | undefined> {
  const row = (await db('pending_subscriptions').where({ user_id: userId, id }).first()) as PendingRow | undefined;
  return row ? { ...row, id: Number(row.id) } : undefined;
}

/**
 * Uses a confirmation link: stamps the row confirmed (time, client address, user agent) when it
 * is of this generation and not confirmed yet, and answers it; undefined when the link was used
 * (or is of an older generation, or the row is gone). The stamp and what the caller then writes
 * commit together: call in the caller's transaction.
 */
export async function confirmPending(
  trx: Knex,
  ref: { userId: number; pendingId: number; generation: number },
  who: { ip: string | null; userAgent: string | null },
): Promise<PendingRow | undefined> {
  const { rows } = await trx.raw(
    `UPDATE pending_subscriptions SET confirmed_at = now(), confirm_ip = ?, confirm_user_agent = ?
     WHERE user_id = ? AND id = ? AND generation = ? AND confirmed_at IS NULL
     RETURNING *`,
    [cut(who.ip, 64), cut(who.userAgent, 512), ref.userId, ref.pendingId, ref.generation],
  );
  const row = rows[0] as PendingRow | undefined;
  return row ? { ...row, id: Number(row.id) } : undefined;
}

/**
 * Pending subscriptions of a form per UTC day of their submission, not confirmed (yet), for
 * `GET /forms/stats`; days without any are left out.
 */
export async function pendingByDay(db: Knex, userId: number, formId: number, since: Date, until: Date): Promise<Array<{ day: string; pending: number }>> {
  const { rows } = await db.raw(
    `SELECT to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, count(*)::int AS pending
     FROM pending_subscriptions
     WHERE user_id = ? AND form_id = ? AND confirmed_at IS NULL AND created_at >= ? AND created_at < ?
     GROUP BY 1 ORDER BY 1`,
    [userId, formId, since, until],
  );
  return rows as Array<{ day: string; pending: number }>;
}

/**
 * OPTIN_PENDING_DAYS: pending subscriptions submitted longer ago than that go (confirmed ones
 * too: their consent record is kept by src/consent), a slice at a time by primary key (Citus
 * cannot plan a DELETE by ctid). Returns how many went.
 */
export async function deleteOldPending(db: Knex, days: number, slice = 10_000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await db.raw(
      `DELETE FROM pending_subscriptions WHERE (id, user_id) IN (
         SELECT id, user_id FROM pending_subscriptions WHERE created_at < now() - make_interval(days => ?) LIMIT ?)`,
      [days, slice],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < slice) break;
  }
  return total;
}
