import type { Request, Response } from 'express';
import { renderToString } from 'preact-render-to-string';
import { notFound1 } from '../../http/errors';
import { DESIGN_FORMATS, type DesignFormat } from '../../render/design-formats';
import { findDesign } from '../../resources/designs/designs.service';
import { getTemplate } from '../../resources/templates/templates.service';
import { errorsFor, ErrorSummary, Field, FORM_ERROR, submitRoute, type FormState } from '../form-kit';
import { when } from '../format';
import { Csrf, Layout } from '../layout';
import { FRAMING_PAGE_HEADERS, sendEmailPreview } from '../preview-frame';
import { errorLines, sendPage, type PageContext } from '../respond';
import { designId, FORMAT_NAMES, noticeKeys, noticesOf, PREVIEW, SAVE, UPDATE } from './design-common';
import { Flash, posted } from './sender-kit';

/**
 * A design's page: its name, the editor of its format and its live preview (issue 34).
 *
 * - blocks: the block editor (client/block-editor.tsx, bundled into assets/dashboard/dist/), which
 *   writes the block document into the form's `source` textarea; without script the textarea is
 *   the editor, its JSON what is saved.
 * - markdown and html: CodeMirror 6 on the `source` textarea (client/code-editor.ts).
 *
 * Saving runs POST /designs/save or /designs/update (form-kit `submitRoute`): the API's
 * validation and messages, its notices (an unsubscribe link added) shown after the save. The
 * preview is a frame of its own (preview-frame.ts) whose HTML comes from POST /designs/preview,
 * the renderer the send uses: the saved design's on a GET, what is typed when the form's "Update
 * preview" posts into the frame (the script does so as one types).
 */
interface Draft {
  format: DesignFormat;
  /** The saved design's id; none for a new one. */
  id?: number;
  updatedAt?: string;
  values: { template_name: string; source: string };
  /** The query string of a new design's starting point (`format`, `from` or `template`), for its first preview. */
  start?: string;
}

const BLANK: Record<DesignFormat, string> = {
  blocks: `${JSON.stringify({ version: 1, settings: {}, blocks: [] }, null, 2)}\n`,
  markdown: '# Hello ((first_name))\n\nWrite your email in Markdown: **bold**, _italic_, [a link](https://example.com), lists and headings.\n',
  html: `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title></title>
</head>
<body>
<p>Hello ((first_name)),</p>
<p><a href="((unsubscribe_preferences))">Unsubscribe or manage your preferences</a></p>
</body>
</html>
`,
};

const isFormat = (v: unknown): v is DesignFormat => typeof v === 'string' && (DESIGN_FORMATS as readonly string[]).includes(v);
const queryId = (v: unknown) => (typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : undefined);

/** A block document shown indented (it is stored on one line); anything else as it is. */
function readable(format: DesignFormat, source: string): string {
  if (format !== 'blocks') return source;
  try {
    return `${JSON.stringify(JSON.parse(source), null, 2)}\n`;
  } catch {
    return source;
  }
}

/**
 * Where a new design starts: `?from=<id>` a copy of a saved design (its format), `?template=<id>`
 * a built-in (its block document, or its HTML with `format=html` or when it has no document), else
 * a short example in `?format=` (blocks by default).
 */
async function startingPoint(req: Request, p: PageContext): Promise<Draft> {
  const from = queryId(req.query.from);
  const template = queryId(req.query.template);
  if (req.query.from !== undefined) {
    const d = await findDesign(p.ctx, from ?? 0);
    return { format: d.format, values: { template_name: `Copy of ${d.template_name}`.slice(0, 255), source: readable(d.format, d.source) }, start: `from=${d.id}` };
  }
  if (req.query.template !== undefined) {
    const t = template === undefined ? undefined : await getTemplate(p.deps.db, template);
    if (!t) throw notFound1();
    const format: DesignFormat = req.query.format !== 'html' && t.json_code.trim() ? 'blocks' : 'html';
    const source = format === 'blocks' ? readable('blocks', t.json_code) : t.html_code;
    return { format, values: { template_name: t.template_name, source }, start: `template=${t.id}&format=${format}` };
  }
  const format = isFormat(req.query.format) ? req.query.format : 'blocks';
  return { format, values: { template_name: '', source: BLANK[format] }, start: `format=${format}` };
}

