import type { Express } from 'express';
import type { Knex } from 'knex';
import type { Deps } from '../context';
import { recipientCondition } from './recipient';

/** The smallest transparent GIF (43 bytes). */
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * Counts an open: every load adds to total opens, the first one per recipient to unique
 * opens. Returns false for a token that is not ours.
 */
export async function recordOpen(db: Knex, token: string): Promise<boolean> {
  const recipient = await recipientCondition(db, token);
  if (!recipient) return false;
  return db.transaction(async (trx) => {
    const row = await recipient(trx('deliveries'))
      .update({ open_count: trx.raw('open_count + 1'), opened_at: trx.raw('coalesce(opened_at, now())') })
      .returning(['single_send_id', 'automation_id', 'open_count']);
    if (row.length === 0) return false;
    const { single_send_id: sendId, automation_id: automationId, open_count: count } = row[0];
    const unique = count === 1 ? 1 : 0;
    if (sendId) {
      await trx('single_sends')
        .where({ id: sendId })
        .update({ total_opens: trx.raw('total_opens + 1'), unique_opens: trx.raw('unique_opens + ?', [unique]) });
    } else if (automationId) {
      await trx('automations')
        .where({ id: automationId })
        .update({ total_opens: trx.raw('total_opens + 1'), total_unique_opens: trx.raw('total_unique_opens + ?', [unique]) });
    }
    return true;
  });
}

/** GET /t/open/<token>.gif: always the GIF (also for unknown tokens or a failing database). */
export function mountTracking(app: Express, deps: Deps): void {
  app.get('/t/open/:file', async (req, res) => {
    const token = String(req.params.file).replace(/\.gif$/i, '');
    await recordOpen(deps.db, token).catch((err) => req.log?.warn({ err }, 'open not recorded'));
    res
      .status(200)
      .set({ 'Content-Type': 'image/gif', 'Cache-Control': 'no-store, no-cache, must-revalidate, private', Expires: '0' })
      .end(GIF);
  });
}
