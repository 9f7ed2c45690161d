import type { Request, Response } from 'express';
import { contactTypeRoutes } from '../../resources/contact-types/contact-types.router';
import { contactTypesQuery, listContactTypes } from '../../resources/contact-types/contact-types.service';
import { contactRoutes } from '../../resources/contacts/contacts.router';
import { liveContacts } from '../../resources/contacts/contacts.service';
import { listImports } from '../../resources/contacts/import-history.service';
import { listSegments } from '../../resources/segments/segments.service';
import { Section, Table } from '../components';
import { emptyForm, ErrorSummary, errorsFor, Field, fieldId, submitRoute, type FormState } from '../form-kit';
import { notFound1, type FieldErrors } from '../../http/errors';
import { count, when } from '../format';
import { Csrf, Layout } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { importResult } from './contacts';
import { Flash, posted, Refusal, routeOf } from './sender-kit';
import { allowed } from '../permissions';

/**
 * Lists (the API's contact types): make one, rename it, delete it with its contacts, and browse
 * its contacts a page at a time or search them by part of an address or a name (GET
 * /contacts/search). Every change runs the API's own route (form-kit.tsx submitRoute).
 */
const ADD = routeOf(contactTypeRoutes, '/contacts-type/add');
const UPDATE = routeOf(contactTypeRoutes, '/contacts-type/update');
const DELETE = routeOf(contactTypeRoutes, '/contacts-type/delete');
const SEARCH = routeOf(contactRoutes, '/contacts/search');
export const PER_PAGE = 50;

export interface ListRow {
  id: number;
  name: string;
  contacts_count: number;
}

/** A positive 32-bit id from a path parameter, or 0 (which names no record: the service answers not found). */
export function pathId(raw: unknown): number {
  const s = String(raw);
  return /^\d{1,10}$/.test(s) && Number(s) <= 2_147_483_647 ? Number(s) : 0;
}

/** `?page=` as a page number (1 when absent or not one). */
export const pageOf = (req: Request) => (typeof req.query.page === 'string' && /^[1-9]\d{0,5}$/.test(req.query.page) ? Number(req.query.page) : 1);

/** One list of the account with its size; another account's or a deleted one: not found (NF1 → the 404 page). */
export async function findList(p: PageContext, id: number): Promise<ListRow> {
  const list = (await contactTypesQuery(p.ctx).where('ct.id', id).first()) as ListRow | undefined;
  if (!list) throw notFound1();
  return list;
}

/** Previous and next page links of a paged table (`href` makes a page's address). */
export function Pager({ at, total, perPage = PER_PAGE, href, label }: { at: number; total: number; perPage?: number; href: (page: number) => string; label: string }) {
  const last = Math.max(1, Math.ceil(total / perPage));
  if (last === 1 && at === 1) return null;
  return (
    <nav class="pages" aria-label={label}>
      {at > 1 ? <a href={href(at - 1)}>Previous page</a> : null}
      <span>
        Page {count(at)} of {count(last)}
      </span>
      {at < last ? <a href={href(at + 1)}>Next page</a> : null}
    </nav>
  );
}

function NameForm({ action, state, csrf, submit }: { action: string; state: FormState; csrf: string; submit: string }) {
  return (
    <form method="post" action={action} class="form" novalidate>
      <Csrf token={csrf} />
      <ErrorSummary state={state} fields={['name']} />
      <Field state={state} name="name" label="Name" required attrs={{ maxlength: 255, autocomplete: 'off' }} />
      <div class="actions">
        <button type="submit">{submit}</button>
      </div>
    </form>
  );
}

function sendNewList(res: Response, p: PageContext, status: number, state: FormState): void {
  sendPage(
    res,
    status,
    <Layout title="New list" csrf={p.session.csrf} active="contacts">
      <h1>New list</h1>
      <p class="muted">A list holds contacts; an address may be on several lists.</p>
      <NameForm action="/app/lists/new" state={state} csrf={p.session.csrf} submit="Create the list" />
      <p>
        <a href="/app/contacts">Back to contacts</a>
      </p>
    </Layout>,
  );
}