/** The messages about places inside a block document (`blocks.3.href`): every key the form has no field for. */
const FORM_FIELDS = ['template_name', 'format', 'source', FORM_ERROR];
const documentKeys = (state: FormState) => Object.keys(state.errors).filter((k) => !FORM_FIELDS.includes(k));

function SourceField({ draft, state }: { draft: Draft; state: FormState }) {
  // Without script the textarea is the only editor: it also shows the messages about the document's places.
  const inDocument = documentKeys(state).flatMap((k) => state.errors[k]);
  const shown: FormState = { values: state.values, errors: { source: [...errorsFor(state, 'source'), ...inDocument] } };
  if (draft.format === 'blocks') {
    const doc = Object.fromEntries(documentKeys(state).map((k) => [k, state.errors[k]]));
    return (
      <>
        <div id="block-editor" class="block-editor" data-errors={JSON.stringify(doc)}>
          <p class="muted">The block editor runs in the browser with JavaScript. Without it, edit the block document’s JSON below.</p>
        </div>
        <Field
          state={shown}
          name="source"
          label="Block document (JSON)"
          type="textarea"
          rows={18}
          hint={<>{'{"version":1,"settings":{…},"blocks":[…]}'}: the document the API takes as a design’s source.</>}
          attrs={{ spellcheck: false, autoComplete: 'off', class: 'code' }}
        />
      </>
    );
  }
  return (
    <Field
      state={shown}
      name="source"
      label={draft.format === 'markdown' ? 'Markdown' : 'HTML'}
      type="textarea"
      rows={22}
      hint={
        draft.format === 'markdown'
          ? 'Headings, paragraphs, lists, links and images in Markdown (HTML inside it is shown as text), in Herald’s responsive layout. ((placeholders)) are filled per recipient.'
          : 'The whole email document as it is sent. ((placeholders)) are filled per recipient.'
      }
      attrs={{ spellcheck: false, autoComplete: 'off', class: 'code', 'data-code-editor': true, 'data-language': draft.format }}
    />
  );
}

function Preview({ draft, stale }: { draft: Draft; stale: boolean }) {
  const src = draft.id ? `/app/designs/${draft.id}/preview` : `/app/designs/preview?${draft.start ?? ''}`;
  return (
    <section class="design-preview card" aria-labelledby="preview-title">
      <h2 id="preview-title">Preview</h2>
      <fieldset class="preview-widths">
        <legend>Width</legend>
        <input type="radio" name="preview-width" id="preview-desktop" value="desktop" checked />
        <label for="preview-desktop">Desktop</label>
        <input type="radio" name="preview-width" id="preview-phone" value="phone" />
        <label for="preview-phone">Phone (375 px)</label>
      </fieldset>
      <div class="preview-box" data-preview-box data-preview-stale={stale ? '1' : undefined}>
        <iframe name="design-preview" class="preview-frame" src={src} title="The design as a recipient sees it, with sample values" />
      </div>
      <p class="hint muted">
        {stale ? 'Showing the design as it was; “Update preview” shows what you typed. ' : null}
        Placeholders show sample values (Jane Doe); its links lead nowhere.
      </p>
    </section>
  );
}

function Notices({ req, notices }: { req: Request; notices: string[] }) {
  return (
    <>
      <Flash req={req} texts={{ saved: 'Design saved.', converted: 'Design converted to HTML: what it sends is unchanged, and its HTML is now its source.' }} />
      {notices.length ? (
        <div class="flash notices" role="status" data-notices>
          <p>Herald changed the design so that it can be sent:</p>
          <ul>
            {notices.map((n) => (
              <li>{n}</li>
            ))}
          </ul>
        </div>
      ) : null}
    </>
  );
}

