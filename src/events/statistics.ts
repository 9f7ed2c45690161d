import type { Knex } from 'knex';
import { EmailCounts } from './email-counters';
import type { MessageEvent, MessageRef } from './types';

/**
 * The spec's statistics counters on single sends and automations, kept from recorded events
 * (src/events/record.ts calls this in the event's transaction). Nothing else writes them.
 */

/** The one rule for whose counters a message's events move: its single send, else its automation. */
export function counterOwner(ref: Pick<MessageRef, 'singleSendId' | 'automationId'>): { table: 'single_sends' | 'automations'; id: number } | undefined {
  if (ref.singleSendId) return { table: 'single_sends', id: ref.singleSendId };
  if (ref.automationId) return { table: 'automations', id: ref.automationId };
  return undefined;
}

const COUNTERS = [
  'delivered',
  'bounces',
  'opens',
  'unique_opens',
  'unsubscribes',
  'deferred',
  'dropped',
  'bounced_hard',
  'bounced_soft',
  'total_clicks',
  'unique_clicks',
  'complaints',
] as const;
type Counter = (typeof COUNTERS)[number];
type Counts = { user_id: number; id: number } & Record<Counter, number>;

/**
 * The hourly timeline's counters (message_stats_hourly), a subset of the above. The unique
 * counts, bounces and complaints are the dashboard overview's (src/resources/reports).
 */
const HOURLY = {
  delivered: 'delivered',
  opens: 'opens',
  total_clicks: 'clicks',
  unsubscribes: 'unsubscribes',
  unique_opens: 'unique_opens',
  unique_clicks: 'unique_clicks',
  bounces: 'bounces',
  complaints: 'complaints',
} as const;

/** Column names of the counters on each table (the spec named its own differently; Herald's are alike). */
const HERALD_COLUMNS = {
  deferred: 'deferred',
  dropped: 'dropped',
  bounced_hard: 'bounced_hard',
  bounced_soft: 'bounced_soft',
  total_clicks: 'total_clicks',
  unique_clicks: 'unique_clicks',
  complaints: 'complaints',
} as const;
const COLUMNS: Record<'single_sends' | 'automations', Record<Counter, string>> = {
  single_sends: { delivered: 'delivered', bounces: 'bounces', opens: 'total_opens', unique_opens: 'unique_opens', unsubscribes: 'unsubscribes', ...HERALD_COLUMNS },
  automations: {
    delivered: 'total_delivered',
    bounces: 'total_bounces',
    opens: 'total_opens',
    unique_opens: 'total_unique_opens',
    unsubscribes: 'total_unsubscribe',
    ...HERALD_COLUMNS,
  },
};
const OWNER_TYPE = { single_sends: 'single_send', automations: 'automation' } as const;

/**
 * Every pixel hit is an `opened` event (total opens); the first one per recipient row is a
 * unique open, known from the row's own open count, which is moved here too.
 */