export async function newListPage(_req: Request, res: Response, p: PageContext): Promise<void> {
  sendNewList(res, p, 200, emptyForm());
}

/** POST /contacts-type/add; the new list is the account's live list of that name (names are unique per account). */
export async function createListAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const body = posted(req);
  const done = await submitRoute(ADD, p, req, res, { body });
  if (!done.ok) {
    sendNewList(res, p, done.status, { values: body, errors: done.errors });
    return;
  }
  const name = String(body.name ?? '').trim().toLowerCase();
  const lists = (await listContactTypes(p.ctx)).rows as unknown as ListRow[];
  const made = lists.find((l) => l.name.toLowerCase() === name);
  res.redirect(303, made ? `/app/lists/${made.id}?done=created` : '/app/contacts');
}

function sendRename(res: Response, p: PageContext, list: ListRow, status: number, state: FormState): void {
  sendPage(
    res,
    status,
    <Layout title={`Rename ${list.name}`} csrf={p.session.csrf} active="contacts">
      <h1>Rename the list “{list.name}”</h1>
      <NameForm action={`/app/lists/${list.id}/edit`} state={state} csrf={p.session.csrf} submit="Save the name" />
      <p>
        <a href={`/app/lists/${list.id}`}>Back to the list</a>
      </p>
    </Layout>,
  );
}

export async function renameListPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await findList(p, pathId(req.params.id));
  sendRename(res, p, list, 200, emptyForm({ name: list.name }));
}

export async function renameListAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await findList(p, pathId(req.params.id));
  const body = posted(req);
  const done = await submitRoute(UPDATE, p, req, res, { query: { id: list.id }, body });
  if (!done.ok) {
    sendRename(res, p, list, done.status, { values: body, errors: done.errors });
    return;
  }
  res.redirect(303, `/app/lists/${list.id}?done=renamed`);
}

/** The confirmation names what goes with the list: its contacts and the segments over it. */
export async function deleteListPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await findList(p, pathId(req.params.id));
  const segments = ((await listSegments(p.ctx)).rows as unknown as Array<{ contact_type_id: number }>).filter((s) => s.contact_type_id === list.id).length;
  const contacts = `${count(list.contacts_count)} contact${list.contacts_count === 1 ? '' : 's'}`;
  sendPage(
    res,
    200,
    <Layout title={`Delete ${list.name}`} csrf={p.session.csrf} active="contacts">
      <h1>Delete the list “{list.name}”?</h1>
      <p data-confirm-count={String(list.contacts_count)}>
        Its {contacts} will be deleted with it{segments > 0 ? `, and the ${count(segments)} segment${segments === 1 ? '' : 's'} built on it` : ''}. Sends already made keep their
        reports.
      </p>
      <form method="post" action={`/app/lists/${list.id}/delete`} class="actions">
        <Csrf token={p.session.csrf} />
        <button type="submit" class="danger">
          Delete the list and its {contacts}
        </button>
        <a class="button secondary" href={`/app/lists/${list.id}`}>
          Keep it
        </a>
      </form>
    </Layout>,
  );
}

export async function deleteListAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await findList(p, pathId(req.params.id));
  const done = await submitRoute(DELETE, p, req, res, { query: { contact_type_id: list.id } });
  if (!done.ok) {
    sendRefusal(res, p, done.status, 'The list was not deleted', done.errors, { href: `/app/lists/${list.id}`, label: 'Back to the list' });
    return;
  }
  res.redirect(303, '/app/contacts?done=list-deleted');
}

interface Shown {
  id: number;
  email: string;
  first_name: string;
  last_name: string;
  created_at: string;
}

/**
 * One page of the list: its newest contacts, or those matching `q` (GET /contacts/search, the
 * API's own route). Read beside the list's record (findList), not after it: `total` undefined
 * means the list's size. The account's own contacts only, whatever `listId` names.
 */
