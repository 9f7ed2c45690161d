import type { Knex } from 'knex';
import type { MessageEvent } from '../events/types';
import { ofOneAccount } from '../db/per-account';
import { addOpens, markClicked } from '../deliveries/rows';
import { counterOwners, ownerOfSource, OWNER_KINDS, OWNERS, type MessageSource, type OwnerKind } from '../sources';
import { EVENT_COUNTERS, HOURLY_COLUMNS, type EventCounter, type EventCounts } from './counters';
import { addToEmails, countEmailEvents, emailOf } from './emails';

/**
 * The statistics' writer: every owner's counters (src/sources `OWNERS`), each tracked link's, and
 * the hourly rollup and each automation email's (emails.ts), moved from recorded events in the
 * events' own transaction (src/events/record.ts calls it); and `triggered`, the recipient rows
 * queued, from where they are written (`countQueued`). Their reader is src/statistics/read.ts.
 */

/**
 * Every pixel hit is an `opened` event (total opens); the first one per recipient row is a
 * unique open, known from the row's own open count, which is moved here too.
 */
async function firstOpens(trx: Knex.Transaction, events: MessageEvent[]): Promise<Set<number>> {
  // The moment, as a value: Citus refuses now() inside COALESCE in an UPDATE of a distributed table.
  const at = new Date().toISOString();
  const perRow = new Map<string, { id: number; user_id: number; n: number; at: string }>();
  for (const e of events) {
    if (e.type !== 'opened' || !e.deliveryId) continue;
    const key = `${e.userId}:${e.deliveryId}`;
    const row = perRow.get(key) ?? { id: e.deliveryId, user_id: e.userId, n: 0, at };
    row.n += 1;
    perRow.set(key, row);
  }
  if (perRow.size === 0) return new Set();
  return addOpens(trx, [...perRow.values()]);
}

type Click = Extract<MessageEvent, { type: 'clicked' }>;

/**
 * Clicks: every one counts in its link's and its message's totals; one not suspected of being a
 * scanner's is a unique click of its link when it is the recipient's first on that link
 * (link_clicks), and of its message when it is the recipient's first on any link
 * (deliveries.clicked_at). Both are decided by the row updates themselves, so concurrent
 * writers never count one twice. Returns the clicks that are their message's first.
 */
async function applyClicks(trx: Knex.Transaction, events: MessageEvent[]): Promise<Set<Click>> {
  const clicks = events.filter((e): e is Click => e.type === 'clicked' && e.deliveryId !== null);
  if (clicks.length === 0) return new Set();
  const perPair = new Map<string, { delivery_id: number; link_id: number; user_id: number; n: number; human: number }>();
  for (const c of clicks) {
    const key = `${c.deliveryId}:${c.linkId}`;
    const pair = perPair.get(key) ?? { delivery_id: c.deliveryId!, link_id: c.linkId, user_id: c.userId, n: 0, human: 0 };
    pair.n += 1;
    if (!c.data.suspected_bot) pair.human += 1;
    perPair.set(key, pair);
  }
  const pairs = [...perPair.values()].sort((a, b) => a.delivery_id - b.delivery_id || a.link_id - b.link_id);
  const { rows } = await trx.raw(
    `INSERT INTO link_clicks AS c (delivery_id, link_id, user_id, clicks, human_clicks)
     SELECT delivery_id, link_id, user_id, n, human FROM json_to_recordset(?::json) AS v(delivery_id bigint, link_id bigint, user_id integer, n integer, human integer)
     ON CONFLICT (delivery_id, link_id, user_id) DO UPDATE SET clicks = c.clicks + EXCLUDED.clicks, human_clicks = c.human_clicks + EXCLUDED.human_clicks
     RETURNING c.delivery_id, c.link_id, c.human_clicks`,
    [JSON.stringify(pairs)],
  );
  const perLink = new Map<number, { id: number; user_id: number; total: number; uniq: number }>();
  for (const p of pairs) {
    const link = perLink.get(p.link_id) ?? { id: p.link_id, user_id: p.user_id, total: 0, uniq: 0 };
    link.total += p.n;
    perLink.set(p.link_id, link);
  }
  // A pair's first human click: its human count now is what this batch added.
  for (const r of rows as Array<{ delivery_id: string; link_id: string; human_clicks: number }>) {
    const added = perPair.get(`${Number(r.delivery_id)}:${Number(r.link_id)}`)!.human;
    if (added > 0 && r.human_clicks === added) perLink.get(Number(r.link_id))!.uniq += 1;
  }
  await trx.raw(
    `UPDATE tracked_links l SET total_clicks = l.total_clicks + v.total, unique_clicks = l.unique_clicks + v.uniq
     FROM json_to_recordset(?::json) AS v(id bigint, user_id integer, total integer, uniq integer)
     WHERE l.id = v.id AND l.user_id = v.user_id${ofOneAccount('l', [...perLink.values()].map((l) => l.user_id))}`,
    [JSON.stringify([...perLink.values()].sort((a, b) => a.id - b.id))],
  );
  const human = [...new Set(clicks.filter((c) => !c.data.suspected_bot).map((c) => c.deliveryId!))].sort((a, b) => a - b);
  if (human.length === 0) return new Set();
  const firstOf = await markClicked(trx, human, clicks.map((c) => c.userId));
  const out = new Set<Click>();
  for (const c of clicks) {
    if (c.data.suspected_bot || !firstOf.has(c.deliveryId!)) continue;
    firstOf.delete(c.deliveryId!);
    out.add(c);
  }
  return out;
}

