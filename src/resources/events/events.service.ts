import type { Ctx } from '../../context';
import { notFound1 } from '../../http/errors';
import { isUtr } from '../../http/fields';
import type { EventsQuery } from './events.schemas';

/** The send or automation a utr names, of this account (deleted ones too: their events stay); NF1 otherwise. */
async function idOfUtr(ctx: Ctx, table: 'single_sends' | 'automations', utr: string): Promise<number> {
  if (!isUtr(utr)) throw notFound1();
  const row = await ctx.db(table).where({ user_id: ctx.userId, utr: utr.toLowerCase() }).first('id');
  if (!row) throw notFound1();
  return row.id as number;
}

/**
 * The account's events, oldest first by id (the order they were recorded: src/events/record.ts
 * makes ids visible in commit order), from after `cursor`. One row more than the page is read
 * to know whether a next page exists.
 */
export async function listEvents(ctx: Ctx, q: EventsQuery) {
  const limit = q.limit ?? 100;
  const query = ctx
    .db('events as e')
    .leftJoin('single_sends as s', (j) => j.on('s.id', 'e.single_send_id').andOn('s.user_id', 'e.user_id'))
    .leftJoin('automations as a', (j) => j.on('a.id', 'e.automation_id').andOn('a.user_id', 'e.user_id'))
    .where('e.user_id', ctx.userId)
    .orderBy('e.id')
    .limit(limit + 1)
    .select('e.id', 'e.type', 'e.email', 's.utr as single_send_utr', 'a.utr as automation_utr', 'e.occurred_at', 'e.data');
  if (q.type?.length) query.whereIn('e.type', q.type);
  if (q.email !== undefined) query.where('e.email', q.email.toLowerCase());
  if (q.single_send_utr !== undefined) query.where('e.single_send_id', await idOfUtr(ctx, 'single_sends', q.single_send_utr));
  if (q.automation_utr !== undefined) query.where('e.automation_id', await idOfUtr(ctx, 'automations', q.automation_utr));
  if (q.since !== undefined) query.where('e.occurred_at', '>=', new Date(q.since));
  if (q.until !== undefined) query.where('e.occurred_at', '<', new Date(q.until));
  if (q.cursor !== undefined) query.where('e.id', '>', q.cursor);
  const rows = (await query) as Array<{
    id: number;
    type: string;
    email: string | null;
    single_send_utr: string | null;
    automation_utr: string | null;
    occurred_at: string;
    data: Record<string, unknown>;
  }>;
  const page = rows.slice(0, limit);
  return {
    events: page,
    next_cursor: rows.length > limit ? String(page[page.length - 1].id) : null,
  };
}

const NEW_COUNTERS = ['deferred', 'dropped', 'bounced_hard', 'bounced_soft', 'unique_clicks', 'total_clicks', 'complaints'] as const;
const SPEC_COUNTERS = {
  single_sends: ['triggered', 'delivered', 'unique_opens', 'total_opens', 'bounces', 'unsubscribes'],
  automations: ['total_triggered', 'total_delivered', 'total_unique_opens', 'total_opens', 'total_bounces', 'total_unsubscribe'],
} as const;

/**
 * GET /single/send/stats and /automations/stats: the spec's counters under their spec names,
 * the counters kept only from events (src/events/statistics.ts), every tracked link (in the order
 * the design first had them; unclicked ones with zeros) and the hourly timeline.
 */
export async function messageStats(ctx: Ctx, table: 'single_sends' | 'automations', utr: string) {
  if (!isUtr(utr)) throw notFound1();
  const row = await ctx
    .db(table)
    .where({ user_id: ctx.userId, utr: utr.toLowerCase() })
    .whereNull('deleted_at')
    .first('id', 'utr', ...SPEC_COUNTERS[table], ...NEW_COUNTERS);
  if (!row) throw notFound1();
  const owner = table === 'single_sends' ? 'single_send' : 'automation';
  const timeline = (await ctx
    .db('message_stats_hourly')
    .where({ user_id: ctx.userId, owner_type: owner, owner_id: row.id })
    .orderBy('hour')
    .select('hour', 'delivered', 'opens', 'clicks', 'unsubscribes')) as Array<{ hour: string; delivered: number; opens: number; clicks: number; unsubscribes: number }>;
  const links = (await ctx
    .db('tracked_links')
    .where({ user_id: ctx.userId, [table === 'single_sends' ? 'single_send_id' : 'automation_id']: row.id })
    .orderBy('id')
    .select('url', 'unique_clicks', 'total_clicks')) as Array<{ url: string; unique_clicks: number; total_clicks: number }>;
  const { id: _id, ...counters } = row;
  return { ...counters, links, timeline };
}