async function contactsShown(req: Request, res: Response, p: PageContext, listId: number, q: string, at: number): Promise<{ rows: Shown[]; total?: number; search: FormState }> {
  const search = emptyForm({ q });
  if (!q) {
    const rows = (await liveContacts(p.ctx, false)
      .where('c.contact_type_id', listId)
      .orderBy('c.id', 'desc')
      .limit(PER_PAGE)
      .offset((at - 1) * PER_PAGE)) as Shown[];
    return { rows, search };
  }
  const found = await submitRoute(SEARCH, p, req, res, { query: { q, contact_type_id: listId, page: at, per_page: PER_PAGE } });
  if (!found.ok) return { rows: [], total: 0, search: { values: { q }, errors: found.errors } };
  const message = found.message as { contacts: Shown[]; pagination: { total: number } };
  return { rows: message.contacts, total: message.pagination.total, search };
}

const FLASHES = {
  created: 'The list was created.',
  renamed: 'The list was renamed.',
  added: 'The contact was added.',
  'contact-deleted': 'The contact was deleted.',
};

/** The list's page: its contacts (paged, searchable), its actions, and a CSV import through the mapping step. */
export async function listPage(req: Request, res: Response, p: PageContext, upload?: { status: number; state: FormState }): Promise<void> {
  const id = pathId(req.params.id);
  const q = typeof req.query.q === 'string' ? req.query.q.trim() : '';
  const at = pageOf(req);
  const [list, shown, imported] = await Promise.all([findList(p, id), contactsShown(req, res, p, id, q, at), importedNow(req, p)]);
  const { rows, search } = shown;
  const total = shown.total ?? list.contacts_count;
  const uploadState = upload?.state ?? emptyForm();
  const href = (page: number) => `/app/lists/${list.id}?${q ? `q=${encodeURIComponent(q)}&` : ''}page=${page}`;
  sendPage(
    res,
    upload?.status ?? 200,
    <Layout title={list.name} csrf={p.session.csrf} active="contacts" styles={['audience.css']}>
      <p class="crumbs">
        <a href="/app/contacts">Contacts</a> › list
      </p>
      <h1 data-list={String(list.id)}>{list.name}</h1>
      <Flash req={req} texts={FLASHES} />
      {imported ? (
        <p class="flash" role="status" data-imported={String(imported.id)}>
          Imported {imported.file_name}: {importResult(imported)}.
        </p>
      ) : null}
      <p>
        <strong data-metric="contacts">{count(list.contacts_count)}</strong> contact{list.contacts_count === 1 ? '' : 's'}
      </p>
      {allowed(p, 'audience:manage') ? (
        <div class="actions">
          <a class="button" href={`/app/lists/${list.id}/contacts/new`}>
            Add a contact
          </a>
          <a class="button secondary" href={`/app/segments/new?contact_type_id=${list.id}`}>
            New segment
          </a>
          <a class="button secondary" href={`/app/lists/${list.id}/export.csv`} download>
            Export CSV
          </a>
          <a class="button secondary" href={`/app/lists/${list.id}/edit`}>
            Rename
          </a>
          <a class="button secondary" href={`/app/lists/${list.id}/delete`}>
            Delete…
          </a>
        </div>
      ) : null}
      <Section title="Contacts" id="list-contacts">
        <form method="get" action={`/app/lists/${list.id}`} class="search-row" role="search" novalidate>
          <Field state={search} name="q" label="Search by part of an address or a name" attrs={{ maxlength: 255, autocomplete: 'off' }} />
          <button type="submit">Search</button>
          {q ? <a href={`/app/lists/${list.id}`}>Show all</a> : null}
        </form>
        {q && !Object.keys(search.errors).length ? (
          <p class="muted" role="status">
            {count(total)} contact{total === 1 ? '' : 's'} match “{q}”.
          </p>
        ) : null}
        <Table<Shown>
          name="list-contacts"
          caption={q ? `Contacts of ${list.name} matching “${q}”, newest first` : `Contacts of ${list.name}, newest first`}
          rows={rows}
          empty={q ? 'No contact matches.' : 'No contacts yet.'}
          columns={[
            { label: 'Address', cell: (c) => <a href={`/app/contacts/${c.id}`}>{c.email}</a> },
            { label: 'Name', cell: (c) => `${c.first_name} ${c.last_name}`.trim() || '–' },
            { label: 'Added', cell: (c) => <time dateTime={String(c.created_at)}>{when(String(c.created_at), p.tz)}</time> },
            ...(allowed(p, 'audience:manage')
              ? [
                  {
                    label: 'Edit',
                    cell: (c: Shown) => (
                      <a href={`/app/contacts/${c.id}/edit`} aria-label={`Edit ${c.email}`}>
                        Edit
                      </a>
                    ),
                  },
                ]
              : []),
          ]}
        />
        <Pager at={at} total={total} href={href} label="Pages of contacts" />
      </Section>
      {allowed(p, 'audience:manage') ? (
        <Section title="Import a CSV file" id="import">
          <p class="muted">
            Upload a file, then choose which of Herald’s fields each of its columns fills. Commas, semicolons and tabs between the values are all understood.
          </p>
          <form method="post" action={`/app/lists/${list.id}/import`} enctype="multipart/form-data" class="form" novalidate>
            <Csrf token={p.session.csrf} />
            <ErrorSummary state={uploadState} fields={['file']} />
            <FileField state={uploadState} />
            <div class="actions">
              <button type="submit">Upload and map the columns</button>
            </div>
          </form>
        </Section>
      ) : null}
    </Layout>,
  );
}

