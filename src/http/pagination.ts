import type { Knex } from 'knex';
import { invalid } from './errors';

export interface Paging {
  page: number;
  perPage: number;
}

export const MAX_PER_PAGE = 1000;

/**
 * Lists return everything (spec). `?page=N&per_page=M` is Herald's optional extension:
 * one page, plus `message.pagination {page, per_page, total}`.
 */
export function readPaging(query: Record<string, unknown>): Paging | undefined {
  const { page, per_page: perPage } = query;
  if (page === undefined && perPage === undefined) return undefined;
  const errors: Record<string, string[]> = {};
  const p = page === undefined ? 1 : Number(page);
  const pp = perPage === undefined ? 50 : Number(perPage);
  if (!Number.isInteger(p) || p < 1 || p > 1_000_000) errors.page = ['The page must be an integer between 1 and 1000000.'];
  if (!Number.isInteger(pp) || pp < 1 || pp > MAX_PER_PAGE)
    errors.per_page = [`The per page must be an integer between 1 and ${MAX_PER_PAGE}.`];
  if (Object.keys(errors).length) throw invalid(errors);
  return { page: p, perPage: pp };
}

export interface Listed<T> {
  rows: T[];
  pagination?: { page: number; per_page: number; total: number };
}

/**
 * Runs a list query whole, or one page of it with the total counted in SQL.
 * `countQuery` must select the same rows (without ORDER BY or extra columns).
 */
export async function listRows<T>(
  query: Knex.QueryBuilder,
  countQuery: Knex.QueryBuilder,
  paging: Paging | undefined,
): Promise<Listed<T>> {
  if (!paging) return { rows: (await query) as T[] };
  const [rows, total] = await Promise.all([
    query.clone().limit(paging.perPage).offset((paging.page - 1) * paging.perPage),
    countQuery
      .clone()
      .clearSelect()
      .clearOrder()
      .count<{ count: number }[]>({ count: '*' })
      .first(),
  ]);
  return {
    rows: rows as T[],
    pagination: { page: paging.page, per_page: paging.perPage, total: Number(total?.count ?? 0) },
  };
}

/** The list payload: `{ [key]: rows }`, plus `pagination` when a page was asked for. */
export function listPayload<T>(key: string, listed: Listed<T>): Record<string, unknown> {
  return listed.pagination ? { [key]: listed.rows, pagination: listed.pagination } : { [key]: listed.rows };
}
