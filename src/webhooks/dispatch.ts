import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { recordAccountEvent } from '../events/account-events';
import { EVENTS_AFTER, EVENTS_AFTER_CURSOR } from '../events/reads';
import { dnsFor } from '../dns';
import { claimPerAccount, ofAccount } from '../db/per-account';
import { runDueJobs, type JobKind, type JobOutcome } from '../jobs/runner';
import { jobTable, type Claimed } from '../jobs/table';
import { UTR_FIELDS, utrJoins } from '../sources';
import { WebhookActivity, webhookActivity, webhookBatchStatus } from '../states';
import { postWebhook, type PostOutcome } from './http-post';
import { signedHeaders } from './signature';

/**
 * Webhook delivery, done by the worker's webhooks loop (docs/decisions.md, "Webhooks"), in two
 * steps whose state is all in PostgreSQL:
 *
 * 1. Batching: an active endpoint follows its account's events by id from its cursor. Events of
 *    one type (≤ 500) become one webhook batch — a `webhook_deliveries` row with its body fixed
 *    and a `msg_id` — and the cursor moves past them, in one transaction that holds the
 *    endpoint's row (SKIP LOCKED: two workers never batch the same events). Ids of one account
 *    become visible in id order (src/events/record.ts), so nothing behind the cursor can still appear.
 * 2. Sending: webhook batches are jobs of the job runner (src/jobs): claimed with `FOR UPDATE SKIP
 *    LOCKED` under a lease longer than an attempt's deadline, fenced by the attempt number, retried
 *    with backoff. A worker killed mid-request leaves the batch claimed until its lease ends; then
 *    another attempt sends the same body with the same `webhook-id` (at-least-once).
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

/** An ISO 8601 UTC timestamp with microseconds, as the API writes them. */
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * The events after the cursor that the endpoint wants, cut into batches of one type, each a
 * `webhook_deliveries` row whose body presents the events as GET /events does (the send's and
 * the automation's utr instead of internal ids).
 */
const BATCH_SQL = `
  WITH ev AS (
    ${EVENTS_AFTER_CURSOR}
  ), chunked AS (
    SELECT ev.*, (row_number() OVER (PARTITION BY ev.type ORDER BY ev.id) - 1) / :batch AS chunk FROM ev
  ), batches AS (
    SELECT c.type, min(c.id) AS first_id, array_agg(c.id ORDER BY c.id) AS ids,
           jsonb_agg(jsonb_build_object(
             'id', c.id, 'type', c.type, 'email', c.email, ${UTR_FIELDS.map((f) => `'${f.name}', ${f.sql}`).join(', ')},
             'occurred_at', to_char(c.occurred_at AT TIME ZONE 'UTC', ${ISO}), 'data', c.data) ORDER BY c.id) AS events
    FROM chunked c
    ${utrJoins('c', ':userId')}
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

/**
 * Active endpoints with events they have not had yet (`account` names the endpoint's account in
 * the events' subquery: `w.user_id`, or on Citus the account as a value, so that every table is
 * named with it).
 */
const WANTING = (account: string) => `w.is_active = ${webhookActivity.sql.Active} AND w.deleted_at IS NULL
    AND ${EVENTS_AFTER(account, 'w.last_event_id', 'w.event_types')}`;

/** One such endpoint (of account `userId` when given), held for this transaction. */
const PICK_SQL = (userId: number | undefined) => `
  SELECT w.user_id, w.id, w.last_event_id, w.event_types FROM webhooks w
  WHERE ${WANTING(userId === undefined ? 'w.user_id' : String(userId))}${ofAccount('w.user_id', userId)}
  LIMIT 1
  FOR UPDATE OF w SKIP LOCKED`;

/**
 * Turns new events into webhook batches, for up to ENDPOINTS_PER_ROUND endpoints; on Citus one
 * account's endpoints at a time, the accounts whose endpoints are furthest behind first
 * (src/db/per-account.ts). Returns how many batches were made.
 */
export async function batchEvents(db: Knex): Promise<number> {
  let made = 0;
  const wanting = { from: 'webhooks w', where: WANTING('w.user_id'), account: 'w.user_id', due: 'w.last_event_id' };
  await claimPerAccount(db, wanting, ENDPOINTS_PER_ROUND, async (userId, endpoints) => {
    let picked = 0;
    while (picked < endpoints) {
      const batches = await batchOne(db, userId);
      if (batches === undefined) break;
      picked += 1;
      made += batches;
    }
    return picked;
  });
  return made;
}

/** Batches one endpoint's new events (of account `userId` when given). Returns the batches made, or undefined when no endpoint wanted any. */
async function batchOne(db: Knex, userId: number | undefined): Promise<number | undefined> {
  return db.transaction(async (trx) => {
    const { rows } = await trx.raw(PICK_SQL(userId));
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
}

/** What a claimed webhook batch carries: its endpoint, its `webhook-id` and its fixed body. */
interface WebhookBatch {
  webhook_id: number;
  msg_id: string;
  body: string;
}

/** The lease of one attempt: longer than its deadline (lookup, connect, answer) can take. */
function leaseMs(config: Config): number {
  return config.webhookTimeoutMs * 3 + 5000;
}

/** The worker disables an endpoint that has failed for too long. */
const DISABLE = webhookActivity.move(WebhookActivity.Active, WebhookActivity.Inactive);

const WEBHOOK_BATCHES = jobTable({
  name: 'webhook_deliveries',
  states: webhookBatchStatus,
  attempts: 'attempt',
  returning: 'j.webhook_id, j.msg_id, j.payload::text AS body',
  // A paused, disabled or deleted endpoint's batches wait (turned on again, it gets them).
  claimable: (account) =>
    `EXISTS (SELECT 1 FROM webhooks w WHERE w.user_id = ${account} AND w.id = j.webhook_id AND w.is_active = ${webhookActivity.sql.Active} AND w.deleted_at IS NULL)`,
  touched: 'updated_at',
  lastError: 'last_error',
});

/** Sends one claimed batch, signed, to the address its endpoint's URL resolves to now. */
async function sendBatch(deps: WebhookDeps, batch: Claimed<WebhookBatch>): Promise<JobOutcome> {
  const { config } = deps;
  const endpoint = await deps.db('webhooks').where({ user_id: batch.user_id, id: batch.webhook_id }).first('url', 'secret');
  if (!endpoint) return { ok: false, permanent: true, error: 'webhook deleted' };
  const outcome = await postWebhook(endpoint.url, batch.body, signedHeaders(endpoint.secret, batch.msg_id, batch.body), {
    allowHosts: config.webhookAllowHosts,
    dns: dnsFor(config),
    timeoutMs: config.webhookTimeoutMs,
  });
  const set = { last_status: outcome.status };
  if (outcome.ok) return { ok: true, set };
  deps.logger.warn({ webhook: batch.webhook_id, batch: batch.id, attempt: batch.attempts, error: outcome.error }, 'webhook attempt failed');
  return { ok: false, error: outcome.error ?? `HTTP ${outcome.status}`, set };
}

/**
 * In the transaction of the batch's outcome: `failing_since` is set by a failure and cleared by
 * a success, and an endpoint failing for too long is disabled.
 */
async function trackEndpoint(trx: Knex.Transaction, deps: WebhookDeps, batch: Claimed<WebhookBatch>, outcome: JobOutcome): Promise<void> {
  const endpoint = trx('webhooks').where({ user_id: batch.user_id, id: batch.webhook_id });
  if (outcome.ok) {
    await endpoint.clone().whereNotNull('failing_since').update({ failing_since: null });
    return;
  }
  await endpoint.clone().whereNull('failing_since').update({ failing_since: trx.fn.now() });
  await disableIfFailingTooLong(deps, trx, batch);
}

/** An endpoint that failed every attempt for WEBHOOK_DISABLE_AFTER_HOURS is disabled, with an account event. */
async function disableIfFailingTooLong(deps: WebhookDeps, trx: Knex.Transaction, batch: Claimed<WebhookBatch>): Promise<void> {
  const [disabled] = await trx('webhooks')
    .where({ user_id: batch.user_id, id: batch.webhook_id })
    .whereIn('is_active', DISABLE.from)
    .whereNull('deleted_at')
    .where('failing_since', '<=', trx.raw("now() - ? * interval '1 hour'", [deps.config.webhookDisableAfterHours]))
    .update({ is_active: DISABLE.to, updated_at: trx.fn.now() })
    .returning(['id', 'url', 'failing_since']);
  if (!disabled) return;
  await recordAccountEvent({ db: trx }, batch.user_id, 'webhook.disabled', 'Webhook disabled', {
    webhook_id: disabled.id,
    url: disabled.url,
    failing_since: String(disabled.failing_since),
    hours: deps.config.webhookDisableAfterHours,
  });
  deps.logger.warn({ webhook: batch.webhook_id }, 'webhook disabled: failing for too long');
}

/** Webhook batches on the job runner: WEBHOOK_CONCURRENCY requests side by side per worker. */
export const webhookBatches: JobKind<WebhookBatch, WebhookDeps> = {
  name: 'webhook_batch',
  table: WEBHOOK_BATCHES,
  settings: (config) => ({
    maxAttempts: config.webhookMaxAttempts,
    retryBaseMs: config.webhookRetryBaseMs,
    retryMaxMs: 8 * 3600_000,
    leaseMs: leaseMs(config),
    concurrency: config.webhookConcurrency,
  }),
  handle: sendBatch,
  recorded: trackEndpoint,
};

/**
 * One round of the webhooks loop: batches new events, then sends the due batches. Returns how
 * much was done (0: nothing).
 */
export async function runWebhooks(deps: WebhookDeps): Promise<number> {
  return (await batchEvents(deps.db)) + (await runDueJobs(webhookBatches, deps));
}

/**
 * POST /webhooks/test: one `webhook.test` event sent now, within the request (the caller waits
 * for the endpoint's answer), signed like every batch; nothing is stored or retried.
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
