import type { Request, Response } from 'express';
import { boardBetween, boardPage, type BoardSend } from '../../single-sends/board';
import { SendStatus } from '../../states';
import { Table } from '../components';
import { count, dayOf, when } from '../format';
import { Layout } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { dayStart, notStarted, statusWord } from './send-shared';
import { allowed } from '../permissions';

/**
 * Every single send of the account: a list found by name and status, page by page, and a month's
 * calendar of the sends placed on its days (started, due, or a draft's planned time), in the
 * browser's time zone.
 */
const PER_PAGE = 25;

const FILTERS = { draft: SendStatus.Draft, scheduled: SendStatus.Ready, sending: SendStatus.Running, completed: SendStatus.Completed } as const;
type FilterName = keyof typeof FILTERS;
const FILTER_LABELS: Record<FilterName, string> = { draft: 'Drafts', scheduled: 'Scheduled', sending: 'Sending', completed: 'Completed' };

const one = (v: unknown) => (typeof v === 'string' ? v : '');

function When({ s, tz }: { s: BoardSend; tz: string }) {
  if (!s.at) return <span class="muted">not scheduled</span>;
  const verb = s.status === SendStatus.Draft ? 'planned' : s.status === SendStatus.Ready ? 'due' : 'sent';
  return (
    <span>
      {verb} <time dateTime={s.at}>{when(s.at, tz)}</time>
    </span>
  );
}

function SendsNav({ current, create }: { current: 'list' | 'calendar'; create: boolean }) {
  return (
    <nav aria-label="Sends views" class="actions sends-views">
      <a href="/app/sends" aria-current={current === 'list' ? 'page' : undefined}>
        List
      </a>
      <a href="/app/sends/calendar" aria-current={current === 'calendar' ? 'page' : undefined}>
        Calendar
      </a>
      {create ? (
        <a class="button" href="/app/sends/new">
          New send
        </a>
      ) : null}
    </nav>
  );
}

