import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { ASSETS_DIR } from '../src/paths';

/**
 * Herald's built-in designs, shared by every account, with fixed ids below 1000 (the
 * sequence starts at 1001). Their HTML and editor JSON live in assets/templates/<slug>.html
 * and .json so they stay readable and diffable; the preview PNGs in assets/images are
 * rendered by scripts/render-template-previews.sh.
 */
export const BUILT_IN_TEMPLATES: ReadonlyArray<{ id: number; slug: string; template_name: string; is_blank: 0 | 1 }> = [
  { id: 1, slug: 'custom', template_name: 'Custom', is_blank: 1 },
  { id: 2, slug: 'newsletter', template_name: 'Newsletter', is_blank: 0 },
  { id: 3, slug: 'welcome', template_name: 'Welcome', is_blank: 0 },
  { id: 4, slug: 'announcement', template_name: 'Announcement', is_blank: 0 },
  { id: 5, slug: 'promotion', template_name: 'Promotion', is_blank: 0 },
];

const CONTENT = ['template_name', 'preview_image', 'json_code', 'html_code', 'is_blank'] as const;

function readDesign(slug: string): { html_code: string; json_code: string } {
  const dir = path.join(ASSETS_DIR, 'templates');
  const html = fs.readFileSync(path.join(dir, `${slug}.html`), 'utf8');
  // Parsing fails the seed loudly on a broken file; stored compact like an editor would save it.
  const json = JSON.stringify(JSON.parse(fs.readFileSync(path.join(dir, `${slug}.json`), 'utf8')));
  return { html_code: html, json_code: json };
}

/**
 * Upserts the designs by id. Runs on every start, so unchanged rows are left alone (no write,
 * and updated_at keeps saying when the design last changed). Built-ins have no created_at.
 */
export async function seed(knex: Knex): Promise<void> {
  const rows = BUILT_IN_TEMPLATES.map((t) => ({
    id: t.id,
    template_name: t.template_name,
    preview_image: `template-${t.slug}.png`,
    is_blank: t.is_blank,
    ...readDesign(t.slug),
    created_at: null,
    updated_at: knex.fn.now(),
  }));
  const current = CONTENT.map((c) => `templates.${c}`).join(', ');
  const incoming = CONTENT.map((c) => `excluded.${c}`).join(', ');
  await knex('templates')
    .insert(rows)
    .onConflict('id')
    .merge([...CONTENT, 'updated_at'])
    .whereRaw(`(${current}) IS DISTINCT FROM (${incoming})`);
}