/** The switches of format the API makes (blocks → html, markdown → html), with what they do. */
function FormatSwitch({ draft }: { draft: Draft }) {
  if (draft.format === 'html') {
    return (
      <p class="hint muted" id="format-switch">
        An HTML design stays HTML: turning HTML back into blocks or Markdown would lose what it shows, so Herald does not offer it.
      </p>
    );
  }
  if (!draft.id) {
    return (
      <p class="hint muted" id="format-switch">
        Once saved, a {FORMAT_NAMES[draft.format]} design can be converted to HTML (and not back).
      </p>
    );
  }
  return (
    <div class="format-switch" id="format-switch">
      <p class="hint">
        Converting saves your changes, then makes the design’s rendered HTML its source: what it sends stays exactly the same, and from then on it is
        edited as HTML. The {draft.format === 'blocks' ? 'block document' : 'Markdown'} is not kept, so it cannot be converted back.
      </p>
      <button type="submit" class="secondary" formaction={`/app/designs/${draft.id}/convert`} aria-describedby="format-switch">
        Save and convert to HTML
      </button>
    </div>
  );
}

function EditorPage({ p, req, draft, state, notices, stale }: { p: PageContext; req: Request; draft: Draft; state: FormState; notices: string[]; stale: boolean }) {
  const action = draft.id ? `/app/designs/${draft.id}/edit` : '/app/designs/new';
  const title = draft.id ? 'Edit design' : 'New design';
  return (
    <Layout
      title={draft.id ? `${title}: ${draft.values.template_name}` : `${title} (${FORMAT_NAMES[draft.format]})`}
      csrf={p.session.csrf}
      active="designs"
      styles={['designs.css']}
      scripts={[draft.format === 'blocks' ? 'dist/block-editor.js' : 'dist/code-editor.js']}
    >
      <p class="back">
        <a href="/app/designs">All designs</a>
      </p>
      <h1>{title}</h1>
      <p class="muted design-meta">
        {FORMAT_NAMES[draft.format]}
        {draft.id ? ` · design ${draft.id} (choose it as template_id ${draft.id} in a send or an automation email)` : ' · not saved yet'}
        {draft.updatedAt ? ` · saved ${when(draft.updatedAt, p.tz)}` : ''}
      </p>
      <Notices req={req} notices={notices} />
      <div class="design-layout">
        <form method="post" action={action} class="form design-form" novalidate>
          <Csrf token={p.session.csrf} />
          <input type="hidden" name="format" value={draft.format} />
          <ErrorSummary state={state} fields={['template_name', 'format', 'source', ...documentKeys(state)]} />
          <Field state={state} name="template_name" label="Name" required attrs={{ maxLength: 255, autoComplete: 'off' }} />
          <SourceField draft={draft} state={state} />
          <div class="actions">
            <button type="submit">Save design</button>
            <button type="submit" class="secondary" formaction="/app/designs/preview" formtarget="design-preview" formnovalidate data-preview>
              Update preview
            </button>
            {draft.id ? (
              <>
                <a class="button secondary" href={`/app/designs/new?from=${draft.id}`}>
                  Duplicate
                </a>
                <a class="button secondary" href={`/app/designs/${draft.id}/delete`}>
                  Delete…
                </a>
              </>
            ) : null}
          </div>
          <section class="format" aria-labelledby="format-title">
            <h2 id="format-title">Format</h2>
            {errorsFor(state, 'format').length ? (
              <ul class="field-errors" id="field-format">
                {errorsFor(state, 'format').map((m) => (
                  <li>{m}</li>
                ))}
              </ul>
            ) : null}
            <FormatSwitch draft={draft} />
          </section>
        </form>
        <Preview draft={draft} stale={stale} />
      </div>
    </Layout>
  );
}

function showEditor(res: Response, status: number, props: Parameters<typeof EditorPage>[0]): void {
  sendPage(res, status, <EditorPage {...props} />, FRAMING_PAGE_HEADERS);
}

export async function newDesignPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const draft = await startingPoint(req, p);
  showEditor(res, 200, { p, req, draft, state: { values: draft.values, errors: {} }, notices: [], stale: false });
}

export async function editDesignPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const d = await findDesign(p.ctx, designId(req));
  const values = { template_name: d.template_name, source: readable(d.format, d.source) };
  showEditor(res, 200, { p, req, draft: { format: d.format, id: d.id, updatedAt: d.updated_at, values }, state: { values, errors: {} }, notices: noticesOf(req), stale: false });
}

