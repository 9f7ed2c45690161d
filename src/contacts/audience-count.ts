import type { Knex } from 'knex';
import { erasureCheck, suppressionJoins } from '../suppression';
import type { AudienceRef } from './audience-ref';
import { extraRecipients, loadRuleFields, matchingContacts, storedRules, type SegmentRow } from './segments.sql';

/**
 * How many addresses a send to these sources would reach, as the fan-out writes them
 * (src/delivery/audience.ts): a contact type's live contacts, a segment's members by its rules
 * (matchingContacts) and its hand-added recipients, each address once (case-insensitive); an
 * address of an excluded source is no recipient. Of those, `suppressed` are the ones the
 * suppression rule refuses (src/suppression, with the send's unsubscribe group): they are written
 * as dropped, not sent. A segment whose rules name a deleted field matches nobody, as in the
 * fan-out; a source of another account or a deleted one reaches nobody.
 *
 * One statement over the account's rows: a (parallel) scan of its contacts for large lists,
 * like a segment's count (src/contacts/segments.sql.ts).
 */
export interface AudienceCount {
  recipients: number;
  suppressed: number;
}

async function addressesOf(db: Knex, userId: number, refs: AudienceRef[]): Promise<Knex.QueryBuilder[]> {
  const out: Knex.QueryBuilder[] = [];
  const fields = refs.some((r) => r.table === 'segments_') ? await loadRuleFields({ userId, db }) : new Map();
  for (const ref of refs) {
    if (ref.table === 'contacts_') {
      out.push(db('contacts as c').where({ 'c.user_id': userId, 'c.contact_type_id': Number(ref.id) }).whereNull('c.deleted_at').select(db.raw('lower(c.email) AS email')));
      continue;
    }
    const seg = (await db('segments').where({ id: Number(ref.id), user_id: userId }).whereNull('deleted_at').first()) as SegmentRow | undefined;
    const rules = seg && storedRules(seg, fields);
    if (!seg || !rules) continue;
    out.push(matchingContacts(db, seg, rules).select(db.raw('lower(c.email) AS email')), extraRecipients(db, seg, rules).select(db.raw('lower(r.email) AS email')));
  }
  return out;
}

export async function countAudience(db: Knex, userId: number, sources: AudienceRef[], exclusions: AudienceRef[], groupId: number | null): Promise<AudienceCount> {
  const included = await addressesOf(db, userId, sources);
  if (included.length === 0) return { recipients: 0, suppressed: 0 };
  const excluded = await addressesOf(db, userId, exclusions);
  const union = (parts: Knex.QueryBuilder[]) => db.raw(parts.map(() => '(?)').join(' UNION '), parts);
  const suppressed = suppressionJoins(db, userId, groupId, 'a.email', await erasureCheck(db, userId));
  const audience = excluded.length ? db.raw('(?) EXCEPT (?)', [union(included), union(excluded)]) : union(included);
  const { rows } = await db.raw(`SELECT count(*)::int AS recipients, count(${suppressed.reason})::int AS suppressed FROM (?) a ?`, [audience, suppressed.joins]);
  return rows[0] as AudienceCount;
}