type Counts = { user_id: number; id: number } & EventCounts;

/** The event counters each event moves (a unique open or click is decided by the row updates above). */
function countersOf(e: MessageEvent, firstOpen: boolean, firstClick: boolean): EventCounter[] {
  switch (e.type) {
    case 'delivered':
      return ['delivered'];
    case 'bounced':
      return ['bounces', e.data.kind === 'hard' ? 'bounced_hard' : 'bounced_soft'];
    case 'unsubscribed':
      return ['unsubscribes'];
    case 'deferred':
      return ['deferred'];
    case 'dropped':
      return ['dropped'];
    case 'complained':
      return ['complaints'];
    case 'clicked':
      return firstClick ? ['total_clicks', 'unique_clicks'] : ['total_clicks'];
    case 'opened':
      return firstOpen ? ['opens', 'unique_opens'] : ['opens'];
  }
}

/** An owner's counts, all zero: the same keys in the same order every time, so every row has one shape. */
function zeroCounts(userId: number, id: number): Counts {
  const c = { user_id: userId, id } as Counts;
  for (const k of EVENT_COUNTERS) c[k] = 0;
  return c;
}

type Move = { event: MessageEvent; counters: EventCounter[] };

/** The counters each event moves, and their sums per owner: the synchronous part of applyStatistics. */
function countEvents(events: MessageEvent[], first: Set<number>, firstClicks: Set<Click>): { byOwner: Map<OwnerKind, Map<string, Counts>>; moves: Move[] } {
  const counted = new Set<number>();
  const byOwner = new Map<OwnerKind, Map<string, Counts>>(OWNER_KINDS.map((k) => [k, new Map()]));
  const moves: Move[] = [];
  for (const e of events) {
    let firstOpen = false;
    if (e.type === 'opened' && e.deliveryId && first.has(e.deliveryId) && !counted.has(e.deliveryId)) {
      counted.add(e.deliveryId);
      firstOpen = true;
    }
    const moved = countersOf(e, firstOpen, e.type === 'clicked' && firstClicks.has(e));
    moves.push({ event: e, counters: moved });
    for (const owner of counterOwners(e)) {
      const map = byOwner.get(owner.kind)!;
      const key = `${e.userId}:${owner.id}`;
      let c = map.get(key);
      if (!c) map.set(key, (c = zeroCounts(e.userId, owner.id)));
      for (const counter of moved) c[counter] += 1;
    }
  }
  return { byOwner, moves };
}

/** The JSON record of a batch's counts, as the statements below read it (json_to_recordset). */
const COUNTS_RECORD = `v(user_id integer, id integer, ${EVENT_COUNTERS.map((k) => `${k} integer`).join(', ')})`;

/** Each owner's counter update, its text made once (the owner's account is added per batch: ofOneAccount). */
const OWNER_UPDATE = Object.fromEntries(
  OWNER_KINDS.map((kind) => {
    const { table, counters: cols } = OWNERS[kind];
    const sets = EVENT_COUNTERS.map((k) => `${cols[k]} = t.${cols[k]} + v.${k}`).join(', ');
    return [kind, `UPDATE ${table} t SET ${sets} FROM json_to_recordset(?::json) AS ${COUNTS_RECORD} WHERE t.id = v.id AND t.user_id = v.user_id`];
  }),
) as Record<OwnerKind, string>;

/**
 * Moves the counters of recorded events, in their transaction. Kept in small functions, each
 * compiled on its own: as one function, V8 spent ≈ 80 ms of a core optimising it, five times over
 * the first seconds of a send (`--trace-opt`, bench/README.md "Send").
 */
