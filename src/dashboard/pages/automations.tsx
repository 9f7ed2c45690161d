import { allowed, guarded } from '../permissions';
import type { Permission } from '../../team/permissions';
import type { Request, Response } from 'express';
import type { FieldErrors } from '../../http/errors';
import { automationRoutes } from '../../resources/automations/automations.router';
import { getAutomation, listAutomations } from '../../resources/automations/automations.service';
import { automationEmails, ownerStats } from '../../resources/reports/reports.service';
import type { EmailReport, OwnerStats } from '../../resources/reports/reports.schemas';
import { AutomationStatus } from '../../states';
import { Chart, Metric, Metrics, Section, Table } from '../components';
import { count, dayLabel, dayOf, percent, share } from '../format';
import { submitRoute } from '../form-kit';
import { Layout, PostButton } from '../layout';
import { page, sendPage, type DashboardKit, type PageContext } from '../respond';
import { addEmailAction, editEmailPage, loadSequence, newEmailPage, removeEmailAction, SequenceTable, updateEmailAction, waits } from './automation-emails';
import { createAutomationAction, newAutomationPage } from './automation-form';
import { Flash, Refusal, routeOf } from './sender-kit';

/** Automations and each email of a sequence with its counters (GET /automations, /reports/automation). */
type Automation = Awaited<ReturnType<typeof listAutomations>>['rows'][number] & { automation_schedule_count?: number };

const STATUS: Record<number, string> = { [AutomationStatus.Draft]: 'Draft', [AutomationStatus.Live]: 'Live', [AutomationStatus.Paused]: 'Paused' };

const DONE: Record<string, string> = {
  created: 'The automation was created as a draft. Add its emails, then set it live.',
  'email-added': 'The email was added at the end of the sequence.',
  'email-updated': 'The email was saved.',
  'email-removed': 'The email was removed.',
  live: 'The automation is live.',
  paused: 'The automation is paused: due emails wait until it is live again.',
  resumed: 'The automation is live again.',
};

/** The one state change the automation allows now: set live (a draft), pause (live) or resume (paused). */
function PauseResume({ a, csrf, may }: { a: Pick<Automation, 'utr' | 'status' | 'automation_name'>; csrf: string; may: boolean }) {
  if (!may) return <>–</>;
  if (a.status === AutomationStatus.Live) return <PostButton action={`/app/automations/${a.utr}/pause`} csrf={csrf} label="Pause" name={a.automation_name} />;
  if (a.status === AutomationStatus.Paused) return <PostButton action={`/app/automations/${a.utr}/resume`} csrf={csrf} label="Resume" name={a.automation_name} />;
  return <PostButton action={`/app/automations/${a.utr}/live`} csrf={csrf} label="Set live" name={a.automation_name} />;
}

async function automationsPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const { rows } = await listAutomations(p.ctx);
  sendPage(
    res,
    200,
    <Layout title="Automations" csrf={p.session.csrf} active="automations">
      <h1>Automations</h1>
      <Flash req={req} texts={DONE} />
      {allowed(p, 'campaigns:manage') ? (
        <p>
          <a class="button" href="/app/automations/new">
            New automation
          </a>
        </p>
      ) : null}
      <Section title="Sequences" id="automations">
        <Table<Automation>
          name="automations"
          caption="Every automation, newest first"
          rows={rows as Automation[]}
          empty="No automations yet."
          columns={[
            { label: 'Automation', cell: (a) => <a href={`/app/automations/${a.utr}`}>{a.automation_name}</a> },
            { label: 'Status', cell: (a) => STATUS[a.status] ?? String(a.status) },
            { label: 'Emails', numeric: true, cell: (a) => count(a.automation_schedule_count) },
            { label: 'Sent', numeric: true, cell: (a) => count(a.total_triggered) },
            { label: 'Delivered', numeric: true, cell: (a) => count(a.total_delivered) },
            { label: 'Open rate', numeric: true, cell: (a) => percent(share(a.total_unique_opens, a.total_delivered)) },
            { label: 'Unsubscribes', numeric: true, cell: (a) => count(a.total_unsubscribe) },
            { label: 'Action', cell: (a) => <PauseResume a={a} csrf={p.session.csrf} may={allowed(p, 'campaigns:send')} /> },
          ]}
        />
      </Section>
    </Layout>,
  );
}

