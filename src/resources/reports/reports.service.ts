import type { Ctx } from '../../context';
import { notFound1 } from '../../http/errors';
import { findOwner, OWNERS, type NamedOwnerKind } from '../../sources';
import { abReport } from '../../ab/report';
import { SendStatus } from '../../states';
import { COUNTERS, readCounters, readLinks, readSeries } from '../../statistics';

/**
 * GET /single/send/stats and /automations/stats: an owner's counters (src/statistics) under the
 * column names its resource has in the spec (`delivered` / `total_delivered`, …) followed by
 * Herald's own, every tracked link, and the hourly timeline of the hours in which something it
 * shows (deliveries, opens, clicks, unsubscribes) happened. A deleted send or automation is not
 * found.
 */
export async function ownerStats(ctx: Ctx, kind: NamedOwnerKind, utr: string) {
  const found = await findOwner(ctx.db, ctx.userId, kind, utr);
  if (!found) throw notFound1();
  const owner = { kind, id: found.id };
  const counts = (await readCounters(ctx.db, ctx.userId, kind, [found.id])).get(found.id);
  if (!counts) throw notFound1();
  const named = Object.fromEntries(COUNTERS.map((c) => [OWNERS[kind].counters[c], counts[c]]));
  const timeline = (await readSeries(ctx.db, ctx.userId, { owner, bucket: 'hour' }))
    .map((h) => ({ hour: h.at, delivered: h.delivered, opens: h.opens, clicks: h.total_clicks, unsubscribes: h.unsubscribes }))
    .filter((h) => h.delivered + h.opens + h.clicks + h.unsubscribes > 0);
  const links = await readLinks(ctx.db, ctx.userId, owner);
  if (kind !== 'single_send') return { utr: found.utr, ...named, links, timeline };
  // An A/B send adds its test (src/ab/report.ts); a design test's links are its variations'.
  const send = await ctx.db('single_sends').where({ id: found.id, user_id: ctx.userId }).first('status');
  const ab = await abReport(ctx.db, ctx.userId, found.id, { counts, completed: send?.status === SendStatus.Completed });
  return ab ? { utr: found.utr, ...named, links: ab.links ?? links, timeline, ab: ab.ab } : { utr: found.utr, ...named, links, timeline };
}