export async function applyStatistics(trx: Knex.Transaction, events: MessageEvent[]): Promise<void> {
  const first = await firstOpens(trx, events);
  const firstClicks = await applyClicks(trx, events);
  const { byOwner, moves } = countEvents(events, first, firstClicks);
  // Owners in a fixed order, and rows by key: two transactions updating the same rows take their locks in one order.
  for (const kind of OWNER_KINDS) {
    const counts = [...byOwner.get(kind)!.values()];
    if (counts.length === 0) continue;
    counts.sort((a, b) => a.user_id - b.user_id || a.id - b.id);
    await trx.raw(`${OWNER_UPDATE[kind]}${ofOneAccount('t', counts.map((c) => c.user_id))}`, [JSON.stringify(counts)]);
    if (OWNERS[kind].timeline) await addHourly(trx, kind, counts);
  }
  // Emails after their owners and hours, as countQueued takes them: one lock order for both.
  await countEmailEvents(trx, moves);
}

const HOURLY_INSERT = (() => {
  const cols = EVENT_COUNTERS.map((k) => HOURLY_COLUMNS[k]);
  return `INSERT INTO message_stats_hourly (user_id, owner_type, owner_id, hour, ${cols.join(', ')})
     SELECT v.user_id, ?, v.id, date_trunc('hour', now()), ${EVENT_COUNTERS.map((k) => `v.${k}`).join(', ')}
     FROM json_to_recordset(?::json) AS ${COUNTS_RECORD}
     ORDER BY v.user_id, v.id
     ON CONFLICT (user_id, owner_type, owner_id, hour)
     DO UPDATE SET ${cols.map((c) => `${c} = message_stats_hourly.${c} + EXCLUDED.${c}`).join(', ')}`;
})();

/**
 * This hour's row per owner in `message_stats_hourly`: the timelines of GET /single/send/stats and
 * /automations/stats, and what a time window of an account adds up (src/statistics/read.ts).
 */
async function addHourly(trx: Knex.Transaction, kind: OwnerKind, counts: Counts[]): Promise<void> {
  const rows = counts.filter((c) => EVENT_COUNTERS.some((k) => c[k] > 0));
  if (rows.length === 0) return;
  await trx.raw(HOURLY_INSERT, [kind, JSON.stringify(rows)]);
}

/**
 * Recipient rows just written (`n` of each source, in the caller's transaction): `triggered` of this
 * hour's row of their owner and of their email, if they have one. The owner's own record counts
 * its `triggered` where the rows are written (fan-out's cursor update, the automation engine),
 * before this, so locks are taken as applyStatistics takes them: owner, hour, email.
 */
export async function countQueued(trx: Knex.Transaction, queued: Array<{ userId: number; source: MessageSource; n: number }>): Promise<void> {
  const hours = new Map<OwnerKind, Map<string, { user_id: number; id: number; n: number }>>(OWNER_KINDS.map((k) => [k, new Map()]));
  for (const q of queued) {
    if (q.n <= 0) continue;
    const owner = ownerOfSource(q.source);
    const map = hours.get(owner.kind)!;
    const row = map.get(`${q.userId}:${owner.id}`) ?? { user_id: q.userId, id: owner.id, n: 0 };
    row.n += q.n;
    map.set(`${q.userId}:${owner.id}`, row);
  }
  for (const kind of OWNER_KINDS) {
    const rows = [...hours.get(kind)!.values()].sort((a, b) => a.user_id - b.user_id || a.id - b.id);
    if (rows.length === 0 || !OWNERS[kind].timeline) continue;
    const col = HOURLY_COLUMNS.triggered;
    await trx.raw(
      `INSERT INTO message_stats_hourly (user_id, owner_type, owner_id, hour, ${col})
       SELECT v.user_id, ?, v.id, date_trunc('hour', now()), v.n
       FROM json_to_recordset(?::json) AS v(user_id integer, id integer, n integer)
       ORDER BY v.user_id, v.id
       ON CONFLICT (user_id, owner_type, owner_id, hour) DO UPDATE SET ${col} = message_stats_hourly.${col} + EXCLUDED.${col}`,
      [kind, JSON.stringify(rows)],
    );
  }
  const emails = queued.flatMap((q) => {
    const id = emailOf(q.source);
    return id === undefined || q.n <= 0 ? [] : [{ user_id: q.userId, id, counts: { triggered: q.n } }];
  });
  await addToEmails(trx, emails);
}
