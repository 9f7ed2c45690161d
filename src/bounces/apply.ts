import type { Knex } from 'knex';
import type { Deps } from '../context';
import { secret } from '../db/secrets';
import { rowsByIds, rowsByStoredTokens } from '../deliveries/rows';
import { recordMessageEvents } from '../events/record';
import { SOURCE_REF_COLUMNS, sourceRef, type SourceRefColumns } from '../sources';
import type { MessageEvent, MessageRef } from '../events/types';
import { lookupToken } from '../recipient-token';
import { softBounceCounts, suppress, unsubscribeGlobally, type Suppression, type SuppressionSource } from '../suppression';

/**
 * What every inbound channel learned about a message it can name — SMTP (DSN, ARF), a bounce
 * mailbox (IMAP), an ESP's webhook, Herald's own send (a 5xx) — applied in one place: the
 * event (bounced / deferred / complained, which moves the statistics), the suppression policy
 * and the kept report. docs/decisions.md, "Bounces, complaints and suppressions".
 */
export interface ReportedOutcome {
  kind: 'hard' | 'soft' | 'deferred' | 'complaint';
  /** The recipient row: by the recipient token Herald put in the message (VERP local part, provider metadata) or by the Message-ID Herald gave it (with or without <>). */
  match: { token: string } | { messageId: string };
  /** The address the report names, if any; when given it must equal the row's address (case-insensitive) or the outcome is ignored. */
  email: string | null;
  status: string | null; // enhanced status like '5.1.1'
  diagnostic: string;
  /** Which channel reported it (the suppression it may cause keeps the same word). */
  source: SuppressionSource;
  raw?: Buffer | string; // the report as received; kept ≤ 256 KB
  /** A complaint's ARF Feedback-Type (abuse, fraud, …), kept in the event. */
  feedbackType?: string;
}

/** The most of a report that is kept (bounce_reports has a CHECK of the same size). */
export const MAX_KEPT_BYTES = 256 * 1024;

type Row = SourceRefColumns & {
  id: number;
  user_id: number;
  email: string;
  token: string | null;
};

const ROW_COLUMNS = ['id', 'user_id', ...SOURCE_REF_COLUMNS, 'email', 'token'];

/** The token an outcome names: the VERP/metadata token itself, or the local part of Herald's Message-ID. */
function tokenOf(match: ReportedOutcome['match']): string {
  if ('token' in match) return match.token.trim();
  const id = match.messageId.trim().replace(/^<|>$/g, '');
  const at = id.lastIndexOf('@');
  return at > 0 ? id.slice(0, at) : '';
}

/** The recipient row of each outcome (undefined: not one of this installation's rows, or a report naming another address). */
async function findRows(db: Knex, key: Buffer, outcomes: ReportedOutcome[]): Promise<Array<Row | undefined>> {
  const lookups = outcomes.map((o) => lookupToken(key, tokenOf(o.match)));
  const keys = lookups.flatMap((l) => (l?.by === 'key' ? [{ id: l.ref.deliveryId, user_id: l.ref.userId }] : []));
  const legacy = lookups.flatMap((l) => (l?.by === 'legacy' ? [l.token] : []));
  if (keys.length === 0 && legacy.length === 0) return outcomes.map(() => undefined);
  // One statement per account named (a batch rarely names many): each reads one account's rows,
  // on one node on Citus. Tokens of rows written before signed tokens name no account; they are
  // looked up by the token alone, only when there are any.
  const accounts = new Map<number, number[]>();
  for (const k of keys) accounts.set(k.user_id, [...(accounts.get(k.user_id) ?? []), k.id]);
  const found = await Promise.all([
    ...[...accounts].map(([userId, ids]) => rowsByIds<Row>(db, userId, ids, ROW_COLUMNS)),
    ...(legacy.length ? [rowsByStoredTokens<Row>(db, legacy, ROW_COLUMNS)] : []),
  ]);
  const rows = found.flat();
  const byKey = new Map<string, Row>();
  const byToken = new Map<string, Row>();
  for (const r of rows) {
    byKey.set(`${r.id}:${r.user_id}`, r);
    if (r.token) byToken.set(r.token, r);
  }
  return outcomes.map((o, i) => {
    const l = lookups[i];
    const row = l?.by === 'key' ? byKey.get(`${l.ref.deliveryId}:${l.ref.userId}`) : l?.by === 'legacy' ? byToken.get(l.token) : undefined;
    if (!row) return undefined;
    // A report naming another address than the message's is not about this message.
    if (o.email !== null && o.email.trim().toLowerCase() !== row.email.toLowerCase()) return undefined;
    return row;
  });
}