/** What the form posted as the design's name and source (as typed: a refused form shows them again). */
function typed(req: Request): { template_name: string; source: string; format: unknown } {
  const body = posted(req);
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  return { template_name: text(body.template_name), source: text(body.source), format: body.format };
}

function savedTo(res: Response, id: number, done: string, notices: string[]): void {
  const query = new URLSearchParams([['done', done], ...noticeKeys(notices).map((k) => ['notice', k])]);
  res.redirect(303, `/app/designs/${id}/edit?${query}`);
}

export async function saveDesignAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const { format, ...values } = typed(req);
  const done = await submitRoute(SAVE, p, req, res, { body: { ...values, format } });
  if (done.ok) {
    const saved = done.message as { id: number; notices: string[] };
    savedTo(res, saved.id, 'saved', saved.notices);
    return;
  }
  const draft: Draft = { format: isFormat(format) ? format : 'blocks', values };
  showEditor(res, done.status, { p, req, draft: { ...draft, start: `format=${draft.format}` }, state: { values, errors: done.errors }, notices: [], stale: true });
}

/**
 * POST /designs/update with the name and source typed (the format stays), then, to convert, with
 * `format=html` alone: the API turns the saved design's rendered HTML into its source.
 */
async function update(req: Request, res: Response, p: PageContext, convert: boolean): Promise<void> {
  const id = designId(req);
  const { template_name, source } = typed(req);
  const values = { template_name, source };
  let done = await submitRoute(UPDATE, p, req, res, { query: { id }, body: values });
  const notices: string[] = done.ok ? (done.message as { notices: string[] }).notices : [];
  if (done.ok && convert) done = await submitRoute(UPDATE, p, req, res, { query: { id }, body: { format: 'html' } });
  if (done.ok) {
    savedTo(res, id, convert ? 'converted' : 'saved', [...new Set([...notices, ...(done.message as { notices: string[] }).notices])]);
    return;
  }
  const d = await findDesign(p.ctx, id);
  const draft: Draft = { format: d.format, id: d.id, updatedAt: d.updated_at, values };
  showEditor(res, done.status, { p, req, draft, state: { values, errors: done.errors }, notices, stale: true });
}

export const updateDesignAction = (req: Request, res: Response, p: PageContext) => update(req, res, p, false);
export const convertDesignAction = (req: Request, res: Response, p: PageContext) => update(req, res, p, true);

/** A preview that cannot be rendered yet: the API's messages, in the frame where the email would be. */
function previewRefused(lines: string[]): string {
  return `<!DOCTYPE html>${renderToString(
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>No preview</title>
      </head>
      <body style="margin:16px;font:15px/1.5 system-ui,sans-serif;color:#8a1c17;background:#ffffff">
        <p>The preview shows once these are corrected:</p>
        <ul>
          {lines.map((l) => (
            <li>{l}</li>
          ))}
        </ul>
      </body>
    </html>,
  )}`;
}

/** The design as a recipient gets it (POST /designs/preview: the send's renderer, sample values), in a sandboxed frame. */
async function sendPreview(req: Request, res: Response, p: PageContext, format: unknown, source: string): Promise<void> {
  const done = await submitRoute(PREVIEW, p, req, res, { body: { format, source } });
  sendEmailPreview(res, done.ok ? (done.message as { html: string }).html : previewRefused(errorLines(done.errors)));
}

/** GET: a saved design's preview (the frame's first document on its page). */
export async function savedPreview(req: Request, res: Response, p: PageContext): Promise<void> {
  const d = await findDesign(p.ctx, designId(req));
  await sendPreview(req, res, p, d.format, d.source);
}

/** GET: a new design's starting point, previewed (the frame's first document on the new design's page). */
export async function startPreview(req: Request, res: Response, p: PageContext): Promise<void> {
  const draft = await startingPoint(req, p);
  await sendPreview(req, res, p, draft.format, draft.values.source);
}

/** POST (the form's "Update preview", into the frame): what is typed, previewed. */
export async function typedPreview(req: Request, res: Response, p: PageContext): Promise<void> {
  const { format, source } = typed(req);
  await sendPreview(req, res, p, format, source);
}
