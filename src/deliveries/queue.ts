import type { Knex } from 'knex';
import { enhancedStatus } from '../bounces/fields';
import type { DeferReason } from '../mail/mailer';
import { recordMessageEvents } from '../events/record';
import type { MessageEvent } from '../events/types';
import { softBounceCounts, suppress, type Suppression } from '../suppression';
import { fenceSql, type Fence } from '../jobs/fence';
import { SOURCE_REF_COLUMNS, sourceRef, type SourceRefColumns } from '../sources';
import { AbPhase, DeliveryStatus, deliveryStatus } from '../states';
import { ofAccount, ofOneAccount, type DueWork } from '../db/per-account';

/**
 * The recipient-row queue in PostgreSQL. Rows are claimed with `FOR UPDATE SKIP LOCKED`, so
 * any number of workers share the work and never take the same row. A claim is a lease: the
 * claimed row's `next_attempt_at` is the end of its lease (and `locked_until` says so for
 * people reading the table), so a row whose worker died is due again, in the same index walk
 * as queued rows, once its lease runs out — no separate sweep puts it back.
 *
 * A claim is identified by the row's attempt number: the outcomes and the release of a claim
 * apply only while the row is still `sending` under that attempt (the fencing rule every claim
 * shares, src/jobs/fence.ts), so a worker that lost its lease (it stalled past it, another
 * worker took the row over) cannot overwrite the newer attempt's outcome or count it twice.
 * The claim itself is this file's own (CLAIM_SQL: the hot path, benchmarked by bench:send); the
 * job runner's claim for other background work is src/jobs/claim.ts.
 */
export interface ClaimedRow {
  id: number;
  user_id: number;
  single_send_id: number | null;
  automation_id: number | null;
  automation_schedule_id: number | null;
  /** An A/B send's recipient row: its variation and phase (src/ab); null on every other. */
  ab_variation_id: number | null;
  ab_phase: number | null;
  contact_id: number | null;
  email: string;
  /** The stored token of a row written before tokens were signed (null since). */
  token: string | null;
  attempts: number;
  /** Placeholder values of a recipient without a contact (hand-added to a segment). */
  data: Record<string, unknown> | null;
  /** The contact's values as they are at claim time (null columns for a recipient without one). */
  first_name: string | null;
  last_name: string | null;
  alt_email: string | null;
  country: string | null;
  state: string | null;
  city: string | null;
  address_line1: string | null;
  address_line2: string | null;
  state_province_region: string | null;
  postal_code: string | null;
  custom_fields: Record<string, unknown> | null;
}

/** A claim, as its outcome or its release names it. */
export type ClaimRef = Pick<ClaimedRow, 'id' | 'user_id' | 'attempts'>;

/** Due rows, and rows whose lease ran out, → sending (src/states.ts). */
const CLAIM = deliveryStatus.move([DeliveryStatus.Queued, DeliveryStatus.Sending], DeliveryStatus.Sending);
/** The held rest of an A/B send whose winner is decided → sending, to the winner (src/ab/decision.ts). */
const CLAIM_HELD = deliveryStatus.move(DeliveryStatus.Held, DeliveryStatus.Sending);

/** The claimed row's own columns, as the claim returns them. */
const CLAIMED_COLUMNS = ['id', 'user_id', 'single_send_id', 'automation_id', 'automation_schedule_id', 'ab_variation_id', 'ab_phase', 'contact_id', 'email', 'token', 'attempts', 'data'];

