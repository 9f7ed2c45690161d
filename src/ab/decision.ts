import type { Knex } from 'knex';
import { z } from 'zod';
import { recordAccountEvent } from '../events/account-events';
import { invalid } from '../http/errors';
import { integer } from '../http/fields';
import { validate } from '../http/validate';
import { claimPerAccount, ofAccount } from '../db/per-account';
import { countHeldRows, TEST_GROUP_SENT } from '../deliveries/rows';
import { defineJob, enqueue } from '../jobs/kind';
import type { JobDeps } from '../jobs/runner';
import { JOIN_SEND_OF_TEST, lockTestWithSend } from '../single-sends/rows';
import { AbPhase, AbStatus, abStatus, SendStatus } from '../states';
import { decide, type DecidedBy } from './bayes';
import { describeVariations, loadVariations, type VariationResult } from './results';
import { variationLetter, type AbCriteria, type AbIfInconclusive, type AbType } from './settings';

/**
 * The decision of an A/B test (docs/decisions.md, "A/B tests: the decision"), in three steps:
 *
 * 1. The worker's housekeeping notices a test group whose last message left the queue (accepted,
 *    bounced or given up) and, in one transaction, notes when, and either queues the decision as
 *    an `ab_decision` job due `duration_minutes` later or, with manual criteria, sets the test
 *    waiting for a person.
 * 2. The job (on the job runner, transactional: its writes and its outcome commit together under
 *    the job's claim) decides on the evidence (src/ab/bayes.ts): a winner, or — inconclusive and
 *    told to wait — nobody yet.
 * 3. A decision, on evidence or by a person (POST /single/send/ab/winner), releases the held rest
 *    of the audience to the winner in the same transaction as it is written, freezes the
 *    variations' results into `ab_tests.result` and records `single_send.ab_decided`. The test's
 *    row is locked first, so two workers, or a worker and a person, never decide twice; a worker
 *    killed during it leaves everything as it was (the transaction never committed), for the
 *    job's next attempt. Releasing writes no recipient row: the test becomes `releasing`, and
 *    the worker's claim takes its held rows to the winner as it sends them (src/deliveries/queue.ts).
 */

const DECIDE = abStatus.move([AbStatus.Testing, AbStatus.Waiting], AbStatus.Decided);
const WAIT = abStatus.move(AbStatus.Testing, AbStatus.Waiting);

interface TestRow {
  user_id: number;
  single_send_id: number;
  type: AbType;
  winner_criteria: AbCriteria;
  confidence: string;
  if_inconclusive: AbIfInconclusive;
  status: AbStatus;
  utr: string;
  single_send_name: string;
  deleted_at: string | null;
  test_size: number | null;
  audience_size: number | null;
}

/** The test of a send, locked for the caller's transaction (with its send's utr, name and whether it was deleted). */
export async function lockTest(trx: Knex.Transaction, userId: number, singleSendId: number): Promise<TestRow | undefined> {
  return lockTestWithSend<TestRow>(trx, userId, singleSendId);
}

/**
 * Writes a decision: the winner, who decided and the variations' results as they are now, which
 * the report shows from then on, and the test `releasing` — from its commit, the worker's claim
 * takes the held rest of the audience to the winner (src/deliveries/queue.ts), due since
 * `decided_at`; no recipient row is written here. Returns how many rows were released.
 */
async function applyDecision(trx: Knex.Transaction, test: TestRow, winner: number, decidedBy: DecidedBy, results: VariationResult[]): Promise<number> {
  // The rest of the audience, as written when the test group was taken (held rows only ever leave `held` to be claimed or cancelled).
  const released =
    test.audience_size !== null && test.test_size !== null
      ? test.audience_size - test.test_size
      : await countHeldRows(trx, test.user_id, test.single_send_id);
  // The release matches the test's row only while it is open to a decision and its winner is one
  // of its variations (the claim joins the winner's variation by index): else it fails here, and
  // the caller's transaction rolls back whole — never a test decided with nothing to release.
  const updated = await trx('ab_tests')
    .where({ user_id: test.user_id, single_send_id: test.single_send_id })
    .whereIn('status', DECIDE.from)
    .whereExists((q) =>
      q.select(trx.raw('1')).from('single_send_variations as v').where({ 'v.user_id': test.user_id, 'v.single_send_id': test.single_send_id, 'v.idx': winner }),
    )
    .update({
      status: DECIDE.to,
      winner,
      decided_by: decidedBy,
      decided_at: trx.fn.now(),
      releasing: true,
      result: JSON.stringify({ variations: results }),
      updated_at: trx.fn.now(),
    });
  if (updated !== 1) {
    throw new Error(`A/B test of single send ${test.single_send_id}: the release to variation ${winner} matched no open test with that variation; nothing was decided`);
  }
  const best = results[winner]?.probability_best ?? null;
  await recordAccountEvent(
    { db: trx },
    test.user_id,
    'single_send.ab_decided',
    `A/B test of “${test.single_send_name}”: variation ${variationLetter(winner)} wins`,
    { single_send: test.single_send_name, utr: test.utr, winner, decided_by: decidedBy, probability_best: best, released },
    { singleSendId: test.single_send_id },
  );
  return released;
}

/**
 * The decision on the evidence (the job's): the leader wins when it is best with the test's
 * confidence, else the inconclusive rule applies — the leader, the original, or wait for a
 * person. A test no longer testing (a person decided, its send was deleted) is left as it is.
 */
