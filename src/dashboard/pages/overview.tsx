import type { Request, Response } from 'express';
import { COMPLAINT_LIMIT, COMPLAINT_WARNING, overview } from '../../resources/reports/reports.service';
import type { Overview } from '../../resources/reports/reports.schemas';
import { Chart, Metric, Metrics, Section, Table } from '../components';
import { count, dayLabel, importError, percent, share, when } from '../format';
import { Layout } from '../layout';
import { sendPage, type PageContext } from '../respond';

/** The first page: the last 30 days, as GET /reports/overview?days=30 tells a script. */
export const OVERVIEW_DAYS = 30;

type Warning = Overview['warnings'][number];

function warningText(w: Warning): { text: string; href: string } {
  switch (w.type) {
    case 'dns':
      return { text: `${w.domain}: the ${w.record.toUpperCase()} record is ${w.status === 'missing' ? 'missing' : 'not the one Herald asks for'}.`, href: `/app/deliverability#sender-${w.sender_id}` };
    case 'webhook':
      return { text: `Webhook ${w.url} is ${w.state === 'disabled' ? 'disabled after failing' : 'failing'}.`, href: `/app/webhooks/${w.webhook_id}` };
    case 'import':
      return { text: `The import of ${w.file_name} failed${w.error ? `: ${importError(w.error)}` : '.'}`, href: '/app/contacts#imports' };
    case 'route':
      return { text: `Delivery route ${w.route} is blocked by ${w.provider}${w.diagnostic ? `: ${w.diagnostic}` : '.'} Its mail to ${w.provider} goes through other routes or waits.`, href: '/app/deliverability#routes' };
  }
}

const LEVEL_NOTE = {
  ok: 'under the 0.1 % warning line',
  warning: 'above the 0.1 % warning line',
  over: 'over the 0.3 % limit of Gmail and Yahoo',
};

export function OverviewPage({ o, csrf, tz }: { o: Overview; csrf: string; tz: string }) {
  const dailyRate = (part: number, whole: number) => {
    const r = share(part, whole);
    return r === null ? null : Math.round(r * 100_000) / 1000;
  };
  return (
    <Layout title="Overview" csrf={csrf} active="overview" charts>
      <h1>Overview</h1>
      <p class="muted">
        The last {o.days} days, in {tz}. A single send counts on the day it was sent; automation emails as they happen.
      </p>
      {o.warnings.length ? (
        <section class="card warnings" aria-labelledby="warnings-h" id="warnings">
          <h2 id="warnings-h">Needs attention</h2>
          <ul>
            {o.warnings.map((w) => {
              const { text, href } = warningText(w);
              return (
                <li data-warning={w.type}>
                  <a href={href}>{text}</a>
                </li>
              );
            })}
          </ul>
        </section>
      ) : null}
      <Metrics label="Totals of the period">
        <Metric name="sends" label="Sends" value={count(o.totals.sends)} />
        <Metric name="delivered" label="Delivered" value={count(o.totals.delivered)} />
        <Metric name="unique_open" label="Unique open rate" value={percent(o.rates.unique_open)} />
        <Metric name="human_click" label="Human click rate" value={percent(o.rates.human_click)} note="clicks flagged as bots not counted" />
        <Metric name="bounce" label="Bounce rate" value={percent(o.rates.bounce)} note="of delivered + bounced" />
        <Metric name="complaint" label="Complaint rate" value={percent(o.rates.complaint, 2)} note={LEVEL_NOTE[o.complaint_level]} level={o.complaint_level} />
      </Metrics>
      <Section title="Day by day" id="daily">
        <Chart
          id="chart-daily"
          title="Delivered, unique opens and human clicks per day"
          description={`${count(o.totals.delivered)} delivered, ${count(o.totals.unique_opens)} unique opens, ${count(o.totals.unique_clicks)} human clicks in ${o.days} days`}
          spec={{
            kind: 'line',
            labels: o.daily.map((d) => dayLabel(d.date)),
            series: [
              { label: 'Delivered', data: o.daily.map((d) => d.delivered), color: 1 },
              { label: 'Unique opens', data: o.daily.map((d) => d.unique_opens), color: 2 },
              { label: 'Human clicks', data: o.daily.map((d) => d.unique_clicks), color: 3 },
            ],
          }}
        />
        <Chart
          id="chart-complaints"
          title="Complaint rate per day, against the 0.3 % limit"
          description={`complaint rate ${percent(o.rates.complaint, 2)} over the period; warning above ${COMPLAINT_WARNING * 100} %, limit ${COMPLAINT_LIMIT * 100} %`}
          spec={{
            kind: 'line',
            percent: true,
            labels: o.daily.map((d) => dayLabel(d.date)),
            series: [
              { label: 'Complaint rate', data: o.daily.map((d) => dailyRate(d.complaints, d.delivered)), color: 4 },
              { label: '0.3 % limit', data: o.daily.map(() => COMPLAINT_LIMIT * 100), color: 5, reference: true },
              { label: '0.1 % warning', data: o.daily.map(() => COMPLAINT_WARNING * 100), color: 3, reference: true },
            ],
          }}
        />
      </Section>
      <Section title="Latest sends" id="latest">
        <Table
          name="latest-sends"
          caption="The newest single sends that went out"
          rows={o.latest_sends}
          empty="Nothing was sent yet."
          columns={[
            { label: 'Send', cell: (s) => <a href={`/app/sends/${s.utr}`}>{s.single_send_name}</a> },
            { label: 'Subject', cell: (s) => s.subject },
            { label: 'Sent', cell: (s) => <time dateTime={s.sent_at}>{when(s.sent_at, tz)}</time> },
            { label: 'Recipients', numeric: true, cell: (s) => count(s.triggered) },
            { label: 'Delivered', numeric: true, cell: (s) => count(s.delivered) },
            { label: 'Open rate', numeric: true, cell: (s) => percent(share(s.unique_opens, s.delivered)) },
            { label: 'Click rate', numeric: true, cell: (s) => percent(share(s.unique_clicks, s.delivered)) },
            { label: 'Bounces', numeric: true, cell: (s) => count(s.bounces) },
            { label: 'Complaints', numeric: true, cell: (s) => count(s.complaints) },
          ]}
        />
      </Section>
    </Layout>
  );
}

export async function overviewPage(_req: Request, res: Response, p: PageContext): Promise<void> {
  const o = await overview(p.ctx, { days: OVERVIEW_DAYS, tz: p.tz });
  sendPage(res, 200, <OverviewPage o={o} csrf={p.session.csrf} tz={p.tz} />);
}