/**
 * Claims up to `limit` due rows, oldest `next_attempt_at` first, by walking
 * `deliveries_queue_index` in order and stopping after `limit` rows: a cost independent of
 * the queue's length (no `id` tie-break: a fan-out chunk shares one timestamp, and sorting by
 * id made PostgreSQL read and sort the whole chunk on every claim). The claimed rows come
 * back with their contacts' current values (primary-key lookups), so rendering needs no
 * other query.
 *
 * With `released` (some A/B test is releasing: ReleasingTests), an A/B send's held rows whose
 * winner is decided are due too, since the decision (its `decided_at`): the claim takes them
 * straight from `held` through `deliveries_held_index`, writing the winner's variation and phase
 * as it claims them — the decision itself writes no recipient row, so releasing 800,000 of them
 * costs nothing at the decision (docs/decisions.md, "A/B tests"). Both kinds are taken oldest due
 * first. Without it the statement is the plain claim: the union costs ≈ 1 ms more per claim of
 * 100 rows (planning and execution, measured), which no ordinary send should pay.
 *
 * Bitmap scans are switched off for this statement: right after a large fan-out the table's
 * statistics still say "few queued rows" (autovacuum has not analyzed it yet), and the planner
 * then prefers a bitmap scan of *every* queued row plus a sort — measured at 50–120 ms per
 * claim with 100,000 queued rows (the sort spilling to disk), growing with the audience.
 *
 * The claim's commit does not wait for its WAL to reach the disk (synchronous_commit off for
 * this transaction only): a claim lost in a database crash leaves its rows queued, to be
 * sent again — and those are rows claimed and not recorded, the in-flight set a worker crash
 * may send twice anyway. Outcomes do wait: a lost outcome would send a recorded message
 * again. Sending no longer waits for a disk flush before each half-batch.
 *
 * The settings and the claim go as one simple-protocol query (one round trip, one implicit
 * transaction), which is why the numbers are written into the text: integers from the
 * configuration (and the account's id), checked here.
 *
 * With `userId` (on Citus, src/db/per-account.ts) the claim takes one account's rows: every
 * table in it is named with the account as a value, so Citus runs it on the one shard that
 * holds them (it refuses `FOR UPDATE` across shards). Without it, the text is the one-server
 * claim, unchanged.
 */
export const CLAIM_SQL = (limit: number, leaseMs: number, userId?: number, released = false) => {
  if (!Number.isSafeInteger(limit) || limit < 1 || !Number.isSafeInteger(leaseMs) || leaseMs < 1) {
    throw new Error(`claim: bad limit ${limit} or lease ${leaseMs}`);
  }
  const of = (alias: string) => ofAccount(`${alias}user_id`, userId);
  const due = (columns: string) => `SELECT ${columns} FROM deliveries
      WHERE status IN (${CLAIM.fromSql}) AND next_attempt_at <= now()${of('')}
      ORDER BY next_attempt_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED`;
  const picked = released
    ? `due AS (
      ${due('id, user_id, next_attempt_at AS due_at, NULL::int AS winner')}
    ), released AS (
      SELECT h.id, h.user_id, t.decided_at AS due_at, v.id AS winner
      FROM ab_tests t
      JOIN single_send_variations v ON v.single_send_id = t.single_send_id AND v.user_id = t.user_id AND v.idx = t.winner${of('v.')}
      CROSS JOIN LATERAL (
        SELECT d.id, d.user_id FROM deliveries d
        WHERE d.single_send_id = t.single_send_id AND d.user_id = t.user_id AND d.status IN (${CLAIM_HELD.fromSql})${of('d.')}
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      ) h
      WHERE t.releasing${of('t.')}
      LIMIT ${limit}
    ), picked AS (
      SELECT * FROM due UNION ALL SELECT * FROM released
      ORDER BY due_at
      LIMIT ${limit}
    )`
    : `picked AS (
      ${due('id, user_id')}
    )`;
  const toWinner = released
    ? `,
          ab_variation_id = coalesce(picked.winner, d.ab_variation_id),
          ab_phase = CASE WHEN picked.winner IS NULL THEN d.ab_phase ELSE ${AbPhase.Winner} END`
    : '';
  return `SET LOCAL enable_bitmapscan = off;
    SET LOCAL synchronous_commit = off;
    WITH ${picked}, claimed AS (
      UPDATE deliveries d
      SET status = ${CLAIM.toSql}, attempts = d.attempts + 1,
          next_attempt_at = now() + interval '${leaseMs} milliseconds', locked_until = now() + interval '${leaseMs} milliseconds'${toWinner}
      FROM picked WHERE d.id = picked.id AND d.user_id = picked.user_id${of('d.')}
      RETURNING ${CLAIMED_COLUMNS.map((c) => `d.${c}`).join(', ')}${released ? ', picked.due_at' : ''}
    )
    SELECT ${CLAIMED_COLUMNS.map((c) => `cl.${c}`).join(', ')}, c.first_name, c.last_name, c.alt_email, co.name AS country, c.state, c.city, c.address_line1,
           c.address_line2, c.state_province_region, c.postal_code, c.custom_fields
    FROM claimed cl
    LEFT JOIN contacts c ON c.id = cl.contact_id AND c.user_id = cl.user_id${of('c.')}
    LEFT JOIN countries co ON co.id = c.country_id${released ? `
    ORDER BY cl.due_at` : ''}`;
};

