import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { invalid, notFound1, notFound2, type NotFound } from '../../http/errors';
import { listRows, type Listed, type Paging } from '../../http/pagination';
import { keysetBatches } from '../../http/stream';
import { deleteById, scoped } from '../shared/crud';
import { parseRules, type Rule, type RuleField } from '../../contacts/segment-rules';
import type { SegmentInput, StoreRecipientInput } from './segments.schemas';
import { contactMembers, countMembers, loadRuleFields, recipientMembers, storedRules, type SegmentRow } from '../../contacts/segments.sql';

const RECORD_FIELDS = [
  'id',
  'user_id',
  'contact_type_id',
  'segment_name',
  'select_field',
  'select_operator',
  'value',
  'query_type',
  'deleted_at',
  'created_at',
  'updated_at',
] as const;

export async function findSegment(ctx: Ctx, id: number, notFound: NotFound = notFound1, db: Knex = ctx.db): Promise<SegmentRow> {
  const seg = (await scoped(ctx, 'segments', db).where({ id }).whereNull('deleted_at').first()) as SegmentRow | undefined;
  if (!seg) throw notFound();
  return seg;
}

/**
 * Member counts, from each segment's cache while its key is current (see src/contacts/segments.sql.ts),
 * else counted — all stale segments in one statement — and cached again: a constant number
 * of queries however many segments are listed (one when every count is cached).
 */
async function memberCounts(ctx: Ctx, segs: SegmentRow[], fields: Map<number, RuleField>): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  const typeIds = [...new Set(segs.map((s) => s.contact_type_id))];
  const versions = new Map<number, number>(
    (await scoped(ctx, 'contact_types').whereIn('id', typeIds).select('id', 'contacts_version')).map((t: { id: number; contacts_version: number }) => [
      t.id,
      t.contacts_version,
    ]),
  );
  const stale: Array<{ seg: SegmentRow; rules: Rule[] }> = [];
  for (const seg of segs) {
    const rules = storedRules(seg, fields);
    if (!rules) counts.set(seg.id, 0);
    else if (seg.members_count !== null && seg.members_key === `${versions.get(seg.contact_type_id)}:${seg.revision}`) counts.set(seg.id, seg.members_count);
    else stale.push({ seg, rules });
  }
  const fresh = await countMembers(ctx.db, stale);
  if (fresh.size === 0) return counts;
  for (const [id, { count }] of fresh) counts.set(id, count);
  await ctx.db.raw(
    `UPDATE segments s SET members_count = v.count, members_key = v.key
     FROM json_to_recordset(?::json) AS v(id integer, count integer, key text)
     WHERE s.id = v.id AND s.user_id = ?`,
    [JSON.stringify([...fresh].map(([id, v]) => ({ id, ...v }))), ctx.userId],
  );
  return counts;
}

function toRecord(seg: SegmentRow, count: number) {
  const out: Record<string, unknown> = {};
  for (const f of RECORD_FIELDS) out[f] = seg[f];
  return { ...out, segment_emails_count: count };
}

export async function listSegments(ctx: Ctx, paging?: Paging): Promise<Listed<ReturnType<typeof toRecord>>> {
  const base = scoped(ctx, 'segments').whereNull('deleted_at');
  const [listed, fields] = await Promise.all([listRows<SegmentRow>(base.clone().select('*').orderBy('id', 'desc'), base, paging), loadRuleFields(ctx)]);
  const counts = await memberCounts(ctx, listed.rows, fields);
  return { ...listed, rows: listed.rows.map((seg) => toRecord(seg, counts.get(seg.id)!)) };
}

export async function getSegment(ctx: Ctx, id: number) {
  const [seg, fields] = await Promise.all([findSegment(ctx, id), loadRuleFields(ctx)]);
  return toRecord(seg, (await memberCounts(ctx, [seg], fields)).get(seg.id)!);
}

/** The DB-dependent checks of save/update, reported together like the form rules; the rules once they pass. */
async function checkSegment(ctx: Ctx, input: SegmentInput): Promise<Rule[]> {
  const [type, fields] = await Promise.all([
    scoped(ctx, 'contact_types').where({ id: input.contact_type_id }).whereNull('deleted_at').first('id'),
    loadRuleFields(ctx),
  ]);
  const parsed = parseRules(input, fields);
  const errors = 'errors' in parsed ? { ...parsed.errors } : {};
  if (!type) errors.contact_type_id = ['The selected contact type id is invalid.'];
  if (Object.keys(errors).length || !('rules' in parsed)) throw invalid(errors);
  return parsed.rules;
}

function columns(input: SegmentInput) {
  const n = input.select_field.length;
  return {
    segment_name: input.segment_name,
    contact_type_id: input.contact_type_id,
    select_field: JSON.stringify(input.select_field),
    select_operator: JSON.stringify(input.select_operator.map((o) => o.toLowerCase())),
    value: JSON.stringify(Array.from({ length: n }, (_, i) => input.value?.[i] ?? '')),
    query_type: input.query_type ?? null,
  };
}

export async function saveSegment(ctx: Ctx, input: SegmentInput): Promise<number> {
  await checkSegment(ctx, input);
  const [row] = await ctx.db('segments').insert({ user_id: ctx.userId, ...columns(input) }).returning(['id']);
  return row.id as number;
}

