import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { notFound1 } from '../../http/errors';
import type { TemplateRecord } from './templates.schemas';
import { accountFields } from '../../contacts/fields';

const TABLE = 'templates';
const COLUMNS = ['id', 'template_name', 'preview_image', 'json_code', 'html_code', 'is_blank', 'created_at', 'updated_at'];

/** Placeholders every design may use besides the contact's fields (filled from the sender and the recipient's token). */
export const SENDER_PLACEHOLDERS = ['sender_name', 'sender_address', 'unsubscribe_preferences'] as const;

/** Designs are shared by every account (no user_id): Custom (id 1, blank) first. */
export async function listTemplates(ctx: Ctx): Promise<TemplateRecord[]> {
  const rows = (await ctx.db(TABLE).select(COLUMNS).orderBy('id', 'asc')) as TemplateRecord[];
  if (rows.length === 0) throw notFound1();
  return rows;
}

/** One design by id, or undefined; single sends and automation emails render from it. */
export async function getTemplate(db: Knex, id: number): Promise<TemplateRecord | undefined> {
  return (await db(TABLE).select(COLUMNS).where({ id }).first()) as TemplateRecord | undefined;
}

/**
 * The placeholder names an account can use: reserved fields (by their fixed ids), then its
 * own custom fields (oldest first), then the sender's and unsubscribe placeholders. A custom
 * field named like one of those appears once. Never empty, so NF1 cannot happen here.
 */
export async function listDynamicContent(ctx: Ctx): Promise<string[]> {
  const names = (await accountFields(ctx)
    .orderByRaw('user_id IS NOT NULL, id')
    .pluck('field_name')) as string[];
  return [...new Set([...names, ...SENDER_PLACEHOLDERS])];
}
