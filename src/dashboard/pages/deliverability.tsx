import type { Request, Response } from 'express';
import { COMPLAINT_LIMIT, COMPLAINT_WARNING, lastChecks, overview } from '../../resources/reports/reports.service';
import { checkSenderRecords, senderRecords } from '../../resources/senders/sender-dns.service';
import { listSenders } from '../../resources/senders/senders.service';
import { deleteSuppressions, listSuppressions } from '../../resources/suppressions/suppressions.service';
import { SUPPRESSION_TYPES } from '../../resources/suppressions/suppressions.schemas';
import { listRoutes } from '../../resources/routes/routes.service';
import { routeHours, type RouteHours } from '../../events/route-hours';
import type { RouteView } from '../../routes/types';
import { DnsRecordStatus } from '../../states';
import { Chart, Section, Table } from '../components';
import { count, dayLabel, hourLabel, when } from '../format';
import { Layout, PostButton } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { OVERVIEW_DAYS } from './overview';
import { allowed, auditAction } from '../permissions';

/**
 * Senders with the DNS records to publish (GET /sender/dns) and "check now" (POST
 * /sender/dns/check), the delivery routes (GET /routes) with the account's messages per route and
 * hour, suppressions (GET /suppressions/list, lift one), and the bounce and complaint trends of the
 * overview's days (GET /reports/overview).
 */
const SUPPRESSIONS_PER_PAGE = 50;
type SuppressionRow = { id: number; email: string; type: string; reason: string; diagnostic: string; source: string; created_at: string };

const rate = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 100_000) / 1000 : null);

export async function deliverabilityPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const type = typeof req.query.type === 'string' && (SUPPRESSION_TYPES as readonly string[]).includes(req.query.type) ? (req.query.type as (typeof SUPPRESSION_TYPES)[number]) : undefined;
  const pageNo = typeof req.query.page === 'string' && /^\d{1,6}$/.test(req.query.page) && Number(req.query.page) > 0 ? Number(req.query.page) : 1;
  const config = p.deps.config;
  const [senders, suppressions, o, routes, hours] = await Promise.all([
    listSenders(p.ctx),
    listSuppressions(p.ctx, { type }, { page: pageNo, perPage: SUPPRESSIONS_PER_PAGE }),
    overview(p.ctx, { days: OVERVIEW_DAYS, tz: p.tz }),
    listRoutes(p.ctx, p.deps),
    routeHours(p.ctx.db, p.ctx.userId),
  ]);
  const rows = senders.rows as Array<{ id: number; from_email: string; from_name: string; is_verified: number }>;
  const records = await Promise.all(rows.map((s) => senderRecords(p.ctx, config, s.id)));
  const checked = await lastChecks(p.ctx, records.map((r) => r.domain));
  const total = suppressions.pagination?.total ?? 0;
  const query = (n: number) => `/app/deliverability?${type ? `type=${type}&` : ''}page=${n}#suppressions`;
  sendPage(
    res,
    200,
    <Layout title="Deliverability" csrf={p.session.csrf} active="deliverability" charts>
      <h1>Deliverability</h1>
      <Section title="Senders and their DNS records" id="senders">
        {rows.length === 0 ? <p class="muted">No senders yet.</p> : null}
        {rows.map((s, i) => (
          <article class="sender" id={`sender-${s.id}`} aria-labelledby={`sender-${s.id}-h`}>
            <h3 id={`sender-${s.id}-h`}>
              {s.from_name} &lt;{s.from_email}&gt;
            </h3>
            <p class="muted">
              {records[i].domain} · last checked {when(checked.get(records[i].domain) ?? null, p.tz)}
            </p>
            <Table
              name={`records-${s.id}`}
              caption={`Records to publish for ${records[i].domain}`}
              rows={records[i].records}
              empty="No records."
              columns={[
                { label: 'Purpose', cell: (r) => r.purpose.toUpperCase() },
                { label: 'Type', cell: (r) => r.type },
                { label: 'Host', cell: (r) => <span class="url">{r.host}</span> },
                { label: 'Value', cell: (r) => <code class="url">{r.value}</code> },
                { label: 'Status', cell: (r) => <span class={`status ${r.status}`}>{r.status}</span> },
              ]}
            />
            {allowed(p, 'settings:manage') ? <PostButton action={`/app/senders/${s.id}/check`} csrf={p.session.csrf} label="Check now" name={`the records of ${records[i].domain}`} /> : null}
          </article>
        ))}
      </Section>
      <RoutesSection routes={routes} hours={hours} tz={p.tz} />
      <Section title="Bounces and complaints" id="trends">
        <Chart
          id="chart-trends"
          title="Bounce and complaint rates per day"
          description={`the last ${o.days} days; complaint warning above ${COMPLAINT_WARNING * 100} %, limit ${COMPLAINT_LIMIT * 100} %`}
          spec={{
            kind: 'line',
            percent: true,
            labels: o.daily.map((d) => dayLabel(d.date)),
            series: [
              { label: 'Bounce rate', data: o.daily.map((d) => rate(d.bounces, d.delivered + d.bounces)), color: 1 },
              { label: 'Complaint rate', data: o.daily.map((d) => rate(d.complaints, d.delivered)), color: 4 },
              { label: '0.3 % complaint limit', data: o.daily.map(() => COMPLAINT_LIMIT * 100), color: 5, reference: true },
            ],
          }}
        />
        <p class="muted">
          {count(o.totals.bounces)} bounces and {count(o.totals.complaints)} complaints in {o.days} days.
        </p>
      </Section>
      <Section title="Suppressions" id="suppressions">
        <form method="get" action="/app/deliverability#suppressions" class="row">
          <label for="suppression-type">Type</label>
          <select id="suppression-type" name="type">
            <option value="" selected={!type}>
              All
            </option>
            {SUPPRESSION_TYPES.map((t) => (
              <option value={t} selected={t === type}>
                {t}
              </option>
            ))}
          </select>
          <button type="submit">Filter</button>
        </form>
        <Table<SuppressionRow>
          name="suppressions"
          caption={`Suppressed addresses, newest first (${count(total)} in all)`}
          rows={suppressions.rows as SuppressionRow[]}
          empty="No suppressed addresses."
          columns={[
            { label: 'Address', cell: (x) => <span class="url">{x.email}</span> },
            { label: 'Type', cell: (x) => x.type },
            { label: 'Reason', cell: (x) => [x.reason, x.diagnostic].filter(Boolean).join(' · ') },
            { label: 'Source', cell: (x) => x.source },
            { label: 'Since', cell: (x) => <time dateTime={x.created_at}>{when(x.created_at, p.tz)}</time> },
            {
              label: 'Action',
              cell: (x) => (allowed(p, 'settings:manage') ? <PostButton action="/app/suppressions/lift" csrf={p.session.csrf} label="Lift" name={`the suppression of ${x.email}`} fields={{ email: x.email }} /> : '–'),
            },
          ]}
        />
        <p class="pager">
          {pageNo > 1 ? <a href={query(pageNo - 1)}>Previous</a> : null}{' '}
          {pageNo * SUPPRESSIONS_PER_PAGE < total ? <a href={query(pageNo + 1)}>Next</a> : null}
        </p>
      </Section>
    </Layout>,
  );
}

