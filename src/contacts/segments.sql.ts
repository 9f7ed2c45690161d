import type { Knex } from 'knex';
import type { Ctx } from '../context';
import { accountFields } from './fields';
import { compileRules, parseRules, type Rule, type RuleField } from './segment-rules';

export interface SegmentRow {
  id: number;
  user_id: number;
  contact_type_id: number;
  segment_name: string;
  select_field: string[];
  select_operator: string[];
  value: string[];
  query_type: string | null;
  revision: number;
  members_count: number | null;
  members_key: string | null;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * The live contacts of the segment's type that match its rules (alias `c`). The single
 * source of segment membership: the member list, the count and every send use it.
 *
 * Planner notes (EXPLAIN ANALYZE on 1,000,000 contacts, bench/segment.ts, 2 cores):
 * - The count is one parallel seq scan (Gather, 2 workers at the default
 *   max_parallel_workers_per_gather) evaluating the rules per row: ≈0.3–0.4 s whatever the
 *   rules, so no rule needs an index to meet the 2 s target.
 * - No index on purpose. Custom values sit in custom_fields under per-account field ids, so
 *   no fixed expression index can exist for them. A pg_trgm GIN index on email (the
 *   extension ships with the system PostgreSQL 15 and the embedded one) takes a selective
 *   `contains` count from 0.40 s to 0.05 s, but serves one column and doubles what writing
 *   contacts costs (1M-row insert 6.6 s → 14.1 s, +57 MB): not worth it while the seq scan
 *   is this far under target.
 * - The first page (ORDER BY id DESC LIMIT n) walks the primary key backwards and stops at
 *   n matches: 20 ms for a segment of 0.17 % of contacts; a segment with almost no members
 *   reads them all, ≈0.9 s single-process, the worst case.
 */
export function matchingContacts(db: Knex, seg: SegmentRow, rules: Rule[]): Knex.QueryBuilder {
  return db('contacts as c')
    .where('c.user_id', seg.user_id)
    .where('c.contact_type_id', seg.contact_type_id)
    .whereNull('c.deleted_at')
    .where(compileRules(db, rules, seg.query_type));
}

/** Hand-added recipients of the segment that are not already members as contacts. */
export function extraRecipients(db: Knex, seg: SegmentRow, rules: Rule[]): Knex.QueryBuilder {
  return db('segment_recipients as r')
    .where({ 'r.user_id': seg.user_id, 'r.segment_id': seg.id })
    .whereNotExists(matchingContacts(db, seg, rules).select(db.raw('1')).whereRaw('lower(c.email) = lower(r.email)'));
}

const CONTACT_MEMBER = [
  'c.id',
  'c.user_id',
  'c.id as contact_id',
  'c.first_name',
  'c.last_name',
  'c.email',
  'co.name as country',
  'c.state',
  'c.city',
  'c.address_line1',
  'c.created_at',
  'c.updated_at',
];
const RECIPIENT_MEMBER = [
  'r.id',
  'r.user_id',
  'r.contact_id',
  'r.first_name',
  'r.last_name',
  'r.email',
  'r.country',
  'r.state',
  'r.city',
  'r.address_line1',
  'r.created_at',
  'r.updated_at',
];

export function contactMembers(db: Knex, seg: SegmentRow, rules: Rule[]): Knex.QueryBuilder {
  return matchingContacts(db, seg, rules)
    .leftJoin('countries as co', 'co.id', 'c.country_id')
    .select(CONTACT_MEMBER)
    .orderBy('c.id', 'desc');
}

export function recipientMembers(db: Knex, seg: SegmentRow, rules: Rule[]): Knex.QueryBuilder {
  return extraRecipients(db, seg, rules).select(RECIPIENT_MEMBER).orderBy('r.id', 'desc');
}

/**
 * The member counts of several segments and the cache keys they belong to, in one statement
 * (one snapshot): each key is the contact type's contacts_version and the segment's revision.
 * Rule-less segments (a deleted field) are left out by the caller. Returned by segment id.
 */
export async function countMembers(
  db: Knex,
  segments: Array<{ seg: SegmentRow; rules: Rule[] }>,
): Promise<Map<number, { count: number; key: string }>> {
  const out = new Map<number, { count: number; key: string }>();
  if (segments.length === 0) return out;
  const columns = segments.flatMap(({ seg, rules }, i) => [
    db.raw(`(SELECT contacts_version FROM contact_types WHERE id = ? AND user_id = ?) AS v${i}`, [seg.contact_type_id, seg.user_id]),
    db.raw(`(SELECT revision FROM segments WHERE id = ? AND user_id = ?) AS r${i}`, [seg.id, seg.user_id]),
    db.raw(`(?) + (?) AS c${i}`, [matchingContacts(db, seg, rules).count('*'), extraRecipients(db, seg, rules).count('*')]),
  ]);
  const row = (await db.select(columns).first()) as Record<string, string | number>;
  segments.forEach(({ seg }, i) => out.set(seg.id, { count: Number(row[`c${i}`]), key: `${row[`v${i}`]}:${row[`r${i}`]}` }));
  return out;
}

/** Reserved fields and the account's custom fields, by id: what a rule may name. */
export async function loadRuleFields(ctx: Ctx): Promise<Map<number, RuleField>> {
  const rows = (await accountFields(ctx).select('id', 'field_name', 'field_type', 'is_reserved')) as RuleField[];
  return new Map(rows.map((f) => [f.id, f]));
}

/** The stored rules, re-parsed against the current fields (a deleted field matches nobody). */
export function storedRules(seg: SegmentRow, fields: Map<number, RuleField>): Rule[] | undefined {
  const parsed = parseRules(seg, fields);
  return 'rules' in parsed ? parsed.rules : undefined;
}