/** An automation's page, with a refused state change's messages at its top (status: the refusal's). */
async function renderAutomation(req: Request, res: Response, p: PageContext, status: number, refusal?: FieldErrors): Promise<void> {
  const utr = String(req.params.utr);
  const a = await getAutomation(p.ctx, utr);
  const [stats, { emails }, seq] = await Promise.all([ownerStats(p.ctx, 'automation', utr), automationEmails(p.ctx, utr), loadSequence(p, req, res, utr)]);
  const days = byDay(stats.timeline, p.tz);
  sendPage(
    res,
    status,
    <Layout title={`Automation: ${a.automation_name}`} csrf={p.session.csrf} active="automations" charts styles={['settings.css']}>
      <p>
        <a href="/app/automations">Automations</a>
      </p>
      <h1>{a.automation_name}</h1>
      {refusal ? null : <Flash req={req} texts={DONE} />}
      <Refusal errors={refusal} />
      <p class="muted">
        {STATUS[a.status] ?? String(a.status)} · <PauseResume a={a} csrf={p.session.csrf} may={allowed(p, 'campaigns:send')} />
      </p>
      <Section title="Sequence" id="sequence">
        <SequenceTable seq={seq} utr={a.utr} csrf={p.session.csrf} edit={allowed(p, 'campaigns:manage')} />
        {allowed(p, 'campaigns:manage') ? (
          <p class="sequence-actions">
            <a class="button" href={`/app/automations/${a.utr}/emails/new`}>
              Add an email
            </a>
          </p>
        ) : null}
      </Section>
      <Metrics label="Counters of the whole sequence">
        <Metric name="total_triggered" label="Sent" value={count(stats.total_triggered)} />
        <Metric name="total_delivered" label="Delivered" value={count(stats.total_delivered)} />
        <Metric name="total_unique_opens" label="Unique opens" value={count(stats.total_unique_opens)} />
        <Metric name="unique_clicks" label="Human clicks" value={count(stats.unique_clicks)} />
        <Metric name="total_bounces" label="Bounces" value={count(stats.total_bounces)} />
        <Metric name="complaints" label="Complaints" value={count(stats.complaints)} />
        <Metric name="total_unsubscribe" label="Unsubscribes" value={count(stats.total_unsubscribe)} />
      </Metrics>
      <Section title="Emails, in order" id="emails">
        <Table<EmailReport & { position: number }>
          name="emails"
          caption="Each email of the sequence with its counters"
          rows={emails.map((e, i) => ({ ...e, position: i + 1 }))}
          empty="This automation has no emails yet."
          columns={[
            { label: '#', numeric: true, cell: (e) => e.position },
            { label: 'Subject', cell: (e) => e.subject },
            { label: 'Waits', cell: (e) => waits(e) },
            { label: 'Sent', numeric: true, cell: (e) => count(e.triggered) },
            { label: 'Delivered', numeric: true, cell: (e) => count(e.delivered) },
            { label: 'Unique opens', numeric: true, cell: (e) => count(e.unique_opens) },
            { label: 'Human clicks', numeric: true, cell: (e) => count(e.unique_clicks) },
            { label: 'Bounces', numeric: true, cell: (e) => count(e.bounces) },
            { label: 'Complaints', numeric: true, cell: (e) => count(e.complaints) },
            { label: 'Unsubscribes', numeric: true, cell: (e) => count(e.unsubscribes) },
          ]}
        />
      </Section>
      <Section title="Day by day" id="timeline">
        <Chart
          id="chart-automation-timeline"
          title="Delivered, opens and clicks per day"
          description={`${days.length} days with activity (the last ${DAYS_SHOWN} at most)`}
          spec={{
            kind: 'bar',
            labels: days.map((d) => dayLabel(d.day)),
            series: [
              { label: 'Delivered', data: days.map((d) => d.delivered), color: 1 },
              { label: 'Opens', data: days.map((d) => d.opens), color: 2 },
              { label: 'Clicks', data: days.map((d) => d.clicks), color: 3 },
            ],
          }}
        />
      </Section>
    </Layout>,
  );
}