export async function sendsListPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const q = one(req.query.q).trim().slice(0, 255);
  const filter = (one(req.query.status) in FILTERS ? one(req.query.status) : '') as FilterName | '';
  const asked = Number(one(req.query.page) || 1);
  const pageNo = Number.isInteger(asked) && asked >= 1 && asked <= 100_000 ? asked : 1;
  const { rows, total } = await boardPage(p.deps.db, p.ctx.userId, { q: q || undefined, status: filter ? FILTERS[filter] : undefined }, pageNo, PER_PAGE);
  const pages = Math.max(1, Math.ceil(total / PER_PAGE));
  const link = (n: number) => `/app/sends?${new URLSearchParams({ ...(q ? { q } : {}), ...(filter ? { status: filter } : {}), page: String(n) })}`;
  const flash = one(req.query.deleted) === '1' ? 'The send was deleted.' : '';
  sendPage(
    res,
    200,
    <Layout title="Sends" csrf={p.session.csrf} active="sends" styles={['sends.css']}>
      <h1>Sends</h1>
      {flash ? (
        <p class="flash" role="status">
          {flash}
        </p>
      ) : null}
      <SendsNav current="list" create={allowed(p, 'campaigns:manage')} />
      <form method="get" action="/app/sends" class="row sends-filter" role="search" aria-label="Find sends">
        <label for="sends-q">Name</label>
        <input id="sends-q" name="q" type="search" value={q} maxLength={255} autoComplete="off" />
        <label for="sends-status">Status</label>
        <select id="sends-status" name="status">
          <option value="">All</option>
          {(Object.keys(FILTERS) as FilterName[]).map((f) => (
            <option value={f} selected={f === filter}>
              {FILTER_LABELS[f]}
            </option>
          ))}
        </select>
        <button type="submit">Find</button>
      </form>
      <p class="muted" role="status">
        {count(total)} {total === 1 ? 'send' : 'sends'}
        {q || filter ? ' match' : ''}
        {pages > 1 ? ` · page ${count(pageNo)} of ${count(pages)}` : ''}
      </p>
      <Table<BoardSend>
        name="sends"
        caption="Single sends, newest first"
        rows={rows}
        empty={q || filter ? 'No send matches.' : 'No sends yet.'}
        columns={[
          { label: 'Name', cell: (s) => <a href={`/app/sends/${s.utr}`}>{s.single_send_name}</a> },
          { label: 'Status', cell: (s) => <span data-status={s.status}>{statusWord(s.status, s.schedule_type)}</span> },
          { label: 'When', cell: (s) => <When s={s} tz={p.tz} /> },
          { label: 'Recipients', numeric: true, cell: (s) => (notStarted(s.status) ? '–' : count(s.triggered)) },
          { label: 'Delivered', numeric: true, cell: (s) => (notStarted(s.status) ? '–' : count(s.delivered)) },
          { label: 'Opened', numeric: true, cell: (s) => (notStarted(s.status) ? '–' : count(s.unique_opens)) },
          {
            label: 'Action',
            cell: (s) =>
              notStarted(s.status) && allowed(p, 'campaigns:manage') ? (
                <a href={`/app/sends/${s.utr}/edit`} aria-label={`Edit ${s.single_send_name}`}>
                  Edit
                </a>
              ) : (
                <a href={`/app/sends/${s.utr}`} aria-label={`Report of ${s.single_send_name}`}>
                  Report
                </a>
              ),
          },
        ]}
      />
      {pages > 1 ? (
        <nav aria-label="Pages" class="actions pager">
          {pageNo > 1 ? (
            <a href={link(pageNo - 1)} rel="prev">
              Previous page
            </a>
          ) : null}
          {pageNo < pages ? (
            <a href={link(pageNo + 1)} rel="next">
              Next page
            </a>
          ) : null}
        </nav>
      ) : null}
    </Layout>,
  );
}

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;
const monthName = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', month: 'long', year: 'numeric' });
const dayName = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', weekday: 'long', day: 'numeric', month: 'long' });
const shortDay = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', weekday: 'short', day: 'numeric' });
const timeOfDay = (iso: string, tz: string) => new Intl.DateTimeFormat('en-GB', { timeZone: tz, hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

const ymd = (y: number, m: number, d: number) => `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;

export async function sendsCalendarPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const today = dayOf(new Date().toISOString(), p.tz);
  const m = MONTH.exec(one(req.query.month)) ?? MONTH.exec(today.slice(0, 7))!;
  const [y, mo] = [Number(m[1]), Number(m[2])];
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  const next = mo === 12 ? [y + 1, 1] : [y, mo + 1];
  const prev = mo === 1 ? [y - 1, 12] : [y, mo - 1];
  const sends = await boardBetween(p.deps.db, p.ctx.userId, dayStart(ymd(y, mo, 1), p.tz), dayStart(ymd(next[0], next[1], 1), p.tz));
  const byDay = new Map<string, BoardSend[]>();
  for (const s of sends) {
    const day = dayOf(s.at!, p.tz);
    byDay.set(day, [...(byDay.get(day) ?? []), s]);
  }
  const lead = (new Date(Date.UTC(y, mo - 1, 1)).getUTCDay() + 6) % 7;
  const title = monthName.format(new Date(Date.UTC(y, mo - 1, 1)));
  const monthParam = (v: number[]) => `${v[0]}-${String(v[1]).padStart(2, '0')}`;
  sendPage(
    res,
    200,
    <Layout title={`Sends calendar: ${title}`} csrf={p.session.csrf} active="sends" styles={['sends.css']}>
      <h1>Sends calendar</h1>
      <SendsNav current="calendar" create={allowed(p, 'campaigns:manage')} />
      <nav aria-label="Months" class="actions month-nav">
        <a href={`/app/sends/calendar?month=${monthParam(prev)}`} rel="prev">
          Previous month
        </a>
        <h2 id="month-title">{title}</h2>
        <a href={`/app/sends/calendar?month=${monthParam(next)}`} rel="next">
          Next month
        </a>
      </nav>
      <p class="muted">
        Times in {p.tz}. {sends.length ? `${count(sends.length)} ${sends.length === 1 ? 'send' : 'sends'} this month.` : 'No sends this month.'}
      </p>
      <ol class="weekdays" aria-hidden="true">
        {WEEKDAYS.map((d) => (
          <li>{d}</li>
        ))}
      </ol>
      <ol class="calendar" aria-labelledby="month-title">
        {Array.from({ length: lead }, () => (
          <li class="pad" aria-hidden="true" />
        ))}
        {Array.from({ length: days }, (_, i) => {
          const day = ymd(y, mo, i + 1);
          const date = new Date(`${day}T00:00:00Z`);
          const list = byDay.get(day) ?? [];
          return (
            <li class={`day${list.length ? '' : ' empty'}${day === today ? ' today' : ''}`} data-day={day}>
              <h3>
                <time dateTime={day} aria-label={dayName.format(date)}>
                  {shortDay.format(date)}
                </time>
                {day === today ? <span class="visually-hidden"> (today)</span> : null}
              </h3>
              {list.length ? (
                <ul>
                  {list.map((s) => (
                    <li class={`cal-send status-${s.status}`}>
                      <a href={`/app/sends/${s.utr}`}>{s.single_send_name}</a>{' '}
                      <span class="muted">
                        <time dateTime={s.at!}>{timeOfDay(s.at!, p.tz)}</time> · {statusWord(s.status, s.schedule_type)}
                      </span>
                    </li>
                  ))}
                </ul>
              ) : null}
            </li>
          );
        })}
      </ol>
    </Layout>,
  );
}
