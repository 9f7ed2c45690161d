import type { Knex } from 'knex';
import type { Ctx } from '../context';

/**
 * Reserved fields (reference data) and custom fields (the account's) are two tables; the
 * `fields` view shows both with the spec's columns (user_id null and is_reserved 1 for the
 * reserved ones).
 */

const RESERVED = `SELECT id, NULL::integer AS user_id, field_name, field_type, 1::smallint AS is_reserved,
                         NULL::timestamptz AS created_at, NULL::timestamptz AS updated_at FROM reserved_fields`;
const CUSTOM = `SELECT id, user_id, field_name, field_type, 0::smallint AS is_reserved, created_at, updated_at
                FROM custom_fields WHERE user_id = ?`;

/**
 * The reserved fields and the account's custom fields (or the reserved ones only), with the
 * `fields` view's columns, as a table named `fields`. Each table has a filter of its own: the
 * view filtered by `user_id IS NULL OR user_id = ?` would read every account's custom fields
 * on Citus, where one account's rows are found by `user_id = ?` alone.
 */
export function accountFields(ctx: Ctx, which: 'all' | 'reserved' = 'all'): Knex.QueryBuilder {
  return which === 'reserved'
    ? ctx.db.from(ctx.db.raw(`(${RESERVED}) AS fields`))
    : ctx.db.from(ctx.db.raw(`(${RESERVED} UNION ALL ${CUSTOM}) AS fields`, [ctx.userId]));
}