/**
 * Where due recipient rows are, for the accounts' line on Citus (src/db/per-account.ts): queued
 * rows due, and the held rest of decided A/B tests (due since the decision).
 */
export const DUE_ROWS: DueWork = {
  from: `(SELECT user_id, min(next_attempt_at) AS due_at FROM deliveries
          WHERE status IN (${CLAIM.fromSql}) AND next_attempt_at <= now() GROUP BY user_id
          UNION ALL
          SELECT user_id, min(decided_at) FROM ab_tests WHERE releasing GROUP BY user_id) due_rows`,
  where: 'true',
  account: 'user_id',
  due: 'due_at',
};

/**
 * Whether some A/B test is releasing its held rows to a winner (the claim then also takes those),
 * read at most once a second per process: a decision's rest starts going out within a second.
 */
export class ReleasingTests {
  private known = false;
  private readAt = -Infinity;

  constructor(private readonly ttlMs = 1000) {}

  async any(db: Knex): Promise<boolean> {
    if (Date.now() - this.readAt < this.ttlMs) return this.known;
    const { rows } = await db.raw('SELECT EXISTS (SELECT 1 FROM ab_tests WHERE releasing) AS any');
    this.known = Boolean((rows as Array<{ any: boolean }>)[0].any);
    this.readAt = Date.now();
    return this.known;
  }
}

export async function claimBatch(db: Knex, limit: number, leaseMs: number, userId?: number, released = true): Promise<ClaimedRow[]> {
  const results = (await db.raw(CLAIM_SQL(limit, leaseMs, userId, released))) as Array<{ rows: ClaimedRow[] }>;
  return results[results.length - 1].rows;
}

const RELEASE = deliveryStatus.move(DeliveryStatus.Sending, DeliveryStatus.Queued);

/** A claimed row is `sending` under the attempt its claim counted. */
const FENCE: Fence = { claimedSql: RELEASE.fromSql, attempts: 'attempts' };

/**
 * Rows this worker claimed and never tried (it is stopping): due again at once, as they were,
 * the claim's attempt undone. A row another worker has since taken over is left alone.
 */
export async function releaseClaimed(db: Knex, claims: ClaimRef[]): Promise<void> {
  if (claims.length === 0) return;
  await db.raw(
    `UPDATE deliveries d SET status = ${RELEASE.toSql}, attempts = d.attempts - 1, locked_until = NULL, next_attempt_at = now()
     FROM json_to_recordset(?::json) AS v(id bigint, user_id integer, attempts integer)
     WHERE d.id = v.id AND d.user_id = v.user_id AND ${fenceSql('d', FENCE, 'v.attempts')}${ofOneAccount('d', claims.map((c) => c.user_id))}`,
    [JSON.stringify(claims.map(({ id, user_id, attempts }) => ({ id, user_id, attempts })))],
  );
}

/**
 * What came of one claimed row. `route`: the delivery route it went through or was tried on
 * (src/routes/router.ts), for its event's `data.route`. A `queued` outcome with `reason` is a
 * deferral by the routes (none had room, throttled, blocked, down): its claim's attempt is given
 * back, as releaseClaimed does, and its `deferred` event says why.
 */
