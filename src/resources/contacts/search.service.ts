import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { notFound1 } from '../../http/errors';
import { listRows, type Listed, type Paging } from '../../http/pagination';
import { scoped } from '../shared/crud';
import { liveContacts, listRecord, type ContactRow } from './contacts.service';
import { loadCustomFields } from './custom-values';

/** What GET /contacts/search looks for: `q` in an address or a name, optionally in one contact type. */
export interface ContactSearch {
  q: string;
  contactTypeId?: number;
}

/** Without ?page= or ?per_page=, the first 50: a search never returns a whole million-contact list. */
export const SEARCH_DEFAULT_PAGING: Paging = { page: 1, perPage: 50 };

/**
 * The three columns as one text, as migration 202612280200 indexes it with pg_trgm (written the
 * same way: the planner matches an expression index by its expression).
 */
const JOINED = `(c.email || ' ' || c.first_name || ' ' || c.last_name)`;
/** The same text written otherwise, so that the planner never tries the index with it. */
const JOINED_UNINDEXED = `concat_ws(' ', c.email, c.first_name, c.last_name)`;

/** pg_trgm takes its trigrams from 3 characters in a row: a shorter string cannot use the index. */
const TRIGRAM_MIN = 3;

const likeEscape = (v: string) => v.replace(/[\\%_]/g, (ch) => `\\${ch}`);

/**
 * Contacts whose address, first name or last name contains `q`, case-insensitively.
 *
 * The columns are joined by spaces, so a `q` without a space is in the joined text exactly when
 * it is in one of the columns: one ILIKE per row decides. A `q` with a space could span two
 * columns (`com Ada`), so each column is then tested as well.
 *
 * Planner notes (1,000,000 contacts in one account, 2 cores; bench/dashboard.ts):
 * - `q` of 3 characters or more: the trigram GIN index gives the candidates and the page and
 *   the total read only them: 17–33 ms for ≈100 matches. What it costs grows with the number
 *   of matches, since the total counts them all: ≈40 ms for 11,000 matches, ≈1.5 s when all
 *   1,000,000 match (`bench.test`; the page itself, newest first, stays under 1 ms).
 * - `q` of 1–2 characters has no trigram (a GIN scan of the whole index would cost more than
 *   the table, hence the unindexed spelling): the page walks the id index newest first and
 *   stops once it has the page, and the total is a parallel scan of the account's contacts,
 *   ≈0.7 s at 1,000,000 contacts on a busy machine, proportional to the account's size.
 * - Without pg_trgm (the migration could not create it) every query takes the second path.
 */
function matching(query: Knex.QueryBuilder, q: string): Knex.QueryBuilder {
  const pattern = `%${likeEscape(q)}%`;
  query.whereRaw(`${q.length >= TRIGRAM_MIN ? JOINED : JOINED_UNINDEXED} ILIKE ?`, [pattern]);
  if (!q.includes(' ')) return query;
  return query.where((w) => w.whereRaw('c.email ILIKE ?', [pattern]).orWhereRaw('c.first_name ILIKE ?', [pattern]).orWhereRaw('c.last_name ILIKE ?', [pattern]));
}

/**
 * Newest first. For a `q` the index serves, ordered by `c.id + 0`: the same order, which the
 * id index cannot give, so the planner takes the trigram candidates and sorts them. Ordered
 * by `c.id`, it would walk the id index backwards hoping to meet a page of matches early (its
 * estimate for the ILIKE is ≈0.16 % of rows), and read all 1,000,000 contacts to find ≈100
 * matches: 4 s instead of 20 ms (measured). A short `q` keeps that walk: there it is the best
 * plan when many match, and no worse than the total's scan when few do.
 */
function newestFirst(query: Knex.QueryBuilder, q: string): Knex.QueryBuilder {
  return q.length >= TRIGRAM_MIN ? query.orderByRaw('c.id + 0 DESC') : query.orderBy('c.id', 'desc');
}

/**
 * GET /contacts/search: one page of the account's live contacts matching `q` (newest first, in
 * the list's record shape), with the total. Another account's or a deleted contact type: NF1.
 */
export async function searchContacts(ctx: Ctx, search: ContactSearch, paging: Paging = SEARCH_DEFAULT_PAGING): Promise<Listed<ReturnType<typeof listRecord>>> {
  const { contactTypeId } = search;
  if (contactTypeId !== undefined) {
    const type = await scoped(ctx, 'contact_types').where({ id: contactTypeId }).whereNull('deleted_at').first('id');
    if (!type) throw notFound1();
  }
  const inType = (query: Knex.QueryBuilder) => (contactTypeId === undefined ? query : query.where('c.contact_type_id', contactTypeId));
  const count = ctx.db('contacts as c').where('c.user_id', ctx.userId).whereNull('c.deleted_at');
  const [listed, fields] = await Promise.all([
    listRows<ContactRow>(newestFirst(matching(inType(liveContacts(ctx, true)), search.q), search.q), matching(inType(count), search.q), paging),
    loadCustomFields(ctx),
  ]);
  return { ...listed, rows: listed.rows.map((r) => listRecord(r, fields)) };
}
