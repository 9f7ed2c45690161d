import type { Knex } from 'knex';
import { recordMessageEvents } from '../events/record';
import type { DropReason } from '../events/types';
import { erasureCheck, suppressionJoins } from '../suppression';
import { extraRecipients, loadRuleFields, matchingContacts, storedRules, type SegmentRow } from '../contacts/segments.sql';
import type { AudienceRef } from '../contacts/audience-ref';
import { fanOutChunkSql } from '../deliveries/fanout';

/**
 * The audience of a send, written as recipient rows in set-based SQL. Sources (contact types
 * and segments) are walked in order with keyset paging on the contact id, one chunk per
 * statement (`INSERT … SELECT`, see src/deliveries/fanout.ts for when it is `ON CONFLICT DO NOTHING`); the
 * unique index on (send, address) keeps an address from being written twice. Exclusions are
 * `NOT EXISTS` anti-joins (hash anti-joins over the chunk in the plans measured). An address the
 * suppression rule refuses (src/suppression: global unsubscribers, the send's group) is written
 * as a `dropped` row with its reason in `last_error`, and recorded as a `dropped` event: the
 * send's history says why it was not sent, instead of a silent gap. Only queued rows count as
 * triggered.
 *
 * A row holds the address and the contact it came from, nothing more: the worker reads the
 * contact's placeholder values when it claims the row (src/deliveries/queue.ts), so a contact
 * edited between fan-out and sending gets the message with its values as they are then.
 * Hand-added segment recipients are no contact: their few values are copied into `data`.
 */
export interface FanoutTarget {
  userId: number;
  singleSendId: number;
  groupId: number;
  sources: AudienceRef[];
  exclusions: AudienceRef[];
  /** An A/B send's audience is written held: its test group is queued once it is complete (src/ab/split.ts). */
  hold: boolean;
}

/** Where the fan-out stands: source index, last contact id written, hand-added done. */
export interface FanoutCursor {
  source: number;
  after: number;
  extraDone?: boolean;
}

/**
 * Chunk sizes: the first chunk is small so that sending starts at once (a chunk's rows can be
 * claimed once it commits); each later one is as large as everything written so far, up to
 * MAX_CHUNK, so a large audience is written in few statements and commits (bench/README.md,
 * "Fan-out").
 */
export const FIRST_CHUNK = 2_000;
export const MAX_CHUNK = 50_000;

export function chunkSize(written: number): number {
  return Math.min(MAX_CHUNK, Math.max(FIRST_CHUNK, written));
}

const RECIPIENT_DATA = `jsonb_build_object(
  'first_name', coalesce(r.first_name, ''), 'last_name', coalesce(r.last_name, ''),
  'country', coalesce(r.country, ''), 'state', coalesce(r.state, ''), 'city', coalesce(r.city, ''),
  'address_line1', coalesce(r.address_line1, ''))`;

async function loadSegment(db: Knex, userId: number, id: number): Promise<SegmentRow | undefined> {
  return (await db('segments').where({ id, user_id: userId }).whereNull('deleted_at').first()) as SegmentRow | undefined;
}

/**
 * `NOT EXISTS` clauses for the send's exclusions (alias `src` = candidate): an excluded address
 * is no recipient at all. Suppressed addresses (src/suppression) are recipients that are not
 * sent: they get a `dropped` row and event (fanOutChunkSql).
 */
async function exclusions(db: Knex, t: FanoutTarget): Promise<Knex.Raw[]> {
  const clauses: Knex.Raw[] = [];
  const fields = await loadRuleFields({ userId: t.userId, db });
  for (const ex of t.exclusions) {
    if (ex.table === 'contacts_') {
      clauses.push(
        db.raw(
          `NOT EXISTS (SELECT 1 FROM contacts x WHERE x.contact_type_id = ? AND x.user_id = ? AND x.deleted_at IS NULL AND lower(x.email) = lower(src.email))`,
          [Number(ex.id), t.userId],
        ),
      );
      continue;
    }
    const seg = await loadSegment(db, t.userId, Number(ex.id));
    const rules = seg && storedRules(seg, fields);
    if (!seg || !rules) continue;
    const members = matchingContacts(db, seg, rules).select(db.raw('1')).whereRaw('lower(c.email) = lower(src.email)');
    const extra = db('segment_recipients as r').where('r.segment_id', seg.id).select(db.raw('1')).whereRaw('lower(r.email) = lower(src.email)');
    clauses.push(db.raw('NOT EXISTS (?)', [members]), db.raw('NOT EXISTS (?)', [extra]));
  }
  return clauses;
}