/** A control's messages below it (`<id>-errors`, which the control's aria-describedby names). */
export const FieldMessages = ({ id, messages }: { id: string; messages: string[] }) =>
  messages.length ? <ul class="field-errors" id={`${id}-errors`}>{messages.map((m) => <li>{m}</li>)}</ul> : null;

/** The upload's file control with its messages beside it (form-kit's Field has no file type). */
function FileField({ state }: { state: FormState }) {
  const id = fieldId('file');
  const messages = errorsFor(state, 'file');
  return (
    <div class={`field${messages.length ? ' invalid' : ''}`}>
      <label for={id}>
        CSV file<span class="required" aria-hidden="true"> *</span>
      </label>
      <input id={id} name="file" type="file" accept=".csv,text/csv" required aria-invalid={messages.length ? 'true' : undefined} aria-describedby={messages.length ? `${id}-errors` : undefined} />
      <FieldMessages id={id} messages={messages} />
    </div>
  );
}

/** An action the API refused (no form of its own to show it beside): its words, and the way back. */
export function sendRefusal(res: Response, p: PageContext, status: number, heading: string, errors: FieldErrors, back?: { href: string; label: string }): void {
  sendPage(
    res,
    status,
    <Layout title="Refused" csrf={p.session.csrf} active="contacts">
      <h1>{heading}</h1>
      <Refusal errors={errors} />
      {back ? (
        <p>
          <a href={back.href}>{back.label}</a>
        </p>
      ) : null}
    </Layout>,
  );
}

/** The import a mapping step just finished (`?imported=<id>`), when it is this account's. */
async function importedNow(req: Request, p: PageContext) {
  const id = typeof req.query.imported === 'string' ? pathId(req.query.imported) : 0;
  if (!id) return undefined;
  const { rows } = await listImports(p.ctx, { page: 1, perPage: 10 });
  return (rows as unknown as Array<{ id: number; file_name: string; inserted: number; updated: number; unchanged: number; skipped: number; status: string }>).find(
    (r) => r.id === id && r.status === 'completed',
  );
}

/** GET /contacts/export for a list or a segment, streamed as the API streams it (formulas neutralised there). */
export async function exportAction(req: Request, res: Response, p: PageContext, query: Record<string, number>): Promise<void> {
  const done = await submitRoute(routeOf(contactRoutes, '/contacts/export'), p, req, res, { query });
  if (!done.ok && !res.headersSent) sendRefusal(res, p, done.status, 'Not exported', done.errors);
}

export const exportListAction = (req: Request, res: Response, p: PageContext) => exportAction(req, res, p, { contact_type_id: pathId(req.params.id) });
