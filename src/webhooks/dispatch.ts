import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { recordAccountEvent } from '../events/account-events';
import { dnsFor } from '../dns';
import { postWebhook, type PostOutcome } from './http-post';
import { signedHeaders } from './signature';

/**
 * Webhook delivery, done by the worker (docs/decisions.md, "Webhooks"), in two steps whose state
 * is all in PostgreSQL:
 *
 * 1. Batching: an active endpoint follows its account's events by id from its cursor. Events of
 *    one type (≤ 500) become one `webhook_deliveries` row with its body fixed and a `msg_id`, and
 *    the cursor moves past them, in one transaction that holds the endpoint's row (SKIP LOCKED:
 *    two workers never batch the same events). Ids of one account become visible in id order
 *    (src/events/record.ts), so nothing behind the cursor can still appear.
 * 2. Sending: due rows are claimed like recipient rows and outbox jobs — `FOR UPDATE SKIP LOCKED`,
 *    a lease (`next_attempt_at` moved past the attempt's deadline), the claim named by its attempt
 *    number. A worker killed mid-request leaves the row claimed until its lease ends; then another
 *    attempt sends the same body with the same `webhook-id` (at-least-once).
 */
export interface WebhookDeps {
  db: Knex;
  config: Config;
  logger: Logger;
}

/** Events per request (issue 11: a million-recipient send must not cost a million requests). */
export const BATCH_SIZE = 500;
/** Events one batching round reads per endpoint. */
const SCAN_LIMIT = 5000;
/** Endpoints batched per round. */
const ENDPOINTS_PER_ROUND = 20;
/** Retry delays double from WEBHOOK_RETRY_BASE_MS up to this. */
const MAX_DELAY_MS = 8 * 3600_000;

