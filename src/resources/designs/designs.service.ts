import type { Ctx } from '../../context';
import type { Config } from '../../config';
import { invalid, notFound1, refused, type FieldErrors } from '../../http/errors';
import { listRows, type Paging } from '../../http/pagination';
import { renderDesign, type DesignFormat, type RenderedDesign } from '../../render/design-formats';
import { compileDesign } from '../../render/render';
import { customFieldNames, SAMPLE_SENDER, sampleRecipient } from '../../render/sample';
import { sendUsingDesign, runningSendUsingDesign } from '../../single-sends/rows';
import { findOrFail, liveRows } from '../shared/crud';
import { checkDesignSource } from '../shared/design-rules';
import type { DesignRecord, PreviewDesignInput, SaveDesignInput, UpdateDesignInput } from './designs.schemas';

/**
 * An account's saved designs (issue 34; docs/decisions.md, "Saved designs"). Each is written in
 * one format and rendered once, when it is saved: `html_code` is what sends, automation emails
 * and A/B variations naming its id as their `template_id` send (src/sources/template-html.ts).
 */
const TABLE = 'designs';
const COLUMNS = ['id', 'template_name', 'format', 'source', 'json_code', 'html_code', 'created_at', 'updated_at'].map((c) => `${TABLE}.${c}`);
const LIST_COLUMNS = ['id', 'template_name', 'format', 'created_at', 'updated_at'].map((c) => `${TABLE}.${c}`);

export const IN_USE_BY_SEND = 'The design is used by a scheduled or running single send and cannot be deleted.';
export const IN_USE_BY_AUTOMATION = 'The design is used by an email of a live automation and cannot be deleted.';
export const SENDING_WITH_IT = 'The design is used by a single send that is sending and cannot be changed until it completes.';

/** A change of format that keeps what is sent: the rendered HTML becomes the new source. */
const CONVERTIBLE: ReadonlyArray<[DesignFormat, DesignFormat]> = [
  ['blocks', 'html'],
  ['markdown', 'html'],
];

export interface SavedDesign {
  id: number;
  format: DesignFormat;
  notices: string[];
}

function columnsOf(rendered: RenderedDesign) {
  return { source: rendered.source, html_code: rendered.html, json_code: rendered.jsonCode };
}

export async function saveDesign(ctx: Ctx, input: SaveDesignInput): Promise<SavedDesign> {
  const rendered = renderDesign(input.format, input.source);
  const [{ id }] = (await ctx.db(TABLE)
    .insert({ user_id: ctx.userId, template_name: input.template_name, format: input.format, ...columnsOf(rendered) })
    .returning('id')) as Array<{ id: number }>;
  return { id, format: input.format, notices: rendered.notices };
}

export function listDesigns(ctx: Ctx, paging?: Paging) {
  const base = liveRows(ctx, TABLE);
  return listRows(base.clone().select(LIST_COLUMNS).orderBy(`${TABLE}.id`, 'desc'), base, paging);
}

export function findDesign(ctx: Ctx, id: number): Promise<DesignRecord> {
  return findOrFail<DesignRecord>(liveRows(ctx, TABLE).where(`${TABLE}.id`, id).select(COLUMNS), notFound1);
}

/**
 * The design's new source in its (possibly new) format. A change of format never loses what is
 * sent: blocks → html and markdown → html take the rendered HTML as the new source (unless a new
 * source comes with the change); every other change is refused.
 */
function nextSource(current: DesignRecord, input: UpdateDesignInput): { format: DesignFormat; source: string } {
  const format = input.format ?? current.format;
  if (format === current.format) return { format, source: input.source ?? current.source };
  if (!CONVERTIBLE.some(([from, to]) => from === current.format && to === format)) {
    throw invalid({
      format: [
        `The format cannot change from ${current.format} to ${format}.` +
          (format === 'html' ? '' : ' Only a blocks or markdown design can change, to html (its rendered HTML becomes the source).'),
      ],
    });
  }
  return { format, source: input.source ?? current.html_code };
}