export async function updateSegment(ctx: Ctx, id: number, input: SegmentInput): Promise<void> {
  await findSegment(ctx, id);
  await checkSegment(ctx, input);
  await scoped(ctx, 'segments')
    .where({ id })
    .whereNull('deleted_at')
    .update({ ...columns(input), revision: ctx.db.raw('revision + 1'), members_count: null, updated_at: ctx.db.fn.now() });
}

/**
 * How many members a segment would have with these rules, before they are saved (the
 * dashboard's live count): the checks of save, then the count the segment list uses.
 * `segmentId`: the segment being edited, whose hand-added recipients count too.
 */
export async function countSegmentRules(ctx: Ctx, input: SegmentInput, segmentId?: number): Promise<number> {
  if (segmentId !== undefined) await findSegment(ctx, segmentId);
  const rules = await checkSegment(ctx, input);
  const seg = { id: segmentId ?? 0, user_id: ctx.userId, contact_type_id: input.contact_type_id, query_type: input.query_type ?? null } as SegmentRow;
  return (await countMembers(ctx.db, [{ seg, rules }])).get(seg.id)!.count;
}

/** Soft delete; the confirmation goes in `errors` (spec rule 3, in the router). */
export function deleteSegment(ctx: Ctx, id: number): Promise<void> {
  return deleteById(ctx, 'segments', id, { notFound: notFound1, soft: true });
}

/** Adds a recipient by hand; an address already added to the segment is left as it is. */
export async function storeRecipient(ctx: Ctx, input: StoreRecipientInput): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const seg = await scoped(ctx, 'segments', trx).where({ id: input.segment_id }).whereNull('deleted_at').forUpdate().first('id');
    if (!seg) throw invalid({ segment_id: ['The selected segment id is invalid.'] });
    const inserted = await trx.raw(
      `INSERT INTO segment_recipients (user_id, segment_id, first_name, last_name, email)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT (segment_id, lower(email), user_id) DO NOTHING RETURNING id`,
      [ctx.userId, input.segment_id, input.first_name, input.last_name, input.email],
    );
    if (inserted.rows.length) await scoped(ctx, 'segments', trx).where({ id: input.segment_id }).increment('revision', 1);
  });
}

/** Deletes a hand-added recipient of a live segment of the account. */
export async function deleteRecipient(ctx: Ctx, id: number): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = await scoped(ctx, 'segment_recipients', trx)
      .join('segments as s', (j) => j.on('s.id', 'segment_recipients.segment_id').andOn('s.user_id', 'segment_recipients.user_id'))
      .whereNull('s.deleted_at')
      .where('segment_recipients.id', id)
      .first('segment_recipients.id', 'segment_recipients.segment_id');
    if (!row) throw notFound1();
    await scoped(ctx, 'segment_recipients', trx).where({ id }).delete();
    await scoped(ctx, 'segments', trx).where({ id: row.segment_id }).increment('revision', 1);
  });
}

type Member = Record<string, unknown> & { first_name: string | null; last_name: string | null };

function memberRecord(segmentId: number) {
  return (m: Member) => {
    const { id, user_id, contact_id, ...rest } = m;
    return {
      id,
      user_id,
      segment_id: segmentId,
      contact_id,
      ...rest,
      fullname: `${m.first_name ?? ''} ${m.last_name ?? ''}`.trim(),
    };
  };
}

async function membersOf(ctx: Ctx, segmentId: number) {
  const [seg, fields] = await Promise.all([findSegment(ctx, segmentId, notFound2), loadRuleFields(ctx)]);
  return { seg, rules: storedRules(seg, fields) };
}

/**
 * One page of members: hand-added recipients first (newest first; there are few), then
 * matching contacts newest first.
 */
export async function listMembersPage(ctx: Ctx, segmentId: number, paging: Paging) {
  const { seg, rules } = await membersOf(ctx, segmentId);
  if (!rules) return { rows: [], pagination: { page: paging.page, per_page: paging.perPage, total: 0 } };
  const offset = (paging.page - 1) * paging.perPage;
  const extra = (await recipientMembers(ctx.db, seg, rules)) as Member[];
  const fromExtra = extra.slice(offset, offset + paging.perPage);
  const fromContacts =
    fromExtra.length < paging.perPage
      ? ((await contactMembers(ctx.db, seg, rules)
          .limit(paging.perPage - fromExtra.length)
          .offset(Math.max(0, offset - extra.length))) as Member[])
      : [];
  const total = (await memberCounts(ctx, [seg], await loadRuleFields(ctx))).get(seg.id)!;
  return {
    rows: [...fromExtra, ...fromContacts].map(memberRecord(seg.id)),
    pagination: { page: paging.page, per_page: paging.perPage, total },
  };
}

/** Every member in batches (hand-added first, then contacts by keyset), for the streamed list. */
export async function memberBatches(ctx: Ctx, segmentId: number, batchSize = 5000): Promise<AsyncIterable<unknown[]>> {
  const { seg, rules } = await membersOf(ctx, segmentId);
  const toRecord = memberRecord(seg.id);
  return (async function* () {
    if (!rules) return;
    yield ((await recipientMembers(ctx.db, seg, rules)) as Member[]).map(toRecord);
    const batches = keysetBatches(async (before) => {
      const q = contactMembers(ctx.db, seg, rules).limit(batchSize);
      if (before !== undefined) q.where('c.id', '<', before);
      return (await q) as Array<Member & { id: number }>;
    }, batchSize);
    for await (const rows of batches) yield rows.map(toRecord);
  })();
}