/**
 * A deferral gives its attempt back, so a message every route keeps refusing for route reasons (a
 * block by its provider on each route, say) would wait forever: like Postfix's
 * maximal_queue_lifetime, one still deferred this long after its row was written ends `failed`
 * (a soft bounce without its reply code: the address did nothing, nothing is suppressed).
 */
const DEFERRED_LIFETIME_MS = 5 * 24 * 3600_000;

export type SendOutcome =
  | { status: typeof DeliveryStatus.Sent; messageId: string; route?: string }
  | { status: typeof DeliveryStatus.Bounced | typeof DeliveryStatus.Failed; error: string; code?: number; route?: string }
  | { status: typeof DeliveryStatus.Queued; error: string; retryAt: Date; code?: number; route?: string; reason?: DeferReason };

// An outcome moves its row from sending to the outcome's status: moves the table allows.
for (const to of [DeliveryStatus.Sent, DeliveryStatus.Bounced, DeliveryStatus.Failed, DeliveryStatus.Queued]) {
  deliveryStatus.move(DeliveryStatus.Sending, to);
}

/**
 * Writes a batch's outcomes in one statement; only rows still under the claim that tried them
 * change (an outcome whose claim was taken over applies to nothing), and the rows that did
 * change come back to be recorded as events.
 */
export const RECORD_OUTCOMES_SQL = (claims: ClaimRef[]) => `
  UPDATE deliveries d SET
    status = CASE WHEN v.refund = 1 AND d.created_at < v.give_up_before THEN '${DeliveryStatus.Failed}' ELSE v.status END,
    sent_at = coalesce(v.sent_at, d.sent_at),
    message_id = coalesce(v.message_id, d.message_id),
    last_error = v.error,
    next_attempt_at = coalesce(v.retry_at, d.next_attempt_at),
    attempts = d.attempts - v.refund,
    locked_until = NULL
  FROM json_to_recordset(?::json)
    AS v(id bigint, user_id integer, attempts integer, status text, sent_at timestamptz, message_id text, error text, retry_at timestamptz, code integer,
         refund integer, route text, reason text, give_up_before timestamptz)
  WHERE d.id = v.id AND d.user_id = v.user_id AND ${fenceSql('d', FENCE, 'v.attempts')}${ofOneAccount('d', claims.map((c) => c.user_id))}
  RETURNING d.id, d.user_id, ${SOURCE_REF_COLUMNS.map((c) => `d.${c}`).join(', ')}, d.email, d.status, v.error,
    CASE WHEN v.refund = 1 AND d.status = '${DeliveryStatus.Failed}' THEN NULL ELSE v.code END AS code, v.route, v.reason`;

type Applied = SourceRefColumns & {
  id: string | number;
  user_id: number;
  email: string;
  status: SendOutcome['status'];
  error: string | null;
  code: number | null;
  route: string | null;
  reason: DeferReason | null;
};

/** What an applied outcome is as an event: SMTP accepted, will retry, or given up (5xx: hard; out of attempts: soft). */
function outcomeEvent(row: Applied): MessageEvent {
  const ref = { userId: row.user_id, deliveryId: Number(row.id), ...sourceRef(row), email: row.email };
  const route = row.route ? { route: row.route } : {};
  if (row.status === DeliveryStatus.Sent) return { ...ref, type: 'delivered', ...(row.route ? { data: { route: row.route } } : {}) };
  const diagnostic = row.error ?? '';
  const data = { status: enhancedStatus(diagnostic), smtp_code: row.code, diagnostic, source: 'smtp', ...route };
  if (row.status === DeliveryStatus.Queued) return { ...ref, type: 'deferred', data: row.reason ? { ...data, reason: row.reason } : data };
  return { ...ref, type: 'bounced', data: { kind: row.status === DeliveryStatus.Bounced ? 'hard' : 'soft', ...data } };
}