/** Changes the fields given; the design is rendered again (the row is locked while it is). */
export async function updateDesign(ctx: Ctx, id: number, input: UpdateDesignInput): Promise<SavedDesign> {
  return ctx.db.transaction(async (trx) => {
    const current = await findOrFail<DesignRecord>(liveRows(ctx, TABLE, trx).where(`${TABLE}.id`, id).forUpdate().select(COLUMNS), notFound1);
    // A running send's messages are made from this design (the worker compiles it once a minute):
    // a change now would send two versions of one campaign.
    if (await runningSendUsingDesign(trx, ctx.userId, id)) throw refused(SENDING_WITH_IT);
    const next = nextSource(current, input);
    const rendered = renderDesign(next.format, next.source);
    await liveRows(ctx, TABLE, trx)
      .where(`${TABLE}.id`, id)
      .update({
        template_name: input.template_name ?? current.template_name,
        format: next.format,
        ...columnsOf(rendered),
        updated_at: trx.fn.now(),
      });
    return { id, format: next.format, notices: rendered.notices };
  });
}

/**
 * Soft delete: sends and emails that name the design keep its HTML (their web view, a report).
 * Refused while a ready or running send (its own design or an A/B variation's) or an email of a
 * live automation uses it. The row is locked first; choosing a design holds it FOR SHARE
 * (shared/design-rules.ts `isUsableTemplate`), so no new use slips between the check and the delete.
 */
export async function deleteDesign(ctx: Ctx, id: number): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    await findOrFail(liveRows(ctx, TABLE, trx).where(`${TABLE}.id`, id).forUpdate().select(`${TABLE}.id`), notFound1);
    if (await sendUsingDesign(trx, ctx.userId, id)) throw refused(IN_USE_BY_SEND);
    const inAutomation = await liveRows(ctx, 'automation_schedules as s', trx)
      .join('automations as a', (j) => j.on('a.id', 's.automation_id').andOn('a.user_id', 's.user_id'))
      .where('a.user_id', ctx.userId)
      .where('s.template_id', id)
      .where('a.status', 1)
      .whereNull('a.deleted_at')
      .first('s.id');
    if (inAutomation) throw refused(IN_USE_BY_AUTOMATION);
    await liveRows(ctx, TABLE, trx).where(`${TABLE}.id`, id).update({ deleted_at: trx.fn.now(), updated_at: trx.fn.now() });
  });
}

/** Which source a preview renders: format + source, or template_html, or template_json (one of them). */
function previewSource(input: PreviewDesignInput): { format: DesignFormat; source: string; field: string } {
  const errors: FieldErrors = {};
  checkDesignSource(input, errors);
  const given = input.source !== undefined;
  if (given && input.template_html !== undefined) errors.source = ['The source field is prohibited when template html is present.'];
  else if (given && input.template_json !== undefined) errors.source = ['The source field is prohibited when template json is present.'];
  if (given && !input.format) errors.format = ['The format field is required when source is present.'];
  if (!given && input.template_html === undefined && input.template_json === undefined) {
    errors.source = ['The source field is required when none of template html / template json are present.'];
  }
  if (Object.keys(errors).length) throw invalid(errors);
  if (given) return { format: input.format!, source: input.source!, field: 'source' };
  if (input.template_json !== undefined) return { format: 'blocks', source: input.template_json, field: 'template_json' };
  return { format: 'html', source: input.template_html!, field: 'template_html' };
}

/**
 * An unsaved design as a recipient gets it: rendered as it would be saved, then compiled by the
 * send's own renderer (src/render/render.ts) with the sample sender and recipient
 * (src/render/sample.ts) — the account's custom fields show their names.
 */
export async function previewDesign(ctx: Ctx, config: Config, input: PreviewDesignInput): Promise<{ html: string; text: string; notices: string[] }> {
  const { format, source, field } = previewSource(input);
  const rendered = renderDesign(format, source, field);
  const customFields = await customFieldNames(ctx.db, ctx.userId);
  const compiled = compileDesign({ subject: '', preheader: '', html: rendered.html, ...SAMPLE_SENDER, publicUrl: config.publicUrl, customFields });
  const { html, text } = compiled.content(sampleRecipient(customFields));
  return { html, text, notices: rendered.notices };
}
