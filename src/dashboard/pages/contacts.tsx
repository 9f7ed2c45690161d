import type { Request, Response } from 'express';
import { listContactTypes } from '../../resources/contact-types/contact-types.service';
import { getContact } from '../../resources/contacts/contacts.service';
import { listImports } from '../../resources/contacts/import-history.service';
import { listEvents } from '../../resources/events/events.service';
import { addressMemberships, contactsWithAddress } from '../../resources/reports/contact.service';
import { listSegments } from '../../resources/segments/segments.service';
import { listSuppressions } from '../../resources/suppressions/suppressions.service';
import { Section, Table } from '../components';
import { count, importError, when } from '../format';
import { Layout, PostButton } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { Flash } from './sender-kit';
import { allowed } from '../permissions';

/**
 * Lists and segments with their sizes, the CSV upload (progress and result: assets/dashboard/app.js
 * with upload.ts), the search by address and a contact's page.
 */
interface Import {
  id: number;
  contact_type_id: number;
  file_name: string;
  status: string;
  rows_read: number;
  inserted: number;
  updated: number;
  unchanged: number;
  skipped: number;
  error: string | null;
  created_at: string;
}
type Segment = { id: number; segment_name: string; contact_type_id: number; segment_emails_count: number };
const IMPORTS_SHOWN = 10;
const EVENTS_PER_PAGE = 100;

/** "created N, updated M, refused K[, unchanged U]": what an import did, in the words the page and its script use. */
export const importResult = (i: { inserted: number; updated: number; unchanged: number; skipped: number }) =>
  `created ${count(i.inserted)}, updated ${count(i.updated)}, refused ${count(i.skipped)}${i.unchanged > 0 ? `, unchanged ${count(i.unchanged)}` : ''}`;

/** The bar and status line an import's script fills (`<prefix>-progress-box`, `<prefix>-progress`, `<prefix>-status`). */
export const ImportProgress = ({ prefix }: { prefix: string }) => (
  <div class="progress" hidden id={`${prefix}-progress-box`}>
    <label for={`${prefix}-progress`}>Rows imported</label>
    <progress id={`${prefix}-progress`} max={100} value={0} />
    <p id={`${prefix}-status`} role="status" aria-live="polite" />
  </div>
);