/**
 * What a batch's outcomes suppress (source smtp): an address a server refused outright (5xx, a
 * hard bounce) at once; one given up on after 4xx answers (a soft bounce) once it has had
 * SOFT_BOUNCE_LIMIT of them within SOFT_BOUNCE_DAYS. Rows given up on for other reasons (no
 * server answer, a send without its design) say nothing about the address.
 */
async function smtpSuppressions(trx: Knex.Transaction, applied: Applied[], policy: SoftBouncePolicy | undefined): Promise<Suppression[]> {
  const row = (r: Applied, reason: string): Suppression => ({
    userId: r.user_id,
    email: r.email,
    type: 'bounce',
    reason,
    diagnostic: r.error ?? '',
    source: 'smtp',
    deliveryId: Number(r.id),
    singleSendId: r.single_send_id,
    automationId: r.automation_id,
  });
  const out = applied.filter((r) => r.status === DeliveryStatus.Bounced).map((r) => row(r, 'hard bounce'));
  const soft = policy ? applied.filter((r) => r.status === DeliveryStatus.Failed && r.code !== null && r.code >= 400 && r.code < 500) : [];
  if (policy && soft.length) {
    const counts = await softBounceCounts(trx, policy.softBounceDays, soft.map((r) => ({ userId: r.user_id, email: r.email })));
    for (const r of soft) {
      const n = counts.get(`${r.user_id}:${r.email.toLowerCase()}`) ?? 0;
      if (n >= policy.softBounceLimit) out.push(row(r, `${n} soft bounces within ${policy.softBounceDays} days`));
    }
  }
  return out;
}

/** The soft-bounce rule (SOFT_BOUNCE_LIMIT soft bounces within SOFT_BOUNCE_DAYS suppress an address). */
export interface SoftBouncePolicy {
  softBounceLimit: number;
  softBounceDays: number;
}

/**
 * Records a batch's outcomes and their events (delivered, deferred, bounced) in one
 * transaction, so an outcome and its event are never one without the other. Returns how many
 * outcomes applied.
 */
export async function recordOutcomes(db: Knex, claims: ClaimRef[], outcomes: SendOutcome[], policy?: SoftBouncePolicy): Promise<number> {
  if (outcomes.length === 0) return 0;
  const values = outcomeValues(claims, outcomes);
  return db.transaction(async (trx) => {
    const result = await trx.raw(RECORD_OUTCOMES_SQL(claims), [JSON.stringify(values)]);
    const applied = result.rows as Applied[];
    await recordMessageEvents(trx, applied.map(outcomeEvent));
    await suppress(trx, await smtpSuppressions(trx, applied, policy));
    return applied.length;
  });
}

/** RECORD_OUTCOMES_SQL's parameter: one record per claimed row and its outcome (also bench/bookkeeping.ts). */
export function outcomeValues(claims: ClaimRef[], outcomes: SendOutcome[]) {
  // When the batch is recorded (Citus refuses now() inside the statement's COALESCE and CASE).
  const now = new Date().toISOString();
  const giveUpBefore = new Date(Date.now() - DEFERRED_LIFETIME_MS).toISOString();
  return outcomes.map((o, i) => ({
    id: claims[i].id,
    user_id: claims[i].user_id,
    attempts: claims[i].attempts,
    status: o.status,
    sent_at: o.status === DeliveryStatus.Sent ? now : null,
    message_id: o.status === DeliveryStatus.Sent ? o.messageId : null,
    error: o.status === DeliveryStatus.Sent ? null : o.error.slice(0, 1000),
    retry_at: o.status === DeliveryStatus.Queued ? o.retryAt.toISOString() : null,
    code: o.status === DeliveryStatus.Sent ? null : (o.code ?? null),
    // A deferral by the routes gives its claim's attempt back.
    refund: o.status === DeliveryStatus.Queued && o.reason ? 1 : 0,
    route: o.route ?? null,
    reason: o.status === DeliveryStatus.Queued ? (o.reason ?? null) : null,
    give_up_before: o.status === DeliveryStatus.Queued && o.reason ? giveUpBefore : null,
  }));
}