/** An ISO 8601 UTC timestamp with microseconds, as the API writes them. */
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * The events after the cursor that the endpoint wants, cut into batches of one type, each a
 * delivery row whose body presents the events as GET /events does (the send's and the
 * automation's utr instead of internal ids).
 */
const BATCH_SQL = `
  WITH ev AS (
    SELECT e.id, e.type, e.email, e.single_send_id, e.automation_id, e.occurred_at, e.data
    FROM events e
    WHERE e.user_id = :userId AND e.id > :cursor
      AND (cardinality(:types::text[]) = 0 OR e.type = ANY(:types::text[]))
    ORDER BY e.id
    LIMIT :scan
  ), chunked AS (
    SELECT ev.*, (row_number() OVER (PARTITION BY ev.type ORDER BY ev.id) - 1) / :batch AS chunk FROM ev
  ), batches AS (
    SELECT c.type, min(c.id) AS first_id, array_agg(c.id ORDER BY c.id) AS ids,
           jsonb_agg(jsonb_build_object(
             'id', c.id, 'type', c.type, 'email', c.email, 'single_send_utr', s.utr, 'automation_utr', a.utr,
             'occurred_at', to_char(c.occurred_at AT TIME ZONE 'UTC', ${ISO}), 'data', c.data) ORDER BY c.id) AS events
    FROM chunked c
    LEFT JOIN single_sends s ON s.user_id = :userId AND s.id = c.single_send_id
    LEFT JOIN automations a ON a.user_id = :userId AND a.id = c.automation_id
    GROUP BY c.type, c.chunk
  ), inserted AS (
    INSERT INTO webhook_deliveries (user_id, webhook_id, msg_id, type, event_ids, payload)
    SELECT :userId, :webhookId, 'msg_' || replace(gen_random_uuid()::text, '-', ''), b.type, b.ids,
           jsonb_build_object('type', b.type, 'timestamp', to_char(now() AT TIME ZONE 'UTC', ${ISO}),
                              'data', jsonb_build_object('events', b.events))
    FROM batches b ORDER BY b.first_id
    RETURNING 1
  )
  SELECT (SELECT count(*)::int FROM inserted) AS batches, (SELECT max(id) FROM ev) AS last_id`;

/** One active endpoint with events it has not had yet, held for this transaction. */
const PICK_SQL = `
  SELECT w.user_id, w.id, w.last_event_id, w.event_types FROM webhooks w
  WHERE w.is_active = 1 AND w.deleted_at IS NULL
    AND EXISTS (
      SELECT 1 FROM events e
      WHERE e.user_id = w.user_id AND e.id > w.last_event_id
        AND (cardinality(w.event_types) = 0 OR e.type = ANY(w.event_types)))
  LIMIT 1
  FOR UPDATE OF w SKIP LOCKED`;

/** Turns new events into delivery rows. Returns how many batches were made. */
export async function batchEvents(db: Knex): Promise<number> {
  let made = 0;
  for (let i = 0; i < ENDPOINTS_PER_ROUND; i += 1) {
    const done = await db.transaction(async (trx) => {
      const { rows } = await trx.raw(PICK_SQL);
      const w = rows[0] as { user_id: number; id: number; last_event_id: string; event_types: string[] } | undefined;
      if (!w) return undefined;
      const { rows: out } = await trx.raw(BATCH_SQL, {
        userId: w.user_id,
        webhookId: w.id,
        cursor: w.last_event_id,
        types: w.event_types,
        scan: SCAN_LIMIT,
        batch: BATCH_SIZE,
      });
      const { batches, last_id: lastId } = out[0] as { batches: number; last_id: string | null };
      if (lastId !== null) await trx('webhooks').where({ user_id: w.user_id, id: w.id }).update({ last_event_id: lastId });
      return batches;
    });
    if (done === undefined) break;
    made += done;
  }
  return made;
}

interface Claimed {
  user_id: number;
  id: string;
  webhook_id: number;
  msg_id: string;
  body: string;
  attempt: number;
  url: string;
  secret: string;
}

/** The lease of one attempt: longer than its deadline (lookup, connect, answer) can take. */
export function leaseMs(config: Config): number {
  return config.webhookTimeoutMs * 3 + 5000;
}

export async function claimDeliveries(db: Knex, limit: number, lease: number): Promise<Claimed[]> {
  const { rows } = await db.raw(
    `UPDATE webhook_deliveries d
     SET attempt = d.attempt + 1, next_attempt_at = now() + ? * interval '1 millisecond', updated_at = now()
     FROM (
       SELECT d.user_id, d.id, w.url, w.secret
       FROM webhook_deliveries d
       JOIN webhooks w ON w.user_id = d.user_id AND w.id = d.webhook_id
       WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND w.is_active = 1 AND w.deleted_at IS NULL
       ORDER BY d.next_attempt_at
       LIMIT ?
       FOR UPDATE OF d SKIP LOCKED
     ) p
     WHERE d.user_id = p.user_id AND d.id = p.id
     RETURNING d.user_id, d.id, d.webhook_id, d.msg_id, d.payload::text AS body, d.attempt, p.url, p.secret`,
    [lease, limit],
  );
  return rows as Claimed[];
}

/** Sends one claimed batch and writes what became of it. */
async function attempt(deps: WebhookDeps, d: Claimed): Promise<void> {
  const { config } = deps;
  const outcome = await postWebhook(d.url, d.body, signedHeaders(d.secret, d.msg_id, d.body), {
    allowHosts: config.webhookAllowHosts,
    dns: dnsFor(config),
    timeoutMs: config.webhookTimeoutMs,
  });
  await recordOutcome(deps, d, outcome);
}

async function recordOutcome(deps: WebhookDeps, d: Claimed, outcome: PostOutcome): Promise<void> {
  const { db, config } = deps;
  const gaveUp = !outcome.ok && d.attempt >= config.webhookMaxAttempts;
  const delay = Math.min(MAX_DELAY_MS, config.webhookRetryBaseMs * 2 ** (d.attempt - 1));
  await db.transaction(async (trx) => {
    // Named by the attempt: a worker whose lease ran out cannot overwrite the newer attempt.
    const changed = await trx('webhook_deliveries')
      .where({ user_id: d.user_id, id: d.id, attempt: d.attempt, status: 'pending' })
      .update({
        status: outcome.ok ? 'delivered' : gaveUp ? 'failed' : 'pending',
        last_status: outcome.status,
        last_error: outcome.error?.slice(0, 2000) ?? null,
        next_attempt_at: outcome.ok || gaveUp ? trx.fn.now() : trx.raw("now() + ? * interval '1 millisecond'", [delay]),
        updated_at: trx.fn.now(),
      });
    if (!changed) return;
    const endpoint = trx('webhooks').where({ user_id: d.user_id, id: d.webhook_id });
    if (outcome.ok) {
      await endpoint.clone().whereNotNull('failing_since').update({ failing_since: null });
      return;
    }
    await endpoint.clone().whereNull('failing_since').update({ failing_since: trx.fn.now() });
    await disableIfFailingTooLong(deps, trx, d);
  });
  if (!outcome.ok) deps.logger.warn({ webhook: d.webhook_id, delivery: d.id, attempt: d.attempt, error: outcome.error }, 'webhook attempt failed');
}

/** An endpoint that failed every attempt for WEBHOOK_DISABLE_AFTER_HOURS is disabled, with an account event. */
async function disableIfFailingTooLong(deps: WebhookDeps, trx: Knex.Transaction, d: Claimed): Promise<void> {
  const [disabled] = await trx('webhooks')
    .where({ user_id: d.user_id, id: d.webhook_id, is_active: 1 })
    .whereNull('deleted_at')
    .where('failing_since', '<=', trx.raw("now() - ? * interval '1 hour'", [deps.config.webhookDisableAfterHours]))
    .update({ is_active: 0, updated_at: trx.fn.now() })
    .returning(['id', 'url', 'failing_since']);
  if (!disabled) return;
  await recordAccountEvent({ db: trx }, d.user_id, 'webhook.disabled', 'Webhook disabled', {
    webhook_id: disabled.id,
    url: disabled.url,
    failing_since: String(disabled.failing_since),
    hours: deps.config.webhookDisableAfterHours,
  });
  deps.logger.warn({ webhook: d.webhook_id }, 'webhook disabled: failing for too long');
}

/**
 * One round: batches new events, then claims due deliveries (WEBHOOK_CONCURRENCY) and sends
 * them side by side. Returns how much was done (0: nothing due).
 */
export async function runWebhooks(deps: WebhookDeps): Promise<number> {
  const made = await batchEvents(deps.db);
  const claimed = await claimDeliveries(deps.db, deps.config.webhookConcurrency, leaseMs(deps.config));
  await Promise.all(
    claimed.map((d) =>
      attempt(deps, d).catch((err) => deps.logger.warn({ err, delivery: d.id }, 'webhook attempt failed; retried after its lease')),
    ),
  );
  return made + claimed.length;
}

/**
 * Finished batches older than EVENTS_RETENTION_DAYS go with the events they carried (the worker
 * runs this hourly); pending ones stay whatever their age. Returns how many went.
 */
export async function purgeDeliveries(db: Knex, days: number): Promise<number> {
  const { rowCount } = await db.raw(
    `DELETE FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < now() - ? * interval '1 day'`,
    [days],
  );
  return rowCount ?? 0;
}

/**
 * POST /webhooks/test: one `webhook.test` event sent now, within the request (the caller waits
 * for the endpoint's answer), signed like every delivery; nothing is stored or retried.
 */
export async function sendTestEvent(
  config: Config,
  webhook: { id: number; url: string; secret: string },
): Promise<PostOutcome> {
  const now = new Date().toISOString().replace(/Z$/, '000Z');
  const body = JSON.stringify({
    type: 'webhook.test',
    timestamp: now,
    data: {
      events: [
        { id: null, type: 'webhook.test', email: null, single_send_utr: null, automation_utr: null, occurred_at: now, data: { webhook_id: webhook.id } },
      ],
    },
  });
  const msgId = `msg_test_${randomBytes(12).toString('hex')}`;
  return postWebhook(webhook.url, body, signedHeaders(webhook.secret, msgId, body), {
    allowHosts: config.webhookAllowHosts,
    dns: dnsFor(config),
    timeoutMs: config.webhookTimeoutMs,
  });
}
