import type { Request, Response } from 'express';
import { listEvents } from '../../resources/events/events.service';
import { eventsWithKeptReport, keptReport, ownerStats } from '../../resources/reports/reports.service';
import { findSender } from '../../resources/senders/senders.service';
import { findByUtr, pickAbWinner } from '../../resources/single-sends/single-sends.service';
import { variationLetter } from '../../ab/settings';
import type { OwnerStats } from '../../resources/reports/reports.schemas';
import { Chart, Metric, Metrics, Section, Table } from '../components';
import { count, hourLabel, percent, share, when } from '../format';
import { Layout, MessagePage, PostButton } from '../layout';
import { errorLines, sendPage, type PageContext } from '../respond';
import { submitRoute } from '../form-kit';
import { apiRoute } from './send-shared';
import { allowed, auditAction } from '../permissions';

/**
 * A single send's report: the funnel, the hourly timeline, its links, its bounces and
 * complaints — read through the services of GET /single/send/stats and GET /events.
 */
type Stats = OwnerStats['single_send'];
type Problem = Awaited<ReturnType<typeof listEvents>>['events'][number];
const PROBLEMS_PER_PAGE = 100;

interface SendInfo {
  utr: string;
  single_send_name: string;
  subject: string;
  status: number;
  sent_at: string | null;
  /** When it was paused (POST /single/send/pause), null while it is not. */
  paused_at: string | null;
}

const STATUS = ['Draft', 'Ready', 'Sending', 'Completed'];

function Funnel({ s }: { s: Stats }) {
  const recipients = s.triggered + s.dropped;
  const steps = [
    { name: 'recipients', label: 'Recipients', value: recipients },
    { name: 'dropped', label: 'Dropped (suppressed)', value: s.dropped },
    { name: 'delivered', label: 'Delivered', value: s.delivered },
    { name: 'opened', label: 'Opened', value: s.unique_opens },
    { name: 'clicked', label: 'Clicked (humans)', value: s.unique_clicks },
  ];
  return (
    <ol class="funnel" aria-label="Funnel">
      {steps.map((step) => (
        <li>
          <span class="step">{step.label}</span>
          <span class="value" data-funnel={step.name}>
            {count(step.value)}
          </span>
          <span class="share">{step.name === 'recipients' ? '' : percent(share(step.value, recipients))}</span>
          <meter min={0} max={Math.max(recipients, 1)} value={step.value} aria-label={`${step.label}: ${count(step.value)} of ${count(recipients)}`} />
        </li>
      ))}
    </ol>
  );
}

function problemReason(e: Problem): string {
  const d = e.data as { kind?: string; status?: string | null; diagnostic?: string; feedback_type?: string };
  if (e.type === 'complained') return `Complaint${d.feedback_type ? ` (${d.feedback_type})` : ''}`;
  return [d.kind ? `${d.kind} bounce` : 'bounce', d.status, d.diagnostic].filter(Boolean).join(' · ');
}

type Ab = NonNullable<Stats['ab']>;

const CRITERIA = { open: 'people who opened', click: 'people who clicked', manual: 'a person’s pick' } as const;
const DECIDED_BY = { significant: 'on the evidence', leader: 'the leader (inconclusive)', original: 'the original (inconclusive)', manual: 'by hand' } as const;
const AB_STATUS = { pending: 'not started', testing: 'testing', waiting: 'waiting for a person to pick', decided: 'decided', completed: 'completed' } as const;

/** What a variation varies: its subject, its design's template, or its sender's address. */
function varied(v: Ab['variations'][number], senders: Map<number, string>): string {
  if (v.subject !== undefined) return v.subject;
  if (v.template_id !== undefined) return `Template ${v.template_id}`;
  return senders.get(v.sender_id ?? 0) ?? `Sender ${v.sender_id}`;
}

/**
 * An A/B send's variations side by side (src/ab/report.ts, through the stats service): their
 * rates, each rate's 95 % interval and the probability that it is the best on the test's
 * criterion, the winner; where the test runs or waits, a button per variation to pick it.
 */
