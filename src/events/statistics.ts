import type { Knex } from 'knex';
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

interface Counts {
  user_id: number;
  id: number;
  delivered: number;
  bounces: number;
  opens: number;
  unique_opens: number;
  unsubscribes: number;
}

/** Column names of the same counters on each table (the spec named them differently). */
const COLUMNS = {
  single_sends: { delivered: 'delivered', bounces: 'bounces', opens: 'total_opens', unique_opens: 'unique_opens', unsubscribes: 'unsubscribes' },
  automations: {
    delivered: 'total_delivered',
    bounces: 'total_bounces',
    opens: 'total_opens',
    unique_opens: 'total_unique_opens',
    unsubscribes: 'total_unsubscribe',
  },
} as const;

type Counter = keyof (typeof COLUMNS)['single_sends'];

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

export async function applyStatistics(trx: Knex.Transaction, events: MessageEvent[]): Promise<void> {
  const first = await firstOpens(trx, events);
  const counted = new Set<number>();
  const byOwner = { single_sends: new Map<string, Counts>(), automations: new Map<string, Counts>() };
  const bump = (e: MessageEvent, counter: Counter) => {
    const owner = counterOwner(e);
    if (!owner) return;
    const key = `${e.userId}:${owner.id}`;
    const map = byOwner[owner.table];
    const c = map.get(key) ?? { user_id: e.userId, id: owner.id, delivered: 0, bounces: 0, opens: 0, unique_opens: 0, unsubscribes: 0 };
    c[counter] += 1;
    map.set(key, c);
  };
  for (const e of events) {
    if (e.type === 'delivered') bump(e, 'delivered');
    else if (e.type === 'bounced') bump(e, 'bounces');
    else if (e.type === 'unsubscribed') bump(e, 'unsubscribes');
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
    const sets = (Object.keys(cols) as Counter[]).map((k) => `${cols[k]} = t.${cols[k]} + v.${k}`).join(', ');
    // Ordered by key so two transactions updating the same rows take their locks in one order.
    counts.sort((a, b) => a.user_id - b.user_id || a.id - b.id);
    await trx.raw(
      `UPDATE ${table} t SET ${sets}
       FROM json_to_recordset(?::json)
         AS v(user_id integer, id integer, delivered integer, bounces integer, opens integer, unique_opens integer, unsubscribes integer)
       WHERE t.id = v.id AND t.user_id = v.user_id`,
      [JSON.stringify(counts)],
    );
  }
}
