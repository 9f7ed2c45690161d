import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import type { FieldErrors } from '../../http/errors';
import { liveRows } from './crud';

/**
 * A single send's or automation email's design is a template plus either its own HTML or the
 * JSON of the visual editor, never both (the spec's prohibited_if rule, in Laravel's words).
 */
export function checkDesignSource(input: { template_html?: string | null; template_json?: string | null }, errors: FieldErrors): void {
  if (input.template_json && input.template_html) {
    errors.template_html = ['The template html field is prohibited when template json is present.'];
  }
}

/**
 * Whether `template_id` may name design `id` for the account: one of the built-in designs
 * (`templates`), or one of the account's saved designs that is not deleted (`designs`). Another
 * account's design is as unknown as an id that names nothing. A saved design is held FOR SHARE
 * until the caller's transaction ends, so a concurrent delete waits and then sees the new use
 * (src/resources/designs `deleteDesign` refuses a design a ready or running send uses).
 */
export async function isUsableTemplate(ctx: Ctx, trx: Knex, id: number): Promise<boolean> {
  if (await trx('templates').where({ id }).first('id')) return true;
  return (await liveRows(ctx, 'designs', trx).where('designs.id', id).forShare().first('designs.id')) !== undefined;
}