function AbSection({ ab, utr, csrf, tz, senders, pick }: { ab: Ab; utr: string; csrf: string; tz: string; senders: Map<number, string>; pick: boolean }) {
  const open = pick && (ab.status === 'testing' || ab.status === 'waiting');
  const rate = ab.winner_criteria === 'open' ? 'open_rate' : 'click_rate';
  return (
    <Section title="A/B test" id="ab">
      <p data-ab-status={ab.status}>
        A {ab.type} test of {ab.variations.length} variations on {ab.test_percentage} % of the audience
        {ab.test_size !== null ? ` (${count(ab.test_size)} recipients)` : ''}, decided by {CRITERIA[ab.winner_criteria]}
        {ab.winner_criteria === 'manual' ? '' : ` ${ab.duration_minutes} minutes after the test’s last message, at ${percent(ab.confidence)} confidence`}: {AB_STATUS[ab.status]}.
        {ab.winner !== null ? (
          <>
            {' '}
            Winner: <strong data-ab-winner={ab.winner}>variation {variationLetter(ab.winner)}</strong>, {DECIDED_BY[ab.decided_by ?? 'manual']}
            {ab.decided_at ? (
              <>
                {' '}
                on <time dateTime={ab.decided_at}>{when(ab.decided_at, tz)}</time>
              </>
            ) : null}
            .
          </>
        ) : null}
      </p>
      <Table
        name="variations"
        caption={`The test phase's figures${ab.winner !== null ? ' as they were at the decision' : ', live'}; intervals and probabilities on the ${ab.winner_criteria === 'open' ? 'open' : 'click'} rate`}
        rows={ab.variations}
        empty="No variations."
        columns={[
          { label: 'Variation', cell: (v) => <span data-variation={v.index}>{variationLetter(v.index)}{v.index === ab.winner ? ' (winner)' : ''}</span> },
          { label: ab.type === 'subject' ? 'Subject' : ab.type === 'design' ? 'Design' : 'Sender', cell: (v) => <span class="subject">{varied(v, senders)}</span> },
          { label: 'Recipients', numeric: true, cell: (v) => count(v.recipients) },
          { label: 'Delivered', numeric: true, cell: (v) => count(v.delivered) },
          { label: 'Open rate', numeric: true, cell: (v) => percent(v.open_rate) },
          { label: 'Click rate', numeric: true, cell: (v) => percent(v.click_rate) },
          { label: '95 % interval', numeric: true, cell: (v) => `${percent(v.interval[0])} – ${percent(v.interval[1])}` },
          {
            label: 'Chance of being best',
            numeric: true,
            cell: (v) => (
              <>
                <span data-probability-best={v.index}>{percent(v.probability_best)}</span>{' '}
                <meter min={0} max={1} value={v.probability_best} aria-label={`Variation ${variationLetter(v.index)}: ${percent(v.probability_best)} chance of having the best ${rate.replace('_', ' ')}`} />
              </>
            ),
          },
          ...(open
            ? [
                {
                  label: 'Pick',
                  cell: (v: Ab['variations'][number]) => (
                    <PostButton action={`/app/sends/${utr}/ab/winner`} csrf={csrf} label="Send this to the rest" name={`variation ${variationLetter(v.index)}`} fields={{ variation: String(v.index) }} />
                  ),
                },
              ]
            : []),
        ]}
      />
    </Section>
  );
}

/** What the session's role may do from the report (the buttons it is shown). */
interface May {
  manage: boolean;
  send: boolean;
}
const ALL: May = { manage: true, send: true };

