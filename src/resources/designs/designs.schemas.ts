import { z } from 'zod';
import { text } from '../../http/fields';
import { DESIGN_FORMATS } from '../../render/design-formats';
import { intId, pagination, timestamp } from '../shared/schemas';

const format = () => z.enum(DESIGN_FORMATS).meta({ description: 'blocks (the block editor’s JSON document) | markdown | html' });
const source = () =>
  z.string().meta({
    description:
      'the design as written: the block document JSON {"version":1,"settings":{…},"blocks":[…]} (format blocks), Markdown (raw HTML off) or HTML; kept byte for byte',
  });

export const saveDesignBody = z.object({
  template_name: text(255),
  format: format(),
  source: source(),
});
export type SaveDesignInput = z.infer<typeof saveDesignBody>;

export const updateDesignBody = z.object({
  template_name: text(255).optional(),
  format: format()
    .optional()
    .meta({ description: 'a change of format: blocks → html and markdown → html convert (the new source is the rendered HTML); every other change is refused' }),
  source: source().optional(),
});
export type UpdateDesignInput = z.infer<typeof updateDesignBody>;

export const previewDesignBody = z.object({
  format: format().optional().meta({ description: 'with source' }),
  source: source().optional(),
  template_html: z.string().optional().meta({ description: 'instead of format + source: HTML' }),
  template_json: z.string().optional().meta({ description: 'instead of format + source: a block document' }),
});
export type PreviewDesignInput = z.infer<typeof previewDesignBody>;

const notices = () =>
  z.array(z.string()).meta({
    description: 'what Herald added to the design, in words an editor can show',
    example: ['An unsubscribe link was added to the footer.'],
  });

/** A saved design as details shows it. Its id is a `template_id` of sends, automation emails and A/B variations. */
export const designRecord = z.strictObject({
  id: intId().meta({ description: '1001 and above (built-in designs are below 1000)' }),
  template_name: z.string(),
  format: z.enum(DESIGN_FORMATS),
  source: z.string(),
  json_code: z.string().meta({ description: 'the block document (format blocks), else empty' }),
  html_code: z.string().meta({ description: 'the HTML rendered at save: what is sent, with ((placeholder)) tokens' }),
  created_at: timestamp(),
  updated_at: timestamp(),
});
export type DesignRecord = z.infer<typeof designRecord>;

/** In the list: a design without its texts (details has them). */
export const designListRecord = designRecord.pick({ id: true, template_name: true, format: true, created_at: true, updated_at: true });

export const designsListResponse = z.object({ designs: z.array(designListRecord), pagination: pagination.optional() });
export const designSavedResponse = z.object({ id: intId(), format: z.enum(DESIGN_FORMATS), notices: notices() });
export const designPreviewResponse = z.object({
  html: z.string().meta({ description: 'the HTML a recipient gets, placeholders filled with sample values' }),
  text: z.string().meta({ description: 'the plain-text part' }),
  notices: notices(),
});
