import type { Request, Response } from 'express';
import type { AuditRecord } from '../../audit/read';
import { KEYS_LABEL } from '../../audit/record';
import { auditLogRoutes } from '../../resources/audit-log/audit-log.router';
import { listUsers } from '../../resources/users/users.service';
import { Section, Table } from '../components';
import { ErrorSummary, Field, submitRoute, type FormState } from '../form-kit';
import { count, when } from '../format';
import { Layout } from '../layout';
import { guarded } from '../permissions';
import { page, sendPage, type DashboardKit, type PageContext } from '../respond';
import { routeOf } from './sender-kit';

/**
 * The Activity page (/app/activity, audit:read): the audit log, newest first, 50 entries a page,
 * filtered by user, action and time through GET /audit-log (the route's validation and words).
 */
const AUDIT_LOG = routeOf(auditLogRoutes, '/audit-log');
const PER_PAGE = 50;
const FILTERS = ['user', 'action', 'since'] as const;

interface Listed {
  entries: AuditRecord[];
  pagination?: { page: number; per_page: number; total: number };
}

/** The filters as the query gave them (strings only), and the page asked for. */
function filtersOf(req: Request): { values: Record<string, string>; page: number } {
  const values: Record<string, string> = {};
  for (const name of FILTERS) {
    const v = req.query[name];
    if (typeof v === 'string' && v.trim() !== '') values[name] = v.trim();
  }
  const n = typeof req.query.page === 'string' && /^\d{1,6}$/.test(req.query.page) ? Number(req.query.page) : 1;
  return { values, page: Math.max(1, n) };
}

const pageLink = (values: Record<string, string>, n: number) => `/app/activity?${new URLSearchParams({ ...values, page: String(n) }).toString()}`;

function Who({ e }: { e: AuditRecord }) {
  const via = e.via === 'dashboard' ? 'dashboard' : e.via === 'api' ? 'API' : 'CLI';
  return (
    <span>
      <span class="url">{e.actor}</span> <span class="muted">({via}{e.address ? `, ${e.address}` : ''})</span>
    </span>
  );
}

async function activityPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const { values, page: n } = filtersOf(req);
  const [outcome, users] = await Promise.all([submitRoute(AUDIT_LOG, p, req, res, { query: { ...values, page: n, per_page: PER_PAGE } }), listUsers(p.ctx)]);
  const state: FormState = { values, errors: outcome.ok ? {} : outcome.errors };
  const listed: Listed = outcome.ok ? (outcome.message as Listed) : { entries: [] };
  const total = listed.pagination?.total ?? 0;
  const last = Math.max(1, Math.ceil(total / PER_PAGE));
  const choices = [
    { value: '', label: 'Anybody' },
    { value: 'keys', label: KEYS_LABEL },
    ...users.map((u) => ({ value: String(u.id), label: u.name ? `${u.name} (${u.email})` : u.email })),
  ];
  // A filter by a user removed since (by email, from a link) stays selectable.
  if (values.user && !choices.some((c) => c.value === values.user)) choices.push({ value: values.user, label: values.user });
  sendPage(
    res,
    outcome.ok ? 200 : outcome.status,
    <Layout title="Activity" csrf={p.session.csrf} active="activity" styles={['settings.css']}>
      <h1>Activity</h1>
      <p class="muted">Every change made through the dashboard, the API or the command line: who, when, from where, and what changed.</p>
      <Section title="Filter" id="filter">
        <ErrorSummary state={state} fields={[...FILTERS]} />
        <form method="get" action="/app/activity" class="form" noValidate>
          <Field state={state} name="user" label="Who" type="select" choices={choices} />
          <Field state={state} name="action" label="Action" hint="An action such as user.role_changed, or a kind with its dot: single_send." attrs={{ placeholder: 'single_send.' }} />
          <Field state={state} name="since" label="Since" hint="A date or time, ISO 8601 (UTC unless it says otherwise): 2026-12-01 or 2026-12-01T09:30Z." />
          <div class="actions">
            <button type="submit">Show</button>
            <a href="/app/activity">Clear</a>
          </div>
        </form>
      </Section>
      <Section title="Entries" id="entries">
        <Table<AuditRecord>
          name="activity"
          caption={`Newest first: ${count(total)} ${total === 1 ? 'entry' : 'entries'}${last > 1 ? `, page ${n} of ${last}` : ''}`}
          rows={listed.entries}
          empty="Nothing recorded that matches."
          columns={[
            { label: 'When', cell: (e) => <time dateTime={e.at}>{when(e.at, p.tz)}</time> },
            { label: 'Who', cell: (e) => <Who e={e} /> },
            { label: 'Action', cell: (e) => <code>{e.action}</code> },
            { label: 'Object', cell: (e) => (e.object_kind ? `${e.object_kind}${e.object_id ? ` ${e.object_id}` : ''}` : '–') },
            { label: 'What changed', cell: (e) => e.summary || '–' },
          ]}
        />
        {last > 1 ? (
          <nav aria-label="Pages" class="actions">
            {n > 1 ? <a href={pageLink(values, n - 1)}>Newer</a> : null}
            {n < last ? <a href={pageLink(values, n + 1)}>Older</a> : null}
          </nav>
        ) : null}
      </Section>
    </Layout>,
  );
}

/** The Activity page (src/dashboard/index.tsx mounts each area). */
export function mountActivityPages({ router: r, signedIn }: DashboardKit): void {
  guarded(r, signedIn).get('/activity', 'audit:read', page(activityPage, 'activity'));
}