function keptRaw(raw: ReportedOutcome['raw']): string | null {
  if (raw === undefined) return null;
  const bytes = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
  return bytes.subarray(0, MAX_KEPT_BYTES).toString('base64');
}

function eventOf(o: ReportedOutcome, ref: MessageRef): MessageEvent {
  const diagnostic = o.diagnostic.slice(0, 1000);
  if (o.kind === 'deferred') return { ...ref, type: 'deferred', data: { status: o.status, diagnostic, source: o.source } };
  if (o.kind === 'complaint') {
    return { ...ref, type: 'complained', data: o.feedbackType ? { source: o.source, feedback_type: o.feedbackType.slice(0, 100) } : { source: o.source } };
  }
  return { ...ref, type: 'bounced', data: { kind: o.kind, status: o.status, diagnostic, source: o.source } };
}

interface Applied {
  o: ReportedOutcome;
  row: Row;
  reportId: number;
}

/**
 * The suppression policy: a hard bounce suppresses at once; a complaint suppresses and
 * unsubscribes globally; SOFT_BOUNCE_LIMIT soft bounces of an address within SOFT_BOUNCE_DAYS
 * (counted from `bounced` events, this one included) suppress it. Runs after the events were
 * recorded in the same transaction: the event writer's per-account lock is held to commit,
 * so two reports for one account are counted one after the other.
 */
async function applyPolicy(trx: Knex.Transaction, config: Deps['config'], applied: Applied[]): Promise<void> {
  const rows: Suppression[] = [];
  const of = (a: Applied, type: Suppression['type'], reason: string): Suppression => ({
    userId: a.row.user_id,
    email: a.row.email,
    type,
    reason,
    diagnostic: a.o.status ? `${a.o.status} ${a.o.diagnostic}`.trim() : a.o.diagnostic,
    source: a.o.source,
    deliveryId: a.row.id,
    singleSendId: a.row.single_send_id,
    automationId: a.row.automation_id,
    reportId: a.reportId,
  });
  const soft = applied.filter((a) => a.o.kind === 'soft');
  const softCounts = await softBounceCounts(
    trx,
    config.softBounceDays,
    soft.map((a) => ({ userId: a.row.user_id, email: a.row.email })),
  );
  const complaints = new Map<number, string[]>();
  for (const a of applied) {
    if (a.o.kind === 'hard') rows.push(of(a, 'bounce', 'hard bounce'));
    else if (a.o.kind === 'complaint') {
      rows.push(of(a, 'complaint', a.o.feedbackType ? `complaint (${a.o.feedbackType.slice(0, 100)})` : 'complaint'));
      complaints.set(a.row.user_id, [...(complaints.get(a.row.user_id) ?? []), a.row.email]);
    } else if (a.o.kind === 'soft') {
      const n = softCounts.get(`${a.row.user_id}:${a.row.email.toLowerCase()}`) ?? 0;
      if (n >= config.softBounceLimit) rows.push(of(a, 'bounce', `${n} soft bounces within ${config.softBounceDays} days`));
    }
  }
  for (const [userId, emails] of [...complaints].sort((x, y) => x[0] - y[0])) await unsubscribeGlobally(trx, userId, emails);
  await suppress(trx, rows);
}

/** Applies each outcome once: events (bounced/deferred/complained, with statistics), the suppression policy, the kept report. Outcomes matching no row of this installation are ignored. Returns how many were applied. */
export async function applyOutcomes(deps: Pick<Deps, 'db' | 'config' | 'logger'>, outcomes: ReportedOutcome[]): Promise<number> {
  return (await applyMatched(deps, outcomes)).applied;
}

interface Result {
  /** Outcomes that named a row of this installation (applied now or before). */
  matched: number;
  applied: number;
}

/**
 * applyOutcomes, also saying how many outcomes named a row of this installation.
 *
 * Calls made while an earlier one is being written are written together, in one transaction
 * (group commit): one account's reports are serialised anyway — by its send's counters and
 * the event writer's per-account lock — so 10,000 DSNs arriving on ten SMTP connections
 * would otherwise be 10,000 transactions one after the other (bench:bounces: 53 s against
 * the 30 s target). A batch that fails is retried call by call, so one bad report fails
 * alone.
 */
