import type { Ctx } from '../../context';
import { notFound1 } from '../../http/errors';
import { eventsPage } from '../../events/reads';
import { findOwner, type NamedOwnerKind, type Owner } from '../../sources';
import type { EventsQuery } from './events.schemas';

/** The send or automation a utr names, of this account (deleted ones too: their events stay); NF1 otherwise. */
async function ownerOfUtr(ctx: Ctx, kind: NamedOwnerKind, utr: string): Promise<Owner> {
  const found = await findOwner(ctx.db, ctx.userId, kind, utr, { deleted: true });
  if (!found) throw notFound1();
  return { kind, id: found.id };
}

/**
 * The account's events, oldest first by id (the order they were recorded: src/events/record.ts
 * makes ids visible in commit order), from after `cursor`. One row more than the page is read
 * to know whether a next page exists.
 */
export async function listEvents(ctx: Ctx, q: EventsQuery) {
  const limit = q.limit ?? 100;
  const of: Owner[] = [];
  if (q.single_send_utr !== undefined) of.push(await ownerOfUtr(ctx, 'single_send', q.single_send_utr));
  if (q.automation_utr !== undefined) of.push(await ownerOfUtr(ctx, 'automation', q.automation_utr));
  const rows = await eventsPage(ctx.db, ctx.userId, { ...q, limit: limit + 1, of });
  const page = rows.slice(0, limit);
  return {
    events: page,
    next_cursor: rows.length > limit ? String(page[page.length - 1].id) : null,
  };
}