export function SendReport({ send, s, problems, kept, nextCursor, csrf, tz, senders, refused = [], may = ALL }: { send: SendInfo; s: Stats; problems: Problem[]; kept: Set<string>; nextCursor: string | null; csrf: string; tz: string; senders: Map<number, string>; refused?: string[]; may?: May }) {
  return (
    <Layout title={`Report: ${send.single_send_name}`} csrf={csrf} active="sends" charts styles={['sends.css']}>
      <h1>{send.single_send_name}</h1>
      <p class="muted">
        <span class="subject">{send.subject}</span> · {STATUS[send.status] ?? String(send.status)}
        {send.sent_at ? (
          <>
            {' '}
            · sent <time dateTime={send.sent_at}>{when(send.sent_at, tz)}</time>
          </>
        ) : null}
      </p>
      {send.paused_at ? (
        <p class="flash" role="status" data-paused>
          Paused since <time dateTime={send.paused_at}>{when(send.paused_at, tz)}</time>: nothing more is sent until it is resumed.
        </p>
      ) : null}
      {refused.length ? (
        <div class="error-summary" role="alert" tabIndex={-1}>
          <ul>
            {refused.map((m) => (
              <li>{m}</li>
            ))}
          </ul>
        </div>
      ) : null}
      <div class="actions send-actions">
        {send.status === 2 && may.send ? (
          <PostButton action={`/app/sends/${send.utr}/${send.paused_at ? 'resume' : 'pause'}`} csrf={csrf} label={send.paused_at ? 'Resume' : 'Pause'} name={send.single_send_name} />
        ) : null}
        <a class="button secondary" href={`/app/sends/${send.utr}/preview`}>
          Preview and test
        </a>
        {may.manage ? <PostButton action={`/app/sends/${send.utr}/duplicate`} csrf={csrf} label="Duplicate" name={send.single_send_name} /> : null}
        {send.status === 3 && may.manage ? (
          <a class="button secondary" href={`/app/sends/${send.utr}/delete`}>
            Delete…
          </a>
        ) : null}
      </div>
      <Metrics label="Counters">
        <Metric name="delivered" label="Delivered" value={count(s.delivered)} />
        <Metric name="unique_opens" label="Unique opens" value={count(s.unique_opens)} />
        <Metric name="total_opens" label="Opens" value={count(s.total_opens)} />
        <Metric name="unique_clicks" label="Human clicks" value={count(s.unique_clicks)} />
        <Metric name="total_clicks" label="Clicks" value={count(s.total_clicks)} note="bots included" />
        <Metric name="bounces" label="Bounces" value={count(s.bounces)} note={`${count(s.bounced_hard)} hard, ${count(s.bounced_soft)} soft`} />
        <Metric name="complaints" label="Complaints" value={count(s.complaints)} />
        <Metric name="unsubscribes" label="Unsubscribes" value={count(s.unsubscribes)} />
      </Metrics>
      <Section title="Funnel" id="funnel">
        <Funnel s={s} />
      </Section>
      {s.ab ? <AbSection ab={s.ab} utr={send.utr} csrf={csrf} tz={tz} senders={senders} pick={may.send} /> : null}
      <Section title="Hour by hour" id="timeline">
        <Chart
          id="chart-timeline"
          title="Delivered, opens, clicks and unsubscribes per hour"
          description={`${s.timeline.length} hours with activity`}
          spec={{
            kind: 'bar',
            labels: s.timeline.map((t) => hourLabel(t.hour, tz)),
            series: [
              { label: 'Delivered', data: s.timeline.map((t) => t.delivered), color: 1 },
              { label: 'Opens', data: s.timeline.map((t) => t.opens), color: 2 },
              { label: 'Clicks', data: s.timeline.map((t) => t.clicks), color: 3 },
              { label: 'Unsubscribes', data: s.timeline.map((t) => t.unsubscribes), color: 4 },
            ],
          }}
        />
      </Section>
      <Section title="Links" id="links">
        <Table
          name="links"
          caption="Tracked links, in the order the design has them"
          rows={s.links}
          empty="No tracked links."
          columns={[
            { label: 'Link', cell: (l) => <span class="url">{l.url}</span> },
            { label: 'Unique clicks', numeric: true, cell: (l) => count(l.unique_clicks) },
            { label: 'Total clicks', numeric: true, cell: (l) => count(l.total_clicks) },
          ]}
        />
      </Section>
      <Section title="Bounces and complaints" id="problems">
        <Table
          name="problems"
          caption="Bounces and complaints, oldest first"
          rows={problems}
          empty="No bounces or complaints."
          columns={[
            { label: 'When', cell: (e) => <time dateTime={e.occurred_at}>{when(e.occurred_at, tz)}</time> },
            { label: 'Address', cell: (e) => e.email },
            { label: 'Reason', cell: (e) => problemReason(e) },
            {
              label: 'Report',
              cell: (e) =>
                kept.has(String(e.id)) ? (
                  <a href={`/app/sends/${send.utr}/reports/${e.id}`}>View the report</a>
                ) : (
                  <span class="muted">{(e.data as { source?: string }).source === 'smtp' ? 'refused while sending' : 'not kept'}</span>
                ),
            },
          ]}
        />
        {nextCursor ? (
          <p>
            <a href={`/app/sends/${send.utr}?after=${nextCursor}#problems`}>Next {PROBLEMS_PER_PAGE}</a>
          </p>
        ) : null}
      </Section>
    </Layout>
  );
}

