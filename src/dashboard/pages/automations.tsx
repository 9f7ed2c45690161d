import type { Request, Response } from 'express';
import { getAutomation, listAutomations, pause, setLive } from '../../resources/automations/automations.service';
import { automationEmails, ownerStats } from '../../resources/reports/reports.service';
import type { EmailReport, OwnerStats } from '../../resources/reports/reports.schemas';
import { AutomationStatus } from '../../states';
import { Chart, Metric, Metrics, Section, Table } from '../components';
import { count, dayLabel, dayOf, percent, share } from '../format';
import { Layout, PostButton } from '../layout';
import { page, sendPage, type DashboardKit, type PageContext } from '../respond';

/** Automations and each email of a sequence with its counters (GET /automations, /reports/automation). */
type Automation = Awaited<ReturnType<typeof listAutomations>>['rows'][number] & { automation_schedule_count?: number };

const STATUS: Record<number, string> = { [AutomationStatus.Draft]: 'Draft', [AutomationStatus.Live]: 'Live', [AutomationStatus.Paused]: 'Paused' };

function PauseResume({ a, csrf }: { a: Pick<Automation, 'utr' | 'status' | 'automation_name'>; csrf: string }) {
  if (a.status === AutomationStatus.Live) return <PostButton action={`/app/automations/${a.utr}/pause`} csrf={csrf} label="Pause" name={a.automation_name} />;
  if (a.status === AutomationStatus.Paused) return <PostButton action={`/app/automations/${a.utr}/resume`} csrf={csrf} label="Resume" name={a.automation_name} />;
  return <span class="muted">not live yet</span>;
}

async function automationsPage(_req: Request, res: Response, p: PageContext): Promise<void> {
  const { rows } = await listAutomations(p.ctx);
  sendPage(
    res,
    200,
    <Layout title="Automations" csrf={p.session.csrf} active="automations">
      <h1>Automations</h1>
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
            { label: 'Action', cell: (a) => <PauseResume a={a} csrf={p.session.csrf} /> },
          ]}
        />
      </Section>
    </Layout>,
  );
}

async function automationPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const utr = String(req.params.utr);
  const a = await getAutomation(p.ctx, utr);
  const [stats, { emails }] = await Promise.all([ownerStats(p.ctx, 'automation', utr), automationEmails(p.ctx, utr)]);
  const days = byDay(stats.timeline, p.tz);
  sendPage(
    res,
    200,
    <Layout title={`Automation: ${a.automation_name}`} csrf={p.session.csrf} active="automations" charts>
      <h1>{a.automation_name}</h1>
      <p class="muted">
        {STATUS[a.status] ?? String(a.status)} · <PauseResume a={a} csrf={p.session.csrf} />
      </p>
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
            { label: 'Waits', cell: (e) => (e.waiting_type === 'instantly' ? 'no wait' : `${e.waiting_period} ${e.waiting_type}`) },
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

/** Pause (live → paused) or resume (paused → live): the API's own rules and events. */
function setAutomationState(action: 'pause' | 'resume') {
  return async (req: Request, res: Response, p: PageContext): Promise<void> => {
    const utr = String(req.params.utr);
    if (action === 'pause') await pause(p.ctx, utr);
    else await setLive(p.ctx, utr);
    res.redirect(303, `/app/automations/${utr}`);
  };
}

/** The automations' pages (src/dashboard/index.tsx mounts each area). */
export function mountAutomationPages({ router: r, signedIn, requireCsrf, form }: DashboardKit): void {
  r.get('/automations', signedIn, page(automationsPage, 'automations'));
  r.get('/automations/:utr', signedIn, page(automationPage, 'automations'));
  r.post('/automations/:utr/pause', form, signedIn, requireCsrf, page(setAutomationState('pause'), 'automations'));
  r.post('/automations/:utr/resume', form, signedIn, requireCsrf, page(setAutomationState('resume'), 'automations'));
}
