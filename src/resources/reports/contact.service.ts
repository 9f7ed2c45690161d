import type { Ctx } from '../../context';

/**
 * An address across the account, for the dashboard's contact page: the lists it is on, the
 * unsubscribe groups and global list it is in. Each lookup goes through an index that starts
 * with the list or group (contacts_type_email_unique, unsubscribe_group_recipients_email_address_unique)
 * or the account (global_unsubscribers_email_address_unique), so an account's size does not matter.
 */

/** The live contacts (one per list) with this address, case-insensitively. */
export function contactsWithAddress(ctx: Ctx, email: string): Promise<Array<{ id: number; contact_type_id: number; list_name: string; first_name: string; last_name: string }>> {
  return ctx
    .db('contacts as c')
    .join('contact_types as t', (j) => j.on('t.id', 'c.contact_type_id').andOn('t.user_id', 'c.user_id'))
    .where({ 'c.user_id': ctx.userId, 't.user_id': ctx.userId })
    .whereNull('c.deleted_at')
    .whereNull('t.deleted_at')
    .whereRaw('lower(c.email) = lower(?)', [email])
    .orderBy('t.name')
    .select('c.id', 'c.contact_type_id', 't.name as list_name', 'c.first_name', 'c.last_name');
}

export interface Memberships {
  groups: Array<{ id: number; group_name: string; since: string }>;
  /** `id`: the global unsubscriber's (DELETE /global-unsubscribes/delete takes it). */
  global_unsubscribe: { id: number; since: string } | null;
}

/** Where the address has unsubscribed: groups (live ones) and the account's global list. */
export async function addressMemberships(ctx: Ctx, email: string): Promise<Memberships> {
  const [groups, global] = await Promise.all([
    ctx
      .db('unsubscribe_group_recipients as r')
      .join('unsubscribe_groups as g', (j) => j.on('g.id', 'r.unsubscribe_groups_id').andOn('g.user_id', 'r.user_id'))
      .where({ 'g.user_id': ctx.userId, 'r.user_id': ctx.userId })
      .whereNull('g.deleted_at')
      .whereRaw('lower(r.email_address) = lower(?)', [email])
      .orderBy('g.group_name')
      .select('g.id', 'g.group_name', 'r.created_at as since'),
    ctx.db('global_unsubscribers').where({ user_id: ctx.userId }).whereRaw('lower(email_address) = lower(?)', [email]).first('id', 'created_at as since'),
  ]);
  return { groups, global_unsubscribe: global ?? null };
}
