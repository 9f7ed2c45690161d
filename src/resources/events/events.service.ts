import type { Ctx } from '../../context';
import { notFound1 } from '../../http/errors';
import { eventsOf, findOwner, UTR_COLUMNS, utrJoins, type NamedOwnerKind } from '../../sources';
import type { EventsQuery } from './events.schemas';

/** The events of the send or automation a utr names, of this account (deleted ones too: their events stay); NF1 otherwise. */
async function eventsOfUtr(ctx: Ctx, kind: NamedOwnerKind, utr: string): Promise<Record<string, number>> {
  const found = await findOwner(ctx.db, ctx.userId, kind, utr, { deleted: true });
  if (!found) throw notFound1();
  return eventsOf({ kind, id: found.id });
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
    .joinRaw(utrJoins('e', 'e.user_id'))
    .where('e.user_id', ctx.userId)
    .orderBy('e.id')
    .limit(limit + 1)
    .select('e.id', 'e.type', 'e.email', ...UTR_COLUMNS, 'e.occurred_at', 'e.data');
  if (q.type?.length) query.whereIn('e.type', q.type);
  if (q.email !== undefined) query.where('e.email', q.email.toLowerCase());
  if (q.single_send_utr !== undefined) query.where(await eventsOfUtr(ctx, 'single_send', q.single_send_utr));
  if (q.automation_utr !== undefined) query.where(await eventsOfUtr(ctx, 'automation', q.automation_utr));
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
