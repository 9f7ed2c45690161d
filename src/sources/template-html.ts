import type { Knex } from 'knex';

/**
 * The design a `template_id` names: one of Herald's built-ins (`templates`, shared, ids below
 * 1000) or one of the account's saved designs (`designs`, ids from 1001, src/resources/designs).
 * Left-joins both to the row of alias `row` (which has `template_id` and `user_id`) as `tpl` and
 * `dsg`; select `TEMPLATE_HTML` for the HTML. The saved design is joined by the account too, so
 * the statement stays on the account's node on Citus; a deleted design still resolves (what
 * already names it keeps its HTML).
 */
export function joinTemplate(query: Knex.QueryBuilder, row: string): Knex.QueryBuilder {
  return query
    .leftJoin('templates as tpl', 'tpl.id', `${row}.template_id`)
    .leftJoin('designs as dsg', (j) => j.on('dsg.user_id', `${row}.user_id`).andOn('dsg.id', `${row}.template_id`));
}

/** The joined design's HTML (null when `template_id` names neither). */
export const TEMPLATE_HTML = 'coalesce(tpl.html_code, dsg.html_code) AS html_code';
