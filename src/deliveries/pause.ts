import type { Knex } from 'knex';
import { deliveryStatus } from '../states';

/**
 * A paused single send's queued recipient rows wait with `next_attempt_at = 'infinity'`: never
 * due, so the claim (src/deliveries/queue.ts) passes them by with no join and no extra test, and
 * they still count as left to send (the send is not completed while they wait). Rows already
 * claimed finish their attempt. Both statements name the account, so Citus runs each on one shard.
 */
const { sql: D } = deliveryStatus;

/** Send `singleSendId`'s queued rows → never due (pausing). Returns how many. */
export async function holdQueuedRowsOf(trx: Knex, userId: number, singleSendId: number): Promise<number> {
  const result = await trx.raw(
    `UPDATE deliveries SET next_attempt_at = 'infinity'
     WHERE single_send_id = ? AND user_id = ? AND status = ${D.Queued} AND next_attempt_at <> 'infinity'`,
    [singleSendId, userId],
  );
  return result.rowCount ?? 0;
}

/** Send `singleSendId`'s rows held by a pause → due now (resuming). Returns how many. */
export async function releaseQueuedRowsOf(trx: Knex, userId: number, singleSendId: number): Promise<number> {
  const result = await trx.raw(
    `UPDATE deliveries SET next_attempt_at = now()
     WHERE single_send_id = ? AND user_id = ? AND status = ${D.Queued} AND next_attempt_at = 'infinity'`,
    [singleSendId, userId],
  );
  return result.rowCount ?? 0;
}