/** The next chunk of a source as (key, contact_id, email, data), ordered by contact id. */
async function chunkQuery(
  db: Knex,
  t: FanoutTarget,
  cursor: FanoutCursor,
  size: number,
): Promise<{ q: Knex.QueryBuilder; keyset: boolean } | undefined> {
  const ref = t.sources[cursor.source];
  const contactColumns = ['c.id as key', 'c.id as contact_id', 'c.email', db.raw('NULL::jsonb AS data')];
  if (ref.table === 'contacts_') {
    const q = db('contacts as c')
      .where({ 'c.user_id': t.userId, 'c.contact_type_id': Number(ref.id) })
      .whereNull('c.deleted_at')
      .where('c.id', '>', cursor.after)
      .orderBy('c.id')
      .limit(size)
      .select(contactColumns);
    return { q, keyset: true };
  }
  const seg = await loadSegment(db, t.userId, Number(ref.id));
  const rules = seg && storedRules(seg, await loadRuleFields({ userId: t.userId, db }));
  if (!seg || !rules) return undefined;
  if (!cursor.extraDone) {
    // Hand-added recipients first, all at once (there are few).
    const q = extraRecipients(db, seg, rules).select('r.id as key', db.raw('NULL::integer AS contact_id'), 'r.email', db.raw(`${RECIPIENT_DATA} AS data`));
    return { q, keyset: false };
  }
  const q = matchingContacts(db, seg, rules).where('c.id', '>', cursor.after).orderBy('c.id').limit(size).select(contactColumns);
  return { q, keyset: true };
}

const UNIQUE_VIOLATION = '23505';

/**
 * Settings of the chunk's transaction (for the rest of the caller's transaction, too):
 *
 * - No JIT: compiling the statement costs more than it saves. With the per-row suppression
 *   probes this replaced, a 50,000-row chunk was estimated far above jit_above_cost and spent
 *   1.2 s of its 2.2 s compiling (bench/README.md, "Fan-out"); the joins' estimate is below it
 *   today, and a large suppression list or a lower setting should not bring that back.
 * - work_mem 32 MB: the chunk, its sort, the rows returned and the reference check's transition
 *   table (a few MB each at 50,000 rows) stay in memory instead of temporary files; 1,000,000
 *   recipients were written ~10 % faster (10.1–14.4 s against 11.5–15.7 s, pairs of runs).
 */
const CHUNK_SETTINGS = `SELECT set_config('jit', 'off', true), set_config('work_mem', '32MB', true)`;

/**
 * Writes one chunk of the audience (at most `size` candidates) and returns the cursor after
 * it, or `undefined` when the audience is complete. Runs inside the caller's transaction.
 */
export async function fanOutChunk(
  trx: Knex.Transaction,
  t: FanoutTarget,
  cursor: FanoutCursor,
  size: number,
): Promise<{ next?: FanoutCursor; inserted: number }> {
  if (cursor.source >= t.sources.length) return { inserted: 0 };
  const chunk = await chunkQuery(trx, t, cursor, size);
  const skipSource = { next: { source: cursor.source + 1, after: 0 }, inserted: 0 };
  if (!chunk) return skipSource;
  const filters = await exclusions(trx, t);
  const suppressed = suppressionJoins(trx, t.userId, t.groupId, 'src.email', await erasureCheck(trx, t.userId));
  const bindings = [chunk.q, suppressed.joins, ...filters, t.userId, t.singleSendId];
  const write = (db: Knex, skipDuplicates: boolean) => db.raw(fanOutChunkSql(suppressed.reason, filters.length, skipDuplicates, t.hold), bindings);
  await trx.raw(CHUNK_SETTINGS);
  let result;
  if (cursor.source === 0 && chunk.keyset) {
    try {
      // In a savepoint, so that a unique violation leaves the transaction usable for the retry.
      result = await trx.transaction((sp) => write(sp, false));
    } catch (err) {
      if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
      result = await write(trx, true);
    }
  } else {
    result = await write(trx, true);
  }
  const row = result.rows[0] as { last_key: number | null; n: number; inserted: number; dropped: Array<{ id: number; email: string; reason: DropReason }> };
  const inserted = Number(row.inserted);
  await recordMessageEvents(
    trx,
    row.dropped.map((d) => ({
      type: 'dropped' as const,
      userId: t.userId,
      deliveryId: Number(d.id),
      singleSendId: t.singleSendId,
      automationId: null,
      email: d.email,
      data: { reason: d.reason },
    })),
  );
  if (!chunk.keyset) return { next: { ...cursor, extraDone: true }, inserted };
  if (Number(row.n) < size) return { next: { source: cursor.source + 1, after: 0 }, inserted };
  return { next: { ...cursor, after: Number(row.last_key) }, inserted };
}
