import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { compileRules, type Rule } from './segment-rules';

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
    .where('r.segment_id', seg.id)
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
 * The member count and the cache key it belongs to, in one statement (one snapshot): the
 * key is the contact type's contacts_version and the segment's revision.
 */
export async function countMembers(ctx: Ctx, seg: SegmentRow, rules: Rule[]): Promise<{ count: number; key: string }> {
  const db = ctx.db;
  const contacts = matchingContacts(db, seg, rules).count('*');
  const extra = extraRecipients(db, seg, rules).count('*');
  const row = await db
    .select(
      db.raw('(SELECT contacts_version FROM contact_types WHERE id = ?) AS version', [seg.contact_type_id]),
      db.raw('(SELECT revision FROM segments WHERE id = ?) AS revision', [seg.id]),
      db.raw('(?) + (?) AS count', [contacts, extra]),
    )
    .first();
  return { count: Number(row.count), key: `${row.version}:${row.revision}` };
}