export async function checkSenderAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = /^\d{1,9}$/.test(String(req.params.id)) ? Number(req.params.id) : 0;
  const checked = await checkSenderRecords(p.ctx, p.deps.config, id);
  const verified = checked.records.filter((r) => r.status === DnsRecordStatus.Verified).length;
  await auditAction(p, { action: 'sender.dns_checked', objectKind: 'sender', objectId: id, summary: `${verified} of ${checked.records.length} records verified` });
  res.redirect(303, `/app/deliverability#sender-${id}`);
}

export async function liftSuppressionAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const email = typeof req.body?.email === 'string' ? req.body.email.trim() : '';
  if (email) {
    await deleteSuppressions(p.ctx, [email]);
    await auditAction(p, { action: 'suppression.lifted', objectKind: 'suppression', summary: 'lifted for 1 address' });
  }
  res.redirect(303, '/app/deliverability#suppressions');
}

const quotas = (r: RouteView) =>
  [r.max_per_second && `${count(r.max_per_second)}/s`, r.max_per_hour && `${count(r.max_per_hour)}/h`, r.max_per_day && `${count(r.max_per_day)}/day`].filter(Boolean).join(' · ') || 'none';

/** The routes the account's mail may take (the same routeViews as GET /routes) and its messages per route and hour. */
function RoutesSection({ routes, hours, tz }: { routes: RouteView[]; hours: RouteHours; tz: string }) {
  return (
    <Section title="Delivery routes" id="routes">
      <Table<RouteView>
        name="routes"
        caption="The relays your mail may go through"
        rows={routes}
        empty="No relay is configured (SMTP_URL or SMTP_ROUTES): mail goes to the outbox."
        columns={[
          { label: 'Route', cell: (r) => <strong>{r.name}</strong> },
          { label: 'Status', cell: (r) => <span class={`status route-${r.status}`}>{r.status}</span> },
          { label: 'Weight', numeric: true, cell: (r) => String(r.weight) },
          { label: 'Quotas', cell: quotas },
          { label: 'Sent this hour', numeric: true, cell: (r) => count(r.sent_last_hour) },
          { label: 'Sent today', numeric: true, cell: (r) => count(r.sent_today) },
          { label: 'Warm-up', cell: (r) => (r.warmup ? `day ${r.warmup.day}: ${count(r.warmup.cap_per_hour)}/h` : '–') },
          { label: 'Streams', cell: (r) => r.streams.join(', ') },
          {
            label: 'Blocked by',
            cell: (r) =>
              r.blocked_providers.length
                ? r.blocked_providers.map((b) => (
                    <span class="blocked">
                      {b.provider} until <time dateTime={b.until}>{when(b.until, tz)}</time>{' '}
                    </span>
                  ))
                : '–',
          },
          {
            label: 'Last error',
            cell: (r) => (
              <>
                {r.down_since ? (
                  <span class="muted">
                    down since <time dateTime={r.down_since}>{when(r.down_since, tz)}</time>{' '}
                  </span>
                ) : null}
                {r.last_error ? <code class="url">{r.last_error}</code> : '–'}
              </>
            ),
          },
        ]}
      />
      <RouteChart hours={hours} tz={tz} />
    </Section>
  );
}

