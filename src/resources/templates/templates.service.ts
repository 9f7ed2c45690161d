import type { Knex } from 'knex';
import type { Ctx } from '../../context';
import { notFound1 } from '../../http/errors';
import type { TemplateRecord } from './templates.schemas';
import { accountFields } from '../../contacts/fields';
import { liveRows } from '../shared/crud';

const TABLE = 'templates';
/** The preview image of every saved design (assets/templates/saved.preview.html, by scripts/render-template-previews.sh saved). */
const SAVED_DESIGN_PREVIEW = 'template-saved.png';
const COLUMNS = ['id', 'template_name', 'preview_image', 'json_code', 'html_code', 'is_blank', 'created_at', 'updated_at'];

/** Placeholders every design may use besides the contact's fields (filled from the sender and the recipient's token). */
export const SENDER_PLACEHOLDERS = ['sender_name', 'sender_address', 'unsubscribe_preferences'] as const;

/**
 * The built-in designs, shared by every account (no user_id): Custom (id 1, blank) first; then
 * the account's saved designs that are not deleted (src/resources/designs, ids from 1001), oldest
 * first, as templates: `is_blank` 0, and one generic thumbnail for all of them (`SAVED_DESIGN_PREVIEW`: no
 * picture of each is rendered).
 */
export async function listTemplates(ctx: Ctx): Promise<TemplateRecord[]> {
  const builtIn = (await ctx.db(TABLE).select(COLUMNS).orderBy('id', 'asc')) as TemplateRecord[];
  if (builtIn.length === 0) throw notFound1();
  const saved = (await liveRows(ctx, 'designs')
    .orderBy('designs.id', 'asc')
    .select(
      'designs.id',
      'designs.template_name',
      ctx.db.raw('? AS preview_image', [SAVED_DESIGN_PREVIEW]),
      'designs.json_code',
      'designs.html_code',
      ctx.db.raw('0::smallint AS is_blank'),
      'designs.created_at',
      'designs.updated_at',
    )) as TemplateRecord[];
  return [...builtIn, ...saved];
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