export async function sendReportPage(req: Request, res: Response, p: PageContext, refusal?: { status: number; errors: unknown }): Promise<void> {
  const utr = String(req.params.utr);
  const s = await ownerStats(p.ctx, 'single_send', utr);
  const row = await findByUtr(p.ctx, utr);
  const after = typeof req.query.after === 'string' && /^\d{1,18}$/.test(req.query.after) ? req.query.after : undefined;
  const problems = await listEvents(p.ctx, { single_send_utr: utr, type: ['bounced', 'complained'], limit: PROBLEMS_PER_PAGE, cursor: after });
  const kept = await eventsWithKeptReport(p.ctx, problems.events.map((e) => e.id));
  const pausedAt = row.paused_at ? new Date(row.paused_at).toISOString() : null;
  const send: SendInfo = { utr: row.utr, single_send_name: row.single_send_name, subject: row.subject, status: row.status, sent_at: (row as { sent_at?: string | null }).sent_at ?? null, paused_at: pausedAt };
  // A sender test names its senders by address.
  const senders = new Map<number, string>();
  for (const v of s.ab?.type === 'sender' ? s.ab.variations : []) {
    if (v.sender_id !== undefined) senders.set(v.sender_id, (await findSender(p.ctx, v.sender_id).catch(() => undefined))?.from_email ?? `Sender ${v.sender_id}`);
  }
  const refused = refusal ? errorLines(refusal.errors) : [];
  sendPage(res, refusal?.status ?? 200, <SendReport send={send} s={s} problems={problems.events} kept={kept} nextCursor={problems.next_cursor} csrf={p.session.csrf} tz={p.tz} senders={senders} refused={refused} may={{ manage: allowed(p, 'campaigns:manage'), send: allowed(p, 'campaigns:send') }} />);
}

/** POST /app/sends/:utr/pause and /resume: POST /single/send/pause or /resume; the report again, with the API's refusal when it refused. */
export function pauseAction(which: 'pause' | 'resume') {
  return async (req: Request, res: Response, p: PageContext): Promise<void> => {
    const utr = String(req.params.utr);
    const out = await submitRoute(apiRoute('post', `/single/send/${which}`), p, req, res, { query: { utr } });
    if (out.ok) {
      res.redirect(303, `/app/sends/${utr.toLowerCase()}`);
      return;
    }
    await sendReportPage(req, res, p, out);
  };
}

/** A person picks the A/B winner (POST /single/send/ab/winner's service); the report again, or why not. */
export async function pickWinnerAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const utr = String(req.params.utr);
  // As the form sent it: the service checks it (a refusal is this page's 422 with its message).
  const variation = (req.body as Record<string, unknown>).variation;
  await pickAbWinner(p.ctx, utr, variation);
  await auditAction(p, { action: 'single_send.winner_picked', objectKind: 'single_send', objectId: utr.toLowerCase(), summary: `variation ${String.fromCharCode(65 + Number(variation))}` });
  res.redirect(303, `/app/sends/${utr}#ab`);
}

/** The report a bounce or complaint came in, as received (GET /reports/kept-report). */
export async function keptReportPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const utr = String(req.params.utr);
  await findByUtr(p.ctx, utr);
  const { raw } = await keptReport(p.ctx, String(req.params.eventId));
  sendPage(
    res,
    200,
    <MessagePage title="The report as received" csrf={p.session.csrf} active="sends">
      <p>
        <a href={`/app/sends/${utr}#problems`}>Back to the send’s report</a>
      </p>
      <pre class="raw" tabIndex={0}>
        {raw}
      </pre>
    </MessagePage>,
  );
}