export async function decideOnEvidence(
  trx: Knex.Transaction,
  userId: number,
  singleSendId: number,
): Promise<{ outcome: 'decided' | 'waiting' | 'skipped'; released?: number; releaseMs?: number }> {
  const test = await lockTest(trx, userId, singleSendId);
  if (!test || test.status !== AbStatus.Testing || test.deleted_at !== null) return { outcome: 'skipped' };
  const loaded = await loadVariations(trx, userId, singleSendId, test.winner_criteria);
  const verdict = decide(loaded.arms, Number(test.confidence), test.if_inconclusive);
  if (verdict.winner === null) {
    await trx('ab_tests').where({ user_id: userId, single_send_id: singleSendId }).update({ status: WAIT.to, updated_at: trx.fn.now() });
    return { outcome: 'waiting' };
  }
  const results = await describeVariations(trx, userId, test.type, loaded, verdict.posteriors);
  const started = Date.now();
  const released = await applyDecision(trx, test, verdict.winner, verdict.decidedBy!, results);
  return { outcome: 'decided', released, releaseMs: Date.now() - started };
}

/** A pick names a variation by its index: 0 for A (the send's own) to 5 for F. */
const PICK = z.object({ variation: integer(0, 5) });

/**
 * A person's pick (POST /single/send/ab/winner and the dashboard's buttons both come here), while
 * the test runs (ending it early) or waits. `variation` is taken as the caller has it — a number,
 * or a form's string — and checked here, once for both: a whole number naming one of the test's
 * variations. VAL (in the schema's words) for anything else, for a test not started and for one
 * already decided; nothing is written then.
 */
export async function decideByHand(trx: Knex.Transaction, test: TestRow, variation: unknown): Promise<void> {
  const { variation: winner } = validate(PICK, { variation: variation === '' ? undefined : variation });
  const loaded = await loadVariations(trx, test.user_id, test.single_send_id, test.winner_criteria);
  if (winner >= loaded.rows.length) throw invalid({ variation: ['The selected variation is invalid.'] });
  if (test.status === AbStatus.Pending) throw invalid({ utr: ['The A/B test has not started yet.'] });
  if (!DECIDE.from.includes(test.status)) throw invalid({ utr: ['The A/B test is already decided.'] });
  const results = await describeVariations(trx, test.user_id, test.type, loaded);
  await applyDecision(trx, test, winner, 'manual', results);
}

/** The decision as a job of the job runner, due `duration_minutes` after the test group's last message. */
export const abDecision = defineJob<{ singleSendId: number }>({
  name: 'ab_decision',
  transactional: true,
  settings: () => ({
    maxAttempts: 10,
    retryBaseMs: 30_000,
    retryMaxMs: 3_600_000,
    // The decision writes no recipient row (the claim releases them); the lease leaves room for a slow database.
    leaseMs: 600_000,
    concurrency: 2,
  }),
  handle: async ({ db, logger }: JobDeps, job) => {
    const decided = await decideOnEvidence(db as Knex.Transaction, job.user_id, job.payload.singleSendId);
    logger.info({ singleSend: job.payload.singleSendId, ...decided }, 'A/B test decided on its evidence');
    return { ok: true };
  },
});

/**
 * Housekeeping: tests whose test group has no message left to send (the partial index
 * deliveries_ab_test_pending_index holds exactly those still queued or sending) are noted as done
 * now; their decision is queued for the end of their duration, or, with manual criteria, they
 * wait for a person. Returns how many were noted.
 */
export async function noticeFinishedTestGroups(db: Knex): Promise<number> {
  // On Citus one account's tests at a time (src/db/per-account.ts): the accounts with tests still testing.
  const testing = { from: 'ab_tests', where: `status = ${abStatus.sql.Testing} AND test_done_at IS NULL`, account: 'user_id', due: 'created_at' };
  return claimPerAccount(db, testing, 20, (userId, limit) => noticeFinishedOf(db, userId, limit));
}

async function noticeFinishedOf(db: Knex, userId: number | undefined, limit: number): Promise<number> {
  // The account as a value for every table (Citus routes each by its own filter); `t.user_id` on one server.
  const account = userId === undefined ? 't.user_id' : String(userId);
  return db.transaction(async (trx) => {
    const { rows } = await trx.raw(
      `SELECT t.user_id, t.single_send_id, t.winner_criteria, t.duration_minutes
       FROM ab_tests t
       ${JOIN_SEND_OF_TEST('t', account)}
       WHERE t.status = ${abStatus.sql.Testing} AND t.test_done_at IS NULL${ofAccount('t.user_id', userId)}
         AND s.status IN (${SendStatus.Running}, ${SendStatus.Completed}) AND s.deleted_at IS NULL AND s.fanout_done_at IS NOT NULL
         AND ${TEST_GROUP_SENT(account, AbPhase.Test)}
       ORDER BY t.single_send_id
       LIMIT ?
       FOR UPDATE OF t SKIP LOCKED`,
      [limit],
    );
    for (const t of rows as Array<{ user_id: number; single_send_id: number; winner_criteria: AbCriteria; duration_minutes: number }>) {
      const manual = t.winner_criteria === 'manual';
      const [{ test_done_at: doneAt }] = await trx('ab_tests')
        .where({ user_id: t.user_id, single_send_id: t.single_send_id })
        .update({ test_done_at: trx.fn.now(), updated_at: trx.fn.now(), ...(manual ? { status: WAIT.to } : {}) })
        .returning('test_done_at');
      if (manual) continue;
      const runAt = new Date(new Date(doneAt).getTime() + t.duration_minutes * 60_000);
      await enqueue(trx, abDecision, { userId: t.user_id, payload: { singleSendId: t.single_send_id }, runAt, key: `send:${t.single_send_id}` });
    }
    return rows.length;
  });
}