/**
 * Messages (delivered, deferred, bounced) per route and hour over the last 24 hours, drawn here as
 * SVG: no script, no inline style (the page's CSP). The drawing stretches to the width (its lines
 * keep their thickness); the labels are HTML beside it, so they stay readable on a phone.
 */
function RouteChart({ hours, tz }: { hours: RouteHours; tz: string }) {
  const title = 'Messages per route per hour, last 24 hours';
  if (hours.routes.length === 0) {
    return (
      <figure class="chart">
        <figcaption>{title}</figcaption>
        <p class="muted">No message went through a route in the last 24 hours.</p>
      </figure>
    );
  }
  const max = Math.max(1, ...hours.routes.flatMap((r) => r.perHour));
  const x = (i: number) => i * 10;
  const y = (n: number) => Math.round((100 - (n / max) * 95) * 100) / 100;
  const at = (i: number) => new Date(new Date(hours.start).getTime() + i * 3_600_000).toISOString();
  const summary = hours.routes
    .map((r) => `${r.route}: ${count(r.totals.delivered)} delivered, ${count(r.totals.deferred)} deferred, ${count(r.totals.bounced)} bounced`)
    .join('; ');
  return (
    <figure class="chart route-chart">
      <figcaption id="route-chart-title">{title}</figcaption>
      <div class="svg-chart-box">
        <span class="svg-chart-max">{count(max)}</span>
        <svg class="svg-chart" viewBox="0 0 230 100" preserveAspectRatio="none" role="img" aria-labelledby="route-chart-title route-chart-desc" focusable="false">
          <desc id="route-chart-desc">{summary}</desc>
          {[0, 50, 100].map((g) => (
            <line class="grid" x1="0" x2="230" y1={String(y((g / 100) * max))} y2={String(y((g / 100) * max))} vector-effect="non-scaling-stroke" />
          ))}
          {hours.routes.map((r, i) => (
            <polyline
              class={`line s${(i % 5) + 1}`}
              data-route={r.route}
              points={r.perHour.map((n, h) => `${x(h)},${y(n)}`).join(' ')}
              vector-effect="non-scaling-stroke"
            />
          ))}
        </svg>
      </div>
      <div class="svg-chart-x" aria-hidden="true">
        <span>{hourLabel(at(0), tz)}</span>
        <span>{hourLabel(at(12), tz)}</span>
        <span>{hourLabel(at(23), tz)}</span>
      </div>
      <ul class="legend">
        {hours.routes.map((r, i) => (
          <li class={`s${(i % 5) + 1}`}>
            <span class="swatch" aria-hidden="true" />
            {r.route}: {count(r.totals.delivered)} delivered, {count(r.totals.deferred)} deferred, {count(r.totals.bounced)} bounced
          </li>
        ))}
      </ul>
    </figure>
  );
}
