import type { Knex } from 'knex';
import { isCitus } from './citus';

/**
 * The worker's cross-account claims on Citus (docs/decisions.md, "Citus": the worker).
 *
 * On one PostgreSQL a claim takes the due work of every account in one statement (`FOR UPDATE
 * SKIP LOCKED` over the whole table). Citus runs `FOR UPDATE` only within one shard, so there a
 * claim is taken one account at a time: a plain read on every node lists the accounts with due
 * work, oldest due first (no lock: Citus runs a read on every shard), and each account's claim
 * is the same statement with `user_id = <account>` added, which Citus routes to the one shard
 * holding the account. Two workers may list the same accounts; their claims still never take the
 * same row (SKIP LOCKED within the shard).
 *
 * Why no coordinator table of accounts with due work: work becomes due in a dozen places (a send
 * scheduled or started, each fan-out chunk, an automation step, a retry's backoff ending, a lease
 * running out after a worker died, a job or a webhook batch queued, an event a webhook wants …),
 * and the last two become due by time passing, not by a write. The read of the tables themselves
 * cannot miss one; its cost is measured in docs/scaling.md ("Citus").
 */

const known = new WeakMap<object, Promise<boolean>>();

/** Whether `db` is a Citus database: asked once per pool (transactions share their pool's client). */
export function onCitus(db: Knex): Promise<boolean> {
  const key = db.client as object;
  let answer = known.get(key);
  if (!answer) {
    answer = isCitus(db);
    known.set(key, answer);
    answer.catch(() => known.delete(key));
  }
  return answer;
}

/**
 * Where a claim's due work is: `FROM` and `WHERE` of the claim (its `?` bindings in order), the
 * expression naming the row's account, and when the row became due (oldest first).
 */
export interface DueWork {
  from: string;
  where: string;
  bindings?: readonly Knex.Value[];
  account: string;
  due: string;
}

/** Up to `limit` accounts with due work, the one due longest first (a read on every node). */
export async function dueAccounts(db: Knex, work: DueWork, limit: number): Promise<number[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`dueAccounts: bad limit ${limit}`);
  const { rows } = await db.raw(
    `SELECT ${work.account} AS user_id, min(${work.due}) AS due FROM ${work.from} WHERE ${work.where}
     GROUP BY 1 ORDER BY 2, 1 LIMIT ${limit}`,
    [...(work.bindings ?? [])],
  );
  return (rows as Array<{ user_id: number }>).map((r) => r.user_id);
}

/** Accounts one round of a loop takes its work from, at most (on Citus). */
const ACCOUNTS_PER_ROUND = 20;

/**
 * One round of a claim that takes up to `budget` items: on one PostgreSQL `claim(undefined,
 * budget)`, the cross-account statement as it always was; on Citus, the accounts with due work,
 * oldest due first, each claimed on its own (`claim(userId, share)`) with an equal share of the
 * budget, so one account with much due work does not hold up the others. Returns how much was
 * claimed in all.
 */
export async function claimPerAccount(
  db: Knex,
  work: DueWork,
  budget: number,
  claim: (userId: number | undefined, budget: number) => Promise<number>,
): Promise<number> {
  if (!(await onCitus(db))) return claim(undefined, budget);
  const accounts = await dueAccounts(db, work, Math.max(1, Math.min(budget, ACCOUNTS_PER_ROUND)));
  const share = Math.max(1, Math.ceil(budget / Math.max(1, accounts.length)));
  let done = 0;
  for (const userId of accounts) {
    if (done >= budget) break;
    done += await claim(userId, Math.min(share, budget - done));
  }
  return done;
}

/**
 * The accounts the sending loop claims recipient rows from on Citus, in turn: listed oldest due
 * first, read again at most every `refreshMs` (a send's rows become due chunk by chunk) and
 * whenever the list ran out. An account whose claim found rows goes to the back of the line, so
 * every account with due rows gets a claim per turn of the line, whatever the size of its queue.
 */
export class AccountTurns {
  private line: number[] = [];
  private readAt = 0;

  constructor(
    private readonly db: Knex,
    private readonly work: DueWork,
    private readonly opts: { accounts: number; refreshMs: number } = { accounts: 100, refreshMs: 1000 },
  ) {}

  /** Runs `claim` for accounts in turn until one finds rows, or every account with due rows found none. */
  async claim<T>(claim: (userId: number) => Promise<T[]>): Promise<T[]> {
    let fresh = false;
    for (;;) {
      if (!this.line.length || Date.now() - this.readAt > this.opts.refreshMs) {
        if (fresh) return [];
        this.line = await dueAccounts(this.db, this.work, this.opts.accounts);
        this.readAt = Date.now();
        fresh = true;
        if (!this.line.length) return [];
      }
      const userId = this.line.shift()!;
      const rows = await claim(userId);
      if (rows.length) {
        this.line.push(userId);
        return rows;
      }
    }
  }
}

/**
 * "Scoped to one account if given", the one way it is written: ` AND <column> = <id>` when a
 * claim is taken one account at a time (`userId`, on Citus: claimPerAccount, AccountTurns),
 * nothing when it spans every account (one server). The account is a checked integer, written
 * into the text as a value so that Citus routes the statement to its shard.
 */
export function ofAccount(column: string, userId: number | undefined): string {
  if (userId === undefined) return '';
  if (!Number.isSafeInteger(userId)) throw new Error(`ofAccount: bad account ${userId}`);
  return ` AND ${column} = ${userId}`;
}

/** The same condition on a knex query: `q` unchanged without an account. */
export function whereOfAccount<Q extends Knex.QueryBuilder>(q: Q, column: string, userId: number | undefined): Q {
  return userId === undefined ? q : (q.where(column, userId) as Q);
}

/**
 * ` AND <alias>.user_id = <id>` when every row of a batch statement (an UPDATE … FROM
 * json_to_recordset, say) is one account's — always so for the worker on Citus, whose claims
 * take one account's rows: Citus then runs the statement on that account's shard only, instead
 * of on every shard. Nothing when the rows span accounts (one server's claims do); the statement
 * is correct either way.
 */
export function ofOneAccount(alias: string, userIds: Iterable<number>): string {
  let one: number | undefined;
  for (const id of userIds) {
    if (!Number.isSafeInteger(id) || (one !== undefined && id !== one)) return '';
    one = id;
  }
  return one === undefined ? '' : ` AND ${alias}.user_id = ${one}`;
}