/** An automation runs for months: its hourly timeline summed by day (in the zone), the last DAYS_SHOWN days with activity. */
const DAYS_SHOWN = 90;
function byDay(timeline: OwnerStats['automation']['timeline'], tz: string): Array<{ day: string; delivered: number; opens: number; clicks: number }> {
  const days = new Map<string, { day: string; delivered: number; opens: number; clicks: number }>();
  for (const t of timeline) {
    const day = dayOf(t.hour, tz);
    const d = days.get(day) ?? { day, delivered: 0, opens: 0, clicks: 0 };
    d.delivered += t.delivered;
    d.opens += t.opens;
    d.clicks += t.clicks;
    days.set(day, d);
  }
  return [...days.values()].slice(-DAYS_SHOWN);
}

const automationPage = (req: Request, res: Response, p: PageContext) => renderAutomation(req, res, p, 200);

const PAUSE = routeOf(automationRoutes, '/automations/pause');
const SET_LIVE = routeOf(automationRoutes, '/automations/set-live');

/**
 * Set live (a draft), pause (live → paused) or resume (paused → live: the API's set-live): the
 * API's routes, with their rules and events. A refusal (no unsubscribe group, no email yet, not
 * live) is shown on the automation's page in the API's words.
 */
function setAutomationState(action: 'live' | 'pause' | 'resume') {
  return async (req: Request, res: Response, p: PageContext): Promise<void> => {
    const utr = String(req.params.utr);
    await getAutomation(p.ctx, utr);
    const done = await submitRoute(action === 'pause' ? PAUSE : SET_LIVE, p, req, res, { query: { utr } });
    if (done.ok) res.redirect(303, `/app/automations/${utr}?done=${action === 'pause' ? 'paused' : action === 'resume' ? 'resumed' : 'live'}`);
    else await renderAutomation(req, res, p, done.status, done.errors);
  };
}

/** The automations' pages (src/dashboard/index.tsx mounts each area). */
export function mountAutomationPages({ router: r, signedIn, requireCsrf, form }: DashboardKit): void {
  const g = guarded(r, signedIn);
  const post = (path: string, permission: Permission, handler: Parameters<typeof page>[0]) => g.post(path, permission, form, requireCsrf, page(handler, 'automations'));
  g.get('/automations', 'read', page(automationsPage, 'automations'));
  g.get('/automations/new', 'campaigns:manage', page(newAutomationPage, 'automations'));
  post('/automations/new', 'campaigns:manage', createAutomationAction);
  g.get('/automations/:utr', 'read', page(automationPage, 'automations'));
  post('/automations/:utr/live', 'campaigns:send', setAutomationState('live'));
  post('/automations/:utr/pause', 'campaigns:send', setAutomationState('pause'));
  post('/automations/:utr/resume', 'campaigns:send', setAutomationState('resume'));
  g.get('/automations/:utr/emails/new', 'campaigns:manage', page(newEmailPage, 'automations'));
  post('/automations/:utr/emails/new', 'campaigns:manage', addEmailAction);
  g.get('/automations/:utr/emails/:email/edit', 'campaigns:manage', page(editEmailPage, 'automations'));
  post('/automations/:utr/emails/:email/edit', 'campaigns:manage', updateEmailAction);
  post('/automations/:utr/emails/:email/delete', 'campaigns:manage', removeEmailAction);
}