export function applyMatched(deps: Pick<Deps, 'db' | 'config' | 'logger'>, outcomes: ReportedOutcome[]): Promise<Result> {
  if (outcomes.length === 0) return Promise.resolve({ matched: 0, applied: 0 });
  let queue = queues.get(deps.db);
  if (!queue) queues.set(deps.db, (queue = new GroupCommit(deps)));
  return queue.submit(outcomes);
}

/** The most outcomes written in one transaction. */
const MAX_BATCH = 500;

interface Waiting {
  outcomes: ReportedOutcome[];
  resolve(r: Result): void;
  reject(err: unknown): void;
}

const queues = new WeakMap<Knex, GroupCommit>();

class GroupCommit {
  private readonly waiting: Waiting[] = [];
  private running = false;

  constructor(private readonly deps: Pick<Deps, 'db' | 'config' | 'logger'>) {}

  submit(outcomes: ReportedOutcome[]): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.waiting.push({ outcomes, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length) {
        let n = 0;
        let size = 0;
        while (n < this.waiting.length && (n === 0 || size + this.waiting[n].outcomes.length <= MAX_BATCH)) size += this.waiting[n++].outcomes.length;
        const batch = this.waiting.splice(0, n);
        try {
          const results = await applyBatch(this.deps, batch.map((w) => w.outcomes));
          batch.forEach((w, i) => w.resolve(results[i]));
        } catch (err) {
          if (batch.length === 1) batch[0].reject(err);
          else {
            for (const w of batch) await applyBatch(this.deps, [w.outcomes]).then(([r]) => w.resolve(r), (e: unknown) => w.reject(e));
          }
        }
      }
    } finally {
      this.running = false;
    }
  }
}

/** One transaction for several callers' outcomes; each caller's result, in order. */
async function applyBatch(deps: Pick<Deps, 'db' | 'config' | 'logger'>, groups: ReportedOutcome[][]): Promise<Result[]> {
  const { db, config } = deps;
  const results = groups.map(() => ({ matched: 0, applied: 0 }));
  const outcomes = groups.flat();
  const groupOf = groups.flatMap((g, i) => g.map(() => i));
  const rows = await findRows(db, await secret(db, 'tracking'), outcomes);
  const matched = outcomes.flatMap((o, i) => (rows[i] ? [{ o, row: rows[i], group: groupOf[i] }] : []));
  for (const m of matched) results[m.group].matched += 1;
  if (matched.length === 0) return results;
  await db.transaction(async (trx) => {
    // One report per (row, kind): the same report received twice (SMTP retries, a mailbox read
    // again, a webhook retried) inserts nothing the second time and so is not applied again.
    const { rows: inserted } = await trx.raw(
      `INSERT INTO bounce_reports (user_id, delivery_id, kind, source, status, diagnostic, raw)
       SELECT v.user_id, v.delivery_id, v.kind, v.source, v.status, v.diagnostic, decode(v.raw, 'base64')
       FROM json_to_recordset(?::json)
         AS v(user_id integer, delivery_id bigint, kind text, source text, status text, diagnostic text, raw text, n bigint)
       ORDER BY v.n
       ON CONFLICT (user_id, delivery_id, kind) DO NOTHING
       RETURNING id, user_id, delivery_id, kind`,
      [
        JSON.stringify(
          matched.map(({ o, row }, n) => ({
            n,
            user_id: row.user_id,
            delivery_id: row.id,
            kind: o.kind,
            source: o.source,
            status: o.status?.slice(0, 20) ?? null,
            diagnostic: o.diagnostic.slice(0, 2000),
            raw: keptRaw(o.raw),
          })),
        ),
      ],
    );
    const fresh = new Map<string, number>();
    for (const r of inserted as Array<{ id: number; user_id: number; delivery_id: number; kind: string }>) {
      fresh.set(`${r.user_id}:${r.delivery_id}:${r.kind}`, r.id);
    }
    const applied: Applied[] = [];
    for (const { o, row, group } of matched) {
      const k = `${row.user_id}:${row.id}:${o.kind}`;
      const reportId = fresh.get(k);
      if (reportId === undefined) continue;
      fresh.delete(k); // the same report twice in one batch: the first one applies
      applied.push({ o, row, reportId });
      results[group].applied += 1;
    }
    await recordMessageEvents(
      trx,
      applied.map(({ o, row }) =>
        eventOf(o, { userId: row.user_id, deliveryId: row.id, ...sourceRef(row), email: row.email }),
      ),
    );
    await applyPolicy(trx, config, applied);
  });
  return results;
}