async function firstOpens(trx: Knex.Transaction, events: MessageEvent[]): Promise<Set<number>> {
  const perRow = new Map<string, { id: number; user_id: number; n: number }>();
  for (const e of events) {
    if (e.type !== 'opened' || !e.deliveryId) continue;
    const key = `${e.userId}:${e.deliveryId}`;
    const row = perRow.get(key) ?? { id: e.deliveryId, user_id: e.userId, n: 0 };
    row.n += 1;
    perRow.set(key, row);
  }
  if (perRow.size === 0) return new Set();
  const { rows } = await trx.raw(
    `UPDATE deliveries d SET open_count = d.open_count + v.n, opened_at = coalesce(d.opened_at, now())
     FROM json_to_recordset(?::json) AS v(id bigint, user_id integer, n integer)
     WHERE d.id = v.id AND d.user_id = v.user_id
     RETURNING d.id, d.open_count = v.n AS first`,
    [JSON.stringify([...perRow.values()])],
  );
  return new Set((rows as Array<{ id: string | number; first: boolean }>).filter((r) => r.first).map((r) => Number(r.id)));
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
     WHERE l.id = v.id AND l.user_id = v.user_id`,
    [JSON.stringify([...perLink.values()].sort((a, b) => a.id - b.id))],
  );
  const human = [...new Set(clicks.filter((c) => !c.data.suspected_bot).map((c) => c.deliveryId!))].sort((a, b) => a - b);
  if (human.length === 0) return new Set();
  const { rows: firstRows } = await trx.raw(
    `UPDATE deliveries SET clicked_at = now() WHERE id = ANY(?::bigint[]) AND clicked_at IS NULL RETURNING id`,
    [human],
  );
  const firstOf = new Set((firstRows as Array<{ id: string }>).map((r) => Number(r.id)));
  const out = new Set<Click>();
  for (const c of clicks) {
    if (c.data.suspected_bot || !firstOf.has(c.deliveryId!)) continue;
    firstOf.delete(c.deliveryId!);
    out.add(c);
  }
  return out;
}

export async function applyStatistics(trx: Knex.Transaction, events: MessageEvent[]): Promise<void> {
  const first = await firstOpens(trx, events);
  const firstClicks = await applyClicks(trx, events);
  const counted = new Set<number>();
  const byOwner = { single_sends: new Map<string, Counts>(), automations: new Map<string, Counts>() };
  // An automation's message counts for its email too (email-counters.ts).
  const perEmail = new EmailCounts();
  const bump = (e: MessageEvent, counter: Counter) => {
    const owner = counterOwner(e);
    if (!owner) return;
    perEmail.add(e, counter);
    const key = `${e.userId}:${owner.id}`;
    const map = byOwner[owner.table];
    const c = map.get(key) ?? ({ user_id: e.userId, id: owner.id, ...Object.fromEntries(COUNTERS.map((k) => [k, 0])) } as Counts);
    c[counter] += 1;
    map.set(key, c);
  };
  for (const e of events) {
    if (e.type === 'delivered') bump(e, 'delivered');
    else if (e.type === 'bounced') {
      bump(e, 'bounces');
      bump(e, e.data.kind === 'hard' ? 'bounced_hard' : 'bounced_soft');
    } else if (e.type === 'unsubscribed') bump(e, 'unsubscribes');
    else if (e.type === 'deferred') bump(e, 'deferred');
    else if (e.type === 'dropped') bump(e, 'dropped');
    else if (e.type === 'complained') bump(e, 'complaints');
    else if (e.type === 'clicked') {
      bump(e, 'total_clicks');
      if (firstClicks.has(e)) bump(e, 'unique_clicks');
    }
    else if (e.type === 'opened') {
      bump(e, 'opens');
      if (e.deliveryId && first.has(e.deliveryId) && !counted.has(e.deliveryId)) {
        counted.add(e.deliveryId);
        bump(e, 'unique_opens');
      }
    }
  }
  for (const table of ['single_sends', 'automations'] as const) {
    const counts = [...byOwner[table].values()];
    if (counts.length === 0) continue;
    const cols = COLUMNS[table];
    const sets = COUNTERS.map((k) => `${cols[k]} = t.${cols[k]} + v.${k}`).join(', ');
    // Ordered by key so two transactions updating the same rows take their locks in one order.
    counts.sort((a, b) => a.user_id - b.user_id || a.id - b.id);
    await trx.raw(
      `UPDATE ${table} t SET ${sets}
       FROM json_to_recordset(?::json) AS v(user_id integer, id integer, ${COUNTERS.map((k) => `${k} integer`).join(', ')})
       WHERE t.id = v.id AND t.user_id = v.user_id`,
      [JSON.stringify(counts)],
    );
    await addHourly(trx, table, counts);
  }
  await perEmail.apply(trx);
}

/** The timeline of GET /single/send/stats and /automations/stats: this hour's row per send or automation. */
async function addHourly(trx: Knex.Transaction, table: 'single_sends' | 'automations', counts: Counts[]): Promise<void> {
  const keys = Object.keys(HOURLY) as Array<keyof typeof HOURLY>;
  const rows = counts.filter((c) => keys.some((k) => c[k] > 0));
  if (rows.length === 0) return;
  const cols = keys.map((k) => HOURLY[k]);
  await trx.raw(
    `INSERT INTO message_stats_hourly (user_id, owner_type, owner_id, hour, ${cols.join(', ')})
     SELECT v.user_id, ?, v.id, date_trunc('hour', now()), ${keys.map((k) => `v.${k}`).join(', ')}
     FROM json_to_recordset(?::json) AS v(user_id integer, id integer, ${keys.map((k) => `${k} integer`).join(', ')})
     ORDER BY v.user_id, v.id
     ON CONFLICT (user_id, owner_type, owner_id, hour)
     DO UPDATE SET ${cols.map((c) => `${c} = message_stats_hourly.${c} + EXCLUDED.${c}`).join(', ')}`,
    [OWNER_TYPE[table], JSON.stringify(rows)],
  );
}
