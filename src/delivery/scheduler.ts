import type { Knex } from 'knex';
import type { Logger } from '../logger';
import { recordAccountEvent, type EventDeps } from '../events/account-events';
import type { AudienceRef } from '../contacts/audience-ref';
import { countQueued } from '../statistics';
import { SendStatus, sendStatus } from '../states';
import { chunkSize, fanOutChunk, type FanoutCursor } from './audience';
import { startTestGroup } from '../ab/split';
import { claimPerAccount, ofAccount } from '../db/per-account';
import { NOTHING_LEFT_TO_SEND } from '../deliveries/rows';

/**
 * Single sends through their states (src/states.ts): ready and due → running → audience
 * written chunk by chunk → completed once every recipient row has a final outcome. Every step
 * claims its send with `FOR UPDATE SKIP LOCKED`, so several workers share the work.
 */
const START = sendStatus.move(SendStatus.Ready, SendStatus.Running);
const COMPLETE = sendStatus.move(SendStatus.Running, SendStatus.Completed);

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

/** Sends started per round, at most. */
const START_BATCH = 20;
const DUE_SENDS = `status IN (${START.fromSql}) AND deleted_at IS NULL AND due_at <= now()`;

/**
 * Ready sends whose time has come → running, each with its `single_send.started` event in the
 * same transaction (a crash between them can lose neither); on Citus one account's at a time,
 * the accounts with sends due longest first (src/db/per-account.ts). Returns how many started.
 */
export async function startDueSends(deps: EventDeps): Promise<number> {
  const due = { from: 'single_sends', where: DUE_SENDS, account: 'user_id', due: 'due_at' };
  return claimPerAccount(deps.db, due, START_BATCH, (userId, limit) => startSendsOf(deps, userId, limit));
}

async function startSendsOf(deps: EventDeps, userId: number | undefined, limit: number): Promise<number> {
  const started = await deps.db.transaction(async (trx) => {
    const result = await trx.raw(
      `UPDATE single_sends s SET status = ${START.toSql}, sent_at = now(), updated_at = now()
       WHERE s.id IN (
         SELECT id FROM single_sends
         WHERE ${DUE_SENDS}${ofAccount('user_id', userId)}
         ORDER BY due_at LIMIT ? FOR UPDATE SKIP LOCKED
       )${ofAccount('s.user_id', userId)}
       RETURNING s.id, s.user_id, s.utr, s.single_send_name`,
      [limit],
    );
    const rows = result.rows as SendRow[];
    for (const s of rows) {
      await recordAccountEvent(
        { db: trx },
        s.user_id,
        'single_send.started',
        `Single send “${s.single_send_name}” started`,
        { single_send: s.single_send_name, utr: s.utr },
        { singleSendId: s.id },
      );
    }
    return rows;
  });
  for (const s of started) deps.logger.info({ singleSend: s.utr }, 'single send started');
  return started.length;
}

/** Advisory-lock class of fan-out (pg_try_advisory_xact_lock(class, send id)): one writer per send. */
const FANOUT_LOCK_CLASS = 0x48_46; // "HF"
/** A housekeeping round writes audiences for about this long before it does its other work. */
const FANOUT_ROUND_MS = 1000;

class SendGone extends Error {}

/**
 * Writes audiences of running sends, chunk after chunk, for about FANOUT_ROUND_MS. Each chunk
 * is one transaction holding the send's advisory lock, so one worker at a time fans a send
 * out and a crash resumes from the saved cursor. The send's row is not locked while the
 * chunk is written — outcomes keep updating its statistics meanwhile — only by the closing
 * update of its cursor, which also finds out whether the send was deleted in the meantime
 * (then the chunk is rolled back: a deletion cancels what was queued before it, and nothing
 * may be queued after it). `onChunk` is called after each chunk commits (its rows are due).
 * Returns the number of chunks written.
 */
export async function fanOutSome(db: Knex, logger: Logger, onChunk: () => void = () => undefined): Promise<number> {
  const started = Date.now();
  let chunks = 0;
  for (;;) {
    // A read of every account's sends (on Citus, of every node: a read needs no lock); each is then written under its account.
    const sends = (await db('single_sends')
      .where({ status: SendStatus.Running })
      .whereNull('fanout_done_at')
      .whereNull('deleted_at')
      .where((q) => q.whereNull('fanout_retry_at').orWhere('fanout_retry_at', '<=', db.fn.now()))
      .orderBy('id')
      .limit(20)
      .select('id', 'user_id')) as Array<{ id: number; user_id: number }>;
    let wrote = 0;
    for (const send of sends) {
      const n = await fanOutLocked(db, logger, send);
      if (n) onChunk();
      wrote += n;
      if (Date.now() - started > FANOUT_ROUND_MS) return chunks + wrote;
    }
    chunks += wrote;
    if (!wrote) return chunks;
  }
}

