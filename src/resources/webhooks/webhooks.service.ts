import type { Knex } from 'knex';
import type { Config } from '../../config';
import type { Ctx } from '../../context';
import { invalid, notFound1 } from '../../http/errors';
import { listRows, type Paging } from '../../http/pagination';
import { newestEventId } from '../../events/reads';
import { sendTestEvent } from '../../webhooks/dispatch';
import { newSecret } from '../../webhooks/signature';
import { RefusedTarget, resolveTarget } from '../../webhooks/ssrf';
import { dnsFor } from '../../dns';
import { WebhookActivity, WebhookBatchStatus, webhookBatchStatus } from '../../states';
import { deleteById, findOrFail, scoped } from '../shared/crud';
import type { WebhookBatchRecord, SaveWebhookInput, WebhookRecord } from './webhooks.schemas';

const WEBHOOKS = 'webhooks';
const BATCHES = 'webhook_deliveries';
const COLUMNS = ['id', 'url', 'event_types', 'description', 'is_active', 'failing_since', 'created_at', 'updated_at'].map(
  (c) => `${WEBHOOKS}.${c}`,
);
/** Deleting a webhook gives up its pending batches. */
const GIVE_UP = webhookBatchStatus.move(WebhookBatchStatus.Queued, WebhookBatchStatus.Failed);
/** Batches shown when no page is asked for: the newest. */
const DEFAULT_BATCHES = 100;

function liveWebhooks(ctx: Ctx, db: Knex = ctx.db): Knex.QueryBuilder {
  return scoped(ctx, WEBHOOKS, db).whereNull(`${WEBHOOKS}.deleted_at`);
}

/** The host must resolve to public addresses now (VAL otherwise); the worker checks again before each request. */
async function checkTarget(config: Config, url: string): Promise<void> {
  try {
    await resolveTarget(url, config.webhookAllowHosts, dnsFor(config));
  } catch (err) {
    if (err instanceof RefusedTarget) throw invalid({ url: [err.message.replace(':attribute', 'url')] });
    throw err;
  }
}

/**
 * Creates a webhook (answering its id and its secret, the only time the secret is shown) or,
 * with `id`, replaces one's settings. A new webhook starts after the account's latest event:
 * it gets what happens from now on. Turning a paused or disabled webhook back on clears its
 * failure clock; it then receives what it missed (its cursor stayed where it was).
 */
export async function saveWebhook(ctx: Ctx, config: Config, input: SaveWebhookInput): Promise<{ id: number; secret: string } | undefined> {
  await checkTarget(config, input.url);
  const fields = {
    url: input.url,
    event_types: input.event_types,
    description: input.description ?? '',
    is_active: input.is_active ?? WebhookActivity.Active,
  };
  if (input.id === undefined) {
    const secret = newSecret();
    // Read first, then insert: Citus takes no subquery in an INSERT's values. An event that
    // commits in between is one the new webhook delivers.
    const newest = await newestEventId(ctx.db, ctx.userId);
    const [row] = await ctx.db(WEBHOOKS)
      .insert({ user_id: ctx.userId, ...fields, secret, last_event_id: newest ?? 0 })
      .returning(['id']);
    return { id: row.id as number, secret };
  }
  await ctx.db.transaction(async (trx) => {
    const current = await liveWebhooks(ctx, trx).where(`${WEBHOOKS}.id`, input.id).forUpdate().first('is_active');
    if (!current) throw notFound1();
    const turnedOn = current.is_active === WebhookActivity.Inactive && fields.is_active === WebhookActivity.Active;
    await liveWebhooks(ctx, trx)
      .where(`${WEBHOOKS}.id`, input.id)
      .update({ ...fields, ...(turnedOn ? { failing_since: null } : {}), updated_at: trx.fn.now() });
    // Batches waiting out a long backoff go at once: the user says the endpoint works again.
    if (turnedOn) {
      await scoped(ctx, BATCHES, trx)
        .where({ webhook_id: input.id, status: WebhookBatchStatus.Queued })
        .where('next_attempt_at', '>', trx.fn.now())
        .update({ next_attempt_at: trx.fn.now() });
    }
  });
  return undefined;
}

export function listWebhooks(ctx: Ctx): Promise<WebhookRecord[]> {
  return liveWebhooks(ctx).select(COLUMNS).orderBy(`${WEBHOOKS}.id`, 'desc');
}

export function findWebhook(ctx: Ctx, id: number): Promise<WebhookRecord> {
  return findOrFail<WebhookRecord>(liveWebhooks(ctx).where(`${WEBHOOKS}.id`, id).select(COLUMNS), notFound1);
}

/** Soft delete: its batches stay readable in the database; those still pending are given up. */
export function deleteWebhook(ctx: Ctx, id: number): Promise<void> {
  return deleteById(ctx, WEBHOOKS, id, {
    notFound: notFound1,
    soft: true,
    after: async (trx, ids) => {
      await scoped(ctx, BATCHES, trx)
        .whereIn('webhook_id', ids)
        .whereIn('status', GIVE_UP.from)
        .update({ status: GIVE_UP.to, last_error: 'webhook deleted', updated_at: trx.fn.now() });
    },
  });
}

/** Sends a `webhook.test` event now and answers what the endpoint said. */
export async function testWebhook(ctx: Ctx, config: Config, id: number): Promise<{ status: number | null; error: string | null }> {
  const webhook = await findOrFail<{ id: number; url: string; secret: string }>(
    liveWebhooks(ctx).where(`${WEBHOOKS}.id`, id).select('id', 'url', 'secret'),
    notFound1,
  );
  const outcome = await sendTestEvent(config, webhook);
  return { status: outcome.status, error: outcome.error };
}

/** A webhook's batches, newest first (the newest 100 unless a page is asked for). */
export async function listBatches(ctx: Ctx, id: number, paging?: Paging) {
  await findWebhook(ctx, id);
  const base = scoped(ctx, BATCHES).where(`${BATCHES}.webhook_id`, id);
  const query = base
    .clone()
    .select(
      'id',
      'webhook_id',
      'msg_id',
      'type',
      'event_ids',
      'status',
      'last_status',
      'last_error',
      'attempt',
      'next_attempt_at',
      'created_at',
      'updated_at',
    )
    .orderBy('id', 'desc');
  const listed = await listRows<Record<string, unknown>>(paging ? query : query.limit(DEFAULT_BATCHES), base, paging);
  return {
    ...listed,
    rows: listed.rows.map(
      (r): WebhookBatchRecord => ({
        id: r.id as number,
        webhook_id: r.webhook_id as number,
        msg_id: r.msg_id as string,
        type: r.type as string,
        event_ids: (r.event_ids as Array<string | number>).map(Number),
        status: r.status as WebhookBatchRecord['status'],
        http_status: r.last_status as number | null,
        error: r.last_error as string | null,
        attempt: r.attempt as number,
        next_attempt_at: r.status === WebhookBatchStatus.Queued ? (r.next_attempt_at as string) : null,
        created_at: r.created_at as string,
        updated_at: r.updated_at as string,
      }),
    ),
  };
}
