import type { Request, Response } from 'express';
import { findDesign } from '../../resources/designs/designs.service';
import { templateRoutes } from '../../resources/templates/templates.router';
import type { TemplateRecord } from '../../resources/templates/templates.schemas';
import { Section, Table } from '../components';
import { submitRoute } from '../form-kit';
import type { FieldErrors } from '../../http/errors';
import { count, when } from '../format';
import { Csrf, Layout } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { DELETE, designId, FORMAT_NAMES, LIST } from './design-common';
import { Flash, Refusal, routeOf } from './sender-kit';
import type { DesignFormat } from '../../render/design-formats';
import { allowed } from '../permissions';

/**
 * The design library (issue 34): the account's saved designs (GET /designs/list, a page at a
 * time) beside the built-in ones (GET /get-design/template), a new design in each format, and
 * deleting one (DELETE /designs/delete) after a confirmation page, which shows the API's refusal
 * when a send or an automation still uses the design.
 */
const TEMPLATES = routeOf(templateRoutes, '/get-design/template');
const PER_PAGE = 50;

interface Saved {
  id: number;
  template_name: string;
  format: DesignFormat;
  updated_at: string;
}

const page = (req: Request) => (typeof req.query.page === 'string' && /^[1-9]\d{0,5}$/.test(req.query.page) ? Number(req.query.page) : 1);

function Pages({ at, total }: { at: number; total: number }) {
  const last = Math.max(1, Math.ceil(total / PER_PAGE));
  if (last === 1) return null;
  return (
    <nav class="pages" aria-label="Pages of designs">
      {at > 1 ? <a href={`/app/designs?page=${at - 1}`}>Previous page</a> : null}
      <span>
        Page {count(at)} of {count(last)}
      </span>
      {at < last ? <a href={`/app/designs?page=${at + 1}`}>Next page</a> : null}
    </nav>
  );
}

export async function libraryPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const at = page(req);
  const [list, templates] = await Promise.all([
    submitRoute(LIST, p, req, res, { query: { page: at, per_page: PER_PAGE } }),
    submitRoute(TEMPLATES, p, req, res, {}),
  ]);
  const saved = list.ok ? (list.message as { designs: Saved[]; pagination: { total: number } }) : { designs: [], pagination: { total: 0 } };
  // The built-ins are the templates with a preview image (a saved design listed there has none).
  const builtIns = templates.ok ? (templates.message as { templates: TemplateRecord[] }).templates.filter((t) => t.preview_image !== '') : [];
  const manage = allowed(p, 'campaigns:manage');
  sendPage(
    res,
    200,
    <Layout title="Designs" csrf={p.session.csrf} active="designs" styles={['designs.css']}>
      <h1>Designs</h1>
      <Flash req={req} texts={{ deleted: 'Design deleted.' }} />
      {manage ? (
        <Section title="New design" id="new">
          <p class="muted">Each design is written one way. Saved designs are chosen by their id in sends, automation emails and A/B variations.</p>
          <ul class="new-designs">
            <li>
              <a class="button" href="/app/designs/new?format=blocks">
                New block design
              </a>
              <span class="muted"> Blocks (headings, text, images, buttons, columns, footer) edited in a form.</span>
            </li>
            <li>
              <a class="button" href="/app/designs/new?format=markdown">
                New Markdown design
              </a>
              <span class="muted"> Markdown in Herald’s responsive layout.</span>
            </li>
            <li>
              <a class="button" href="/app/designs/new?format=html">
                New HTML design
              </a>
              <span class="muted"> Your own HTML, with a live preview.</span>
            </li>
          </ul>
        </Section>
      ) : null}
      <Section title="Your designs" id="saved">
        <Table<Saved>
          name="designs"
          caption="Your saved designs, newest first"
          rows={saved.designs}
          empty="No saved designs yet: start one above, or from a built-in design below."
          columns={[
            { label: 'Name', cell: (d) => (manage ? <a href={`/app/designs/${d.id}/edit`}>{d.template_name}</a> : d.template_name) },
            { label: 'Id', numeric: true, cell: (d) => String(d.id) },
            { label: 'Format', cell: (d) => FORMAT_NAMES[d.format] },
            { label: 'Saved', cell: (d) => <time dateTime={d.updated_at}>{when(d.updated_at, p.tz)}</time> },
            {
              label: 'Actions',
              cell: (d) =>
                !manage ? (
                  '–'
                ) : (
                  <span class="row-actions">
                    <a href={`/app/designs/${d.id}/edit`} aria-label={`Edit: ${d.template_name}`}>
                      Edit
                    </a>
                    <a href={`/app/designs/new?from=${d.id}`} aria-label={`Duplicate: ${d.template_name}`}>
                      Duplicate
                    </a>
                    <a href={`/app/designs/${d.id}/delete`} aria-label={`Delete: ${d.template_name}`}>
                      Delete
                    </a>
                  </span>
                ),
            },
          ]}
        />
        <Pages at={at} total={saved.pagination?.total ?? saved.designs.length} />
      </Section>
      <Section title="Built-in designs" id="built-in">
        <p class="muted">Herald’s own designs: start a design of yours from one (it is copied; the built-in stays as it is).</p>
        <ul class="built-ins">
          {builtIns.map((t) => (
            <li class="built-in" data-template={t.id}>
              <img src={`/images/${encodeURIComponent(t.preview_image)}`} alt="" width={160} height={290} loading="lazy" />
              <h3>{t.is_blank ? `${t.template_name} (blank)` : t.template_name}</h3>
              {manage ? (
                <a class="button secondary" href={`/app/designs/new?template=${t.id}`} aria-label={`Start from it: ${t.template_name}`}>
                  Start from it
                </a>
              ) : null}
            </li>
          ))}
        </ul>
      </Section>
    </Layout>,
  );
}

function ConfirmDelete({ p, design, errors }: { p: PageContext; design: { id: number; template_name: string }; errors?: FieldErrors }) {
  return (
    <Layout title={`Delete ${design.template_name}`} csrf={p.session.csrf} active="designs" styles={['designs.css']}>
      <h1>Delete a design</h1>
      <Refusal errors={errors} />
      <p>
        Delete the design <strong class="design-name">{design.template_name}</strong> (id {design.id})?
      </p>
      <p class="muted">
        Sends and automation emails that already used it keep what they sent. A design that a scheduled or running send, or a live automation, uses
        cannot be deleted.
      </p>
      <form method="post" action={`/app/designs/${design.id}/delete`} class="actions">
        <Csrf token={p.session.csrf} />
        <button type="submit" class="danger">
          Delete the design
        </button>
        <a class="button secondary" href={`/app/designs/${design.id}/edit`}>
          Keep it
        </a>
      </form>
    </Layout>
  );
}

export async function confirmDeletePage(req: Request, res: Response, p: PageContext): Promise<void> {
  const design = await findDesign(p.ctx, designId(req));
  sendPage(res, 200, <ConfirmDelete p={p} design={design} />);
}

export async function deleteDesignAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = designId(req);
  const design = await findDesign(p.ctx, id);
  const done = await submitRoute(DELETE, p, req, res, { query: { id } });
  if (done.ok) {
    res.redirect(303, '/app/designs?done=deleted');
    return;
  }
  sendPage(res, done.status, <ConfirmDelete p={p} design={design} errors={done.errors} />);
}
