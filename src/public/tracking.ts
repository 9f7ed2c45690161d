import type { Express } from 'express';
import type { Knex } from 'knex';
import type { Deps } from '../context';
import { recordMessageEvents } from '../events/record';
import { recipientCondition } from './recipient';

/** The smallest transparent GIF (43 bytes). */
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * Records an `opened` event: every load is one (total opens); the statistics count the first
 * per recipient as a unique open. Returns false for a token that is not ours.
 */
export async function recordOpen(db: Knex, token: string): Promise<boolean> {
  const recipient = await recipientCondition(db, token);
  if (!recipient) return false;
  const row = await recipient(db('deliveries')).first('id', 'user_id', 'single_send_id', 'automation_id', 'email');
  if (!row) return false;
  await db.transaction((trx) =>
    recordMessageEvents(trx, [
      {
        type: 'opened',
        userId: row.user_id,
        deliveryId: Number(row.id),
        singleSendId: row.single_send_id,
        automationId: row.automation_id,
        email: row.email,
      },
    ]),
  );
  return true;
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
