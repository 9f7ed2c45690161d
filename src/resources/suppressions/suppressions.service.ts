import type { Ctx } from '../../context';
import { notFound1 } from '../../http/errors';
import { listRows, type Paging } from '../../http/pagination';
import { UTR_COLUMNS, utrJoins } from '../../sources';
import { liftSuppressions, suppress } from '../../suppression';
import type { ListSuppressionsQuery } from './suppressions.schemas';

/**
 * The account's suppressions, newest first, with the send or automation each came from. Each
 * joined table and the subquery name the account as a value: Citus routes a query to one node
 * only when every table in it is filtered by the account itself (an outer join or a correlated
 * subquery does not pass x.user_id's value on).
 */
export function listSuppressions(ctx: Ctx, q: ListSuppressionsQuery, paging?: Paging) {
  const base = ctx.db('suppressions as x').where('x.user_id', ctx.userId);
  if (q.type !== undefined) base.where('x.type', q.type);
  if (q.email !== undefined) base.whereRaw('lower(x.email) = lower(?)', [q.email]);
  const query = base
    .clone()
    .joinRaw(utrJoins('x', ctx.userId))
    .orderBy('x.id', 'desc')
    .select(
      'x.id',
      'x.email',
      'x.type',
      'x.reason',
      'x.diagnostic',
      'x.source',
      ...UTR_COLUMNS,
      'x.created_at',
      ctx.db.raw(
        `CASE WHEN EXISTS (SELECT 1 FROM bounce_reports r WHERE r.user_id = ? AND r.id = x.report_id AND r.raw IS NOT NULL) THEN 1 ELSE 0 END AS has_message`,
        [ctx.userId],
      ),
    );
  return listRows(query, base, paging);
}

/** The report kept for a suppression; NF1 for another account's, an unknown one, or one without a kept report. */
export async function suppressionMessage(ctx: Ctx, id: number): Promise<{ raw: string }> {
  const row = (await ctx
    .db('suppressions as x')
    .join('bounce_reports as r', (j) => j.on('r.id', 'x.report_id').andOn('r.user_id', 'x.user_id'))
    .where({ 'x.id': id, 'x.user_id': ctx.userId })
    .whereNotNull('r.raw')
    .first('r.raw')) as { raw: Buffer } | undefined;
  if (!row) throw notFound1();
  return { raw: row.raw.toString('utf8') };
}

/** Manual suppressions (source api); addresses already suppressed keep their entry. */
export async function addSuppressions(ctx: Ctx, emails: string[]): Promise<void> {
  await suppress(
    ctx.db,
    emails.map((email) => ({ userId: ctx.userId, email, type: 'manual' as const, reason: 'added by API', diagnostic: '', source: 'api' as const })),
  );
}

/** Lifts suppressions; addresses not suppressed are ignored. */
export async function deleteSuppressions(ctx: Ctx, emails: string[]): Promise<void> {
  await liftSuppressions(ctx.db, ctx.userId, emails);
}
