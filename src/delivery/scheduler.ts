import type { Knex } from 'knex';
import type { Logger } from '../logger';
import { recordAccountEvent, type EventDeps } from '../events/account-events';
import type { AudienceRef } from '../contacts/audience-ref';
import { countQueued } from '../statistics';
import { chunkSize, fanOutChunk, type FanoutCursor } from './audience';
import { startTestGroup } from '../ab/split';
import { claimPerAccount } from '../db/per-account';
import { advanceFanOut, completeSend, DUE_SENDS_WORK, parkFanOut, sendsMaybeComplete, sendsToFanOut, sendStillFanningOut, startDue } from '../single-sends/schedule';

/**
 * Single sends through their states (src/states.ts): ready and due → running → audience
 * written chunk by chunk → completed once every recipient row has a final outcome. Every step
 * claims its send with `FOR UPDATE SKIP LOCKED`, so several workers share the work (the
 * statements: src/single-sends/schedule.ts).
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

/** Sends started per round, at most. */
const START_BATCH = 20;

/**
 * Ready sends whose time has come → running, each with its `single_send.started` event in the
 * same transaction (a crash between them can lose neither); on Citus one account's at a time,
 * the accounts with sends due longest first (src/db/per-account.ts). Returns how many started.
 */
export async function startDueSends(deps: EventDeps): Promise<number> {
  return claimPerAccount(deps.db, DUE_SENDS_WORK, START_BATCH, (userId, limit) => startSendsOf(deps, userId, limit));
}

async function startSendsOf(deps: EventDeps, userId: number | undefined, limit: number): Promise<number> {
  const started = await deps.db.transaction(async (trx) => {
    const rows = await startDue<SendRow>(trx, userId, limit);
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
    const sends = await sendsToFanOut(db);
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
      current = await sendStillFanningOut<SendRow>(trx, id, userId);
      if (!current) return 0;
      await fanOutOne(trx, logger, current);
      return 1;
    });
  } catch (err) {
    if (err instanceof SendGone || !current) return 0;
    // This send's chunk failed (and rolled back): park it for a minute and go on with the others.
    logger.error({ err, singleSend: current.utr }, 'audience chunk failed; retrying in a minute');
    await parkFanOut(db, current, String((err as Error).message).slice(0, 1000));
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
  const updated = await advanceFanOut(trx, send, { next, done, doneAt, inserted });
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
  const candidates = await sendsMaybeComplete(deps.db);
  const completed: SendRow[] = [];
  for (const c of candidates) {
    // The status and its `single_send.completed` event commit together.
    const done = await deps.db.transaction(async (trx) => {
      const s = await completeSend<SendRow>(trx, c.id, c.user_id);
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
