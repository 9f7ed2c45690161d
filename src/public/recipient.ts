import type { Knex } from 'knex';
import { secret } from '../db/secrets';
import { lookupToken } from '../recipient-token';

/**
 * The recipient row behind a link's token, as a condition on `deliveries` (alias `alias`):
 * a signed token names the row by its key (primary-key lookup), a token of a row written
 * before signed tokens by its stored value. Undefined for anything else, without a query.
 */
export async function recipientCondition(
  db: Knex,
  raw: string,
  alias = 'deliveries',
): Promise<((q: Knex.QueryBuilder) => Knex.QueryBuilder) | undefined> {
  const found = lookupToken(await secret(db, 'tracking'), raw);
  if (!found) return undefined;
  if (found.by === 'key') return (q) => q.where({ [`${alias}.id`]: found.ref.deliveryId, [`${alias}.user_id`]: found.ref.userId });
  return (q) => q.where(`${alias}.token`, found.token);
}
