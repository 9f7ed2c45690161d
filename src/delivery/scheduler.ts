import type { Knex } from 'knex';
import type { Logger } from '../logger';
import { recordEvent, type EventDeps } from '../notifications/events';
import { fanOutChunk, type AudienceRef, type FanoutCursor } from './audience';

/**
 * Single sends through their states: ready (1) and due → running (2) → audience written
 * chunk by chunk → completed (3) once every recipient row has a final outcome. Every step
 * claims its send with `FOR UPDATE SKIP LOCKED`, so several workers share the work.
 */
interface SendRow {
  id: number;
  user_id: number;
  utr: string;
  single_send_name: string;
  unsubscribe_group_id: number;
  recipient_id: AudienceRef[];
  exclude_specific_recipient_id: AudienceRef[];
  fanout_cursor: FanoutCursor | null;
  triggered: number;
  delivered: number;
  bounces: number;
  unique_opens: number;
  unsubscribes: number;
}

/** Ready sends whose time has come → running. Returns how many started. */
export async function startDueSends(deps: EventDeps): Promise<number> {
  const result = await deps.db.raw(
    `UPDATE single_sends s SET status = 2, sent_at = now(), updated_at = now()
     WHERE s.id IN (
       SELECT id FROM single_sends
       WHERE status = 1 AND deleted_at IS NULL AND due_at <= now()
       ORDER BY due_at LIMIT 20 FOR UPDATE SKIP LOCKED
     )
     RETURNING s.id, s.user_id, s.utr, s.single_send_name`,
  );
  const started = result.rows as SendRow[];
  for (const s of started) {
    deps.logger.info({ singleSend: s.utr }, 'single send started');
    await recordEvent(deps, s.user_id, 'single_send.started', `Single send “${s.single_send_name}” started`, {
      single_send: s.single_send_name,
      utr: s.utr,
    }).catch((err) => deps.logger.warn({ err }, 'event failed'));
  }
  return started.length;
}

/**
 * Writes the audience of one running send, up to `maxChunks` chunks, each in its own
 * transaction holding the send's row (so one worker at a time fans a send out, and a crash
 * resumes from the saved cursor). Returns the number of chunks written.
 */
export async function fanOutSome(db: Knex, logger: Logger, maxChunks = 10): Promise<number> {
  let chunks = 0;
  while (chunks < maxChunks) {
    let current: SendRow | undefined;
    try {
      const more = await db.transaction(async (trx) => {
        const send = (await trx('single_sends')
          .where({ status: 2 })
          .whereNull('fanout_done_at')
          .whereNull('deleted_at')
          .where((q) => q.whereNull('fanout_retry_at').orWhere('fanout_retry_at', '<=', trx.fn.now()))
          .orderBy('id')
          .forUpdate()
          .skipLocked()
          .first()) as SendRow | undefined;
        current = send;
        if (!send) return false;
        await fanOutOne(trx, logger, send);
        return true;
      });
      if (!more) break;
    } catch (err) {
      if (!current) throw err;
      // This send's chunk failed (and rolled back): park it for a minute and go on with the others.
      logger.error({ err, singleSend: current.utr }, 'audience chunk failed; retrying in a minute');
      await db('single_sends')
        .where({ id: current.id })
        .update({ fanout_retry_at: db.raw("now() + interval '1 minute'"), fanout_error: String((err as Error).message).slice(0, 1000) });
    }
    chunks += 1;
  }
  return chunks;
}

async function fanOutOne(trx: Knex.Transaction, logger: Logger, send: SendRow): Promise<void> {
  const target = {
    userId: send.user_id,
    singleSendId: send.id,
    groupId: send.unsubscribe_group_id,
    sources: send.recipient_id,
    exclusions: send.exclude_specific_recipient_id,
  };
  const cursor = send.fanout_cursor ?? { source: 0, after: 0 };
  const { next, inserted } = await fanOutChunk(trx, target, cursor);
  const done = !next || next.source >= target.sources.length;
  await trx('single_sends')
    .where({ id: send.id })
    .update({
      fanout_cursor: done ? null : JSON.stringify(next),
      fanout_done_at: done ? trx.fn.now() : null,
      fanout_retry_at: null,
      fanout_error: null,
      triggered: trx.raw('triggered + ?', [inserted]),
    });
  if (done) logger.info({ singleSend: send.utr, triggered: send.triggered + inserted }, 'audience written');
}

/** Running sends with a complete audience and no message left to try → completed (3). */
export async function completeSends(deps: EventDeps): Promise<number> {
  const result = await deps.db.raw(
    `UPDATE single_sends s SET status = 3, completed_at = now(), updated_at = now()
     WHERE s.status = 2 AND s.deleted_at IS NULL AND s.fanout_done_at IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.single_send_id = s.id AND d.status IN ('queued', 'sending'))
     RETURNING s.*`,
  );
  for (const s of result.rows as SendRow[]) {
    deps.logger.info({ singleSend: s.utr, delivered: s.delivered, bounces: s.bounces }, 'single send completed');
    await recordEvent(deps, s.user_id, 'single_send.completed', `Single send “${s.single_send_name}” completed`, {
      single_send: s.single_send_name,
      utr: s.utr,
      triggered: s.triggered,
      delivered: s.delivered,
      bounces: s.bounces,
      unique_opens: s.unique_opens,
      unsubscribes: s.unsubscribes,
    }).catch((err) => deps.logger.warn({ err }, 'event failed'));
  }
  return result.rows.length;
}