/** One chunk of send `id`, unless another worker holds its fan-out. Returns 1 if written. */
async function fanOutLocked(db: Knex, logger: Logger, { id, user_id: userId }: { id: number; user_id: number }): Promise<number> {
  let current: SendRow | undefined;
  try {
    return await db.transaction(async (trx) => {
      const { rows } = await trx.raw('SELECT pg_try_advisory_xact_lock(?, ?) AS locked', [FANOUT_LOCK_CLASS, id]);
      if (!rows[0].locked) return 0;
      // Read after taking the lock: the cursor another worker may just have moved.
      current = (await trx('single_sends').where({ id, user_id: userId, status: SendStatus.Running }).whereNull('fanout_done_at').whereNull('deleted_at').first()) as
        | SendRow
        | undefined;
      if (!current) return 0;
      await fanOutOne(trx, logger, current);
      return 1;
    });
  } catch (err) {
    if (err instanceof SendGone || !current) return 0;
    // This send's chunk failed (and rolled back): park it for a minute and go on with the others.
    logger.error({ err, singleSend: current.utr }, 'audience chunk failed; retrying in a minute');
    await db('single_sends')
      .where({ id: current.id, user_id: current.user_id })
      .update({ fanout_retry_at: db.raw("now() + interval '1 minute'"), fanout_error: String((err as Error).message).slice(0, 1000) });
    return 1;
  }
}

async function fanOutOne(trx: Knex.Transaction, logger: Logger, send: SendRow): Promise<void> {
  const abTest = await trx('ab_tests').where({ single_send_id: send.id, user_id: send.user_id }).first('status');
  const target = {
    userId: send.user_id,
    singleSendId: send.id,
    groupId: send.unsubscribe_group_id,
    sources: send.recipient_id,
    exclusions: send.exclude_specific_recipient_id,
    hold: Boolean(abTest),
  };
  const cursor = send.fanout_cursor ?? { source: 0, after: 0 };
  const { next, inserted } = await fanOutChunk(trx, target, cursor, chunkSize(send.triggered));
  const done = !next || next.source >= target.sources.length;
  // The moment the last chunk is written (now() would be its transaction's start), read first:
  // Citus refuses a volatile function in an UPDATE of a distributed table.
  const doneAt = done ? ((await trx.raw('SELECT clock_timestamp() AS t')).rows[0].t as Date) : null;
  const updated = await trx('single_sends')
    .where({ id: send.id, user_id: send.user_id, status: SendStatus.Running })
    .whereNull('deleted_at')
    .update({
      fanout_cursor: done ? null : JSON.stringify(next),
      fanout_done_at: doneAt,
      fanout_retry_at: null,
      fanout_error: null,
      triggered: trx.raw('triggered + ?', [inserted]),
    });
  if (!updated) throw new SendGone();
  await countQueued(trx, [{ userId: send.user_id, source: { kind: 'single_send', singleSendId: send.id }, n: inserted }]);
  if (!done) return;
  // An A/B send's test group is taken from the complete audience, in the last chunk's transaction.
  const testGroup = abTest ? await startTestGroup(trx, send) : undefined;
  logger.info({ singleSend: send.utr, triggered: send.triggered + inserted, testGroup }, 'audience written');
}

/**
 * Running sends with a complete audience and no message left to try → completed. The
 * statistics say when that may be (every recipient written is delivered or bounced: they are
 * counted in the statement that records each outcome, src/deliveries/queue.ts); only those
 * sends are then confirmed against their rows, once, through the send's unique index.
 */
export async function completeSends(deps: EventDeps): Promise<number> {
  const candidates = (await deps.db('single_sends')
    .where({ status: SendStatus.Running })
    .whereNull('deleted_at')
    .whereNotNull('fanout_done_at')
    .whereRaw('delivered + bounces >= triggered')
    .select('id', 'user_id')) as Array<{ id: number; user_id: number }>;
  const completed: SendRow[] = [];
  for (const c of candidates) {
    // The status and its `single_send.completed` event commit together.
    const done = await deps.db.transaction(async (trx) => {
      const result = await trx.raw(
        `UPDATE single_sends s SET status = ${COMPLETE.toSql}, completed_at = now(), updated_at = now()
         WHERE s.id = ? AND s.user_id = ? AND s.status IN (${COMPLETE.fromSql}) AND s.deleted_at IS NULL
           AND ${NOTHING_LEFT_TO_SEND('s')}
         RETURNING s.*`,
        [c.id, c.user_id, c.user_id],
      );
      const s = (result.rows as SendRow[])[0];
      if (!s) return undefined;
      // An A/B send's held rows are all claimed: its claims need not probe it any longer (src/deliveries/queue.ts).
      await trx('ab_tests').where({ single_send_id: s.id, user_id: s.user_id, releasing: true }).update({ releasing: false });
      const facts = {
        single_send: s.single_send_name,
        utr: s.utr,
        triggered: s.triggered,
        delivered: s.delivered,
        bounces: s.bounces,
        unique_opens: s.unique_opens,
        unsubscribes: s.unsubscribes,
      };
      await recordAccountEvent({ db: trx }, s.user_id, 'single_send.completed', `Single send “${s.single_send_name}” completed`, facts, { singleSendId: s.id });
      return s;
    });
    if (!done) continue;
    deps.logger.info({ singleSend: done.utr, delivered: done.delivered, bounces: done.bounces }, 'single send completed');
    completed.push(done);
  }
  return completed.length;
}
