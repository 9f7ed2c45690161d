import type { Knex } from 'knex';

/**
 * Every write to a contact type's contacts bumps its `contacts_version` in the same
 * transaction, so a cached segment count tagged with an older version is known to be stale
 * (see migrations/202611220200_segments.ts). `typeIds` undefined = all the account's types.
 */
export async function bumpContactsVersion(db: Knex, userId: number, typeIds?: number[]): Promise<void> {
  const q = db('contact_types').where('user_id', userId);
  if (typeIds) {
    if (typeIds.length === 0) return;
    q.whereIn('id', [...new Set(typeIds)]);
  }
  await q.increment('contacts_version', 1);
}