export async function contactsPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const [types, segments, imports] = await Promise.all([
    listContactTypes(p.ctx),
    listSegments(p.ctx),
    listImports(p.ctx, { page: 1, perPage: IMPORTS_SHOWN }),
  ]);
  const lists = types.rows as Array<{ id: number; name: string; contacts_count: number }>;
  const names = new Map(lists.map((l) => [l.id, l.name]));
  const rows = imports.rows as unknown as Import[];
  sendPage(
    res,
    200,
    <Layout title="Contacts" csrf={p.session.csrf} active="contacts">
      <h1>Contacts</h1>
      <Flash req={req} texts={{ 'list-deleted': 'The list was deleted with its contacts.', 'segment-deleted': 'The segment was deleted.' }} />
      <Section title="Find a contact" id="search">
        <form method="get" action="/app/contacts/search" class="row" role="search">
          <label for="search-email">Address</label>
          <input id="search-email" name="email" type="email" required autoComplete="off" />
          <button type="submit">Search</button>
        </form>
      </Section>
      <Section title="Lists" id="lists">
        {allowed(p, 'audience:manage') ? (
          <p>
            <a class="button" href="/app/lists/new">
              New list
            </a>
          </p>
        ) : null}
        <Table
          name="lists"
          caption="Contact lists and how many contacts each holds"
          rows={lists}
          empty="No lists yet."
          columns={[
            { label: 'List', cell: (l) => <a href={`/app/lists/${l.id}`}>{l.name}</a> },
            { label: 'Contacts', numeric: true, cell: (l) => count(l.contacts_count) },
          ]}
        />
      </Section>
      <Section title="Segments" id="segments">
        {lists.length && allowed(p, 'audience:manage') ? (
          <p>
            <a class="button" href="/app/segments/new">
              New segment
            </a>
          </p>
        ) : null}
        <Table
          name="segments"
          caption="Segments and how many contacts match each"
          rows={segments.rows as unknown as Segment[]}
          empty="No segments yet."
          columns={[
            { label: 'Segment', cell: (s) => <a href={`/app/segments/${s.id}`}>{s.segment_name}</a> },
            { label: 'List', cell: (s) => names.get(s.contact_type_id) ?? '–' },
            { label: 'Contacts', numeric: true, cell: (s) => count(s.segment_emails_count) },
          ]}
        />
      </Section>
      <Section title="Import a CSV file" id="import">
        {!allowed(p, 'audience:manage') ? (
          <p class="muted">Your role does not import contacts (it needs the permission audience:manage).</p>
        ) : lists.length === 0 ? (
          <p class="muted">
            <a href="/app/lists/new">Make a list</a> first; then import into it here.
          </p>
        ) : (
          <form method="post" action="/app/contacts/import" enctype="multipart/form-data" class="stack" id="import-form" data-last-import={String(rows[0]?.id ?? 0)}>
            <input type="hidden" name="_csrf" value={p.session.csrf} />
            <label for="import-list">Into the list</label>
            <select id="import-list" name="contact_type_id" required>
              {lists.map((l) => (
                <option value={String(l.id)}>{l.name}</option>
              ))}
            </select>
            <label for="import-file">CSV file (a header row names the columns: email, first_name, …)</label>
            <input id="import-file" name="file" type="file" accept=".csv,text/csv" required />
            <button type="submit">Import</button>
            <p class="muted">Columns are matched by their header. To choose which column is which, or for a file separated by semicolons or tabs, import from the list’s page.</p>
            <ImportProgress prefix="import" />
          </form>
        )}
      </Section>
      <Section title="Recent imports" id="imports">
        <Table<Import>
          name="imports"
          caption="The latest CSV imports"
          rows={rows}
          empty="No imports yet."
          columns={[
            { label: 'File', cell: (i) => i.file_name },
            { label: 'List', cell: (i) => names.get(i.contact_type_id) ?? '–' },
            { label: 'Started', cell: (i) => <time dateTime={i.created_at}>{when(i.created_at, p.tz)}</time> },
            { label: 'Status', cell: (i) => i.status },
            { label: 'Result', cell: (i) => (i.status === 'completed' ? importResult(i) : i.status === 'failed' ? (i.error ? importError(i.error) : 'failed') : `${count(i.rows_read)} rows read`) },
          ]}
        />
      </Section>
    </Layout>,
  );
}

/** A search by address: one contact opens its page; several (one per list) are listed. */
export async function contactSearchPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const email = typeof req.query.email === 'string' ? req.query.email.trim().slice(0, 254) : '';
  const found = email ? await contactsWithAddress(p.ctx, email) : [];
  if (found.length === 1) {
    res.redirect(303, `/app/contacts/${found[0].id}`);
    return;
  }
  sendPage(
    res,
    found.length ? 200 : 404,
    <Layout title="Contact search" csrf={p.session.csrf} active="contacts">
      <h1>Contacts with {email ? `the address ${email}` : 'no address given'}</h1>
      <Table
        name="search"
        caption="One contact per list"
        rows={found}
        empty="No contact has this address."
        columns={[
          { label: 'List', cell: (c) => <a href={`/app/contacts/${c.id}`}>{c.list_name}</a> },
          { label: 'Name', cell: (c) => `${c.first_name} ${c.last_name}`.trim() || '–' },
        ]}
      />
      <p>
        <a href="/app/contacts">Back to contacts</a>
      </p>
    </Layout>,
  );
}

type Event = Awaited<ReturnType<typeof listEvents>>['events'][number];

function eventDetail(e: Event): string {
  const d = e.data as Record<string, unknown>;
  if (e.type === 'bounced') return [`${String(d.kind ?? '')} bounce`, d.status, d.diagnostic].filter(Boolean).join(' · ');
  if (e.type === 'clicked') return String(d.url ?? '') + (d.suspected_bot ? ' (suspected bot)' : '');
  if (e.type === 'dropped') return `not sent: ${String(d.reason ?? '')}`;
  if (e.type === 'complained') return `complaint${d.feedback_type ? ` (${String(d.feedback_type)})` : ''}`;
  if (e.type === 'deferred') return [d.status, d.diagnostic].filter(Boolean).join(' · ');
  return '';
}

export async function contactPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = /^\d{1,10}$/.test(String(req.params.id)) ? Number(req.params.id) : 0;
  const contact = (await getContact(p.ctx, id > 2_147_483_647 ? 0 : id)) as Record<string, unknown> & { email: string };
  const after = typeof req.query.after === 'string' && /^\d{1,18}$/.test(req.query.after) ? req.query.after : undefined;
  const [lists, memberships, suppressions, history] = await Promise.all([
    contactsWithAddress(p.ctx, contact.email),
    addressMemberships(p.ctx, contact.email),
    listSuppressions(p.ctx, { email: contact.email }),
    listEvents(p.ctx, { email: contact.email, limit: EVENTS_PER_PAGE, cursor: after }),
  ]);
  const suppression = suppressions.rows[0] as { type: string; reason: string; diagnostic: string; created_at: string } | undefined;
  const fields = Object.entries(contact).filter(([k]) => !['user_id', 'deleted_at'].includes(k));
  sendPage(
    res,
    200,
    <Layout title={`Contact ${contact.email}`} csrf={p.session.csrf} active="contacts">
      <h1 class="url">{contact.email}</h1>
      <Flash req={req} texts={{ saved: 'The contact was saved.', unsubscribed: 'The address is unsubscribed from all email.', resubscribed: 'The address is subscribed again.' }} />
      <div class="actions">
        {allowed(p, 'audience:manage') ? (
          <a class="button" href={`/app/contacts/${id}/edit`}>
            Edit
          </a>
        ) : null}
        <a class="button secondary" href={`/app/lists/${String(contact.contact_type_id)}`}>
          Its list
        </a>
      </div>
      <Section title="Fields" id="fields">
        <dl class="fields">
          {fields.map(([k, v]) => (
            <div>
              <dt>{k.replace(/_/g, ' ')}</dt>
              <dd data-field={k}>{v === null || v === '' ? '–' : typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd>
            </div>
          ))}
        </dl>
      </Section>
      <Section title="Lists" id="contact-lists">
        <ul>
          {lists.map((l) => (
            <li>
              <a href={`/app/contacts/${l.id}`}>{l.list_name}</a>
            </li>
          ))}
        </ul>
      </Section>
      <Section title="Unsubscribed from" id="groups">
        {memberships.global_unsubscribe ? <p data-global-unsubscribe>All email (since {when(memberships.global_unsubscribe.since, p.tz)})</p> : null}
        {memberships.groups.length ? (
          <ul>
            {memberships.groups.map((g) => (
              <li>
                {g.group_name} (since {when(g.since, p.tz)})
              </li>
            ))}
          </ul>
        ) : memberships.global_unsubscribe ? null : (
          <p class="muted">No unsubscribe group.</p>
        )}
        {!allowed(p, 'settings:manage') ? null : memberships.global_unsubscribe ? (
          <PostButton action={`/app/contacts/${id}/resubscribe`} csrf={p.session.csrf} label="Re-subscribe" name={contact.email} />
        ) : (
          <PostButton action={`/app/contacts/${id}/unsubscribe`} csrf={p.session.csrf} label="Unsubscribe from all email" name={contact.email} />
        )}
      </Section>
      <Section title="Suppression" id="suppression">
        {suppression ? (
          <p data-suppression={suppression.type}>
            Suppressed ({suppression.type}): {suppression.reason}
            {suppression.diagnostic ? ` · ${suppression.diagnostic}` : ''} · since {when(suppression.created_at, p.tz)}
          </p>
        ) : (
          <p class="muted">Not suppressed.</p>
        )}
      </Section>
      <Section title="Event history" id="history">
        <Table<Event>
          name="history"
          caption="Everything recorded for this address, across sends and automations, oldest first"
          rows={history.events}
          empty="Nothing recorded yet."
          columns={[
            { label: 'When', cell: (e) => <time dateTime={e.occurred_at}>{when(e.occurred_at, p.tz)}</time> },
            { label: 'Event', cell: (e) => e.type },
            {
              label: 'From',
              cell: (e) =>
                e.single_send_utr ? <a href={`/app/sends/${e.single_send_utr}`}>single send</a> : e.automation_utr ? <a href={`/app/automations/${e.automation_utr}`}>automation</a> : '–',
            },
            { label: 'Detail', cell: (e) => <span class="url">{eventDetail(e)}</span> },
          ]}
        />
        {history.next_cursor ? (
          <p>
            <a href={`/app/contacts/${id}?after=${history.next_cursor}#history`}>Next {EVENTS_PER_PAGE}</a>
          </p>
        ) : null}
      </Section>
    </Layout>,
  );
}
