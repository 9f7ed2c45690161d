import type { Knex } from 'knex';
import type { MessageEvent } from './types';

/**
 * The counters of each email of an automation (`automation_schedules`), kept like an
 * automation's own: the statistics consumer (statistics.ts) hands over what each event of an
 * automation's message counted, and the automation engine what it queued. Events name their
 * recipient row, not the email, so the row says which email it was.
 *
 * Also the queued automation emails of the hourly timeline (`message_stats_hourly.triggered`),
 * which the overview sums (src/resources/reports): a single send's own row keeps its count.
 */

/** Counter (statistics.ts's name) → column of automation_schedules. */
const EMAIL_COLUMNS = {
  delivered: 'delivered',
  bounces: 'bounces',
  opens: 'total_opens',
  unique_opens: 'unique_opens',
  unsubscribes: 'unsubscribes',
  total_clicks: 'total_clicks',
  unique_clicks: 'unique_clicks',
  complaints: 'complaints',
} as const;
type EmailCounter = keyof typeof EMAIL_COLUMNS;
const COUNTERS = Object.keys(EMAIL_COLUMNS) as EmailCounter[];

type Row = { user_id: number; delivery_id: number } & Record<EmailCounter, number>;

/** What a batch of events adds to the emails of automations, per recipient row. */
export class EmailCounts {
  private readonly rows = new Map<string, Row>();

  /** Counts one event's counter when the event is about an automation email. */
  add(e: MessageEvent, counter: string): void {
    if (!e.automationId || e.singleSendId || !e.deliveryId || !(counter in EMAIL_COLUMNS)) return;
    const key = `${e.userId}:${e.deliveryId}`;
    let row = this.rows.get(key);
    if (!row) {
      row = { user_id: e.userId, delivery_id: e.deliveryId, ...(Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Record<EmailCounter, number>) };
      this.rows.set(key, row);
    }
    row[counter as EmailCounter] += 1;
  }

  /** Adds the counts to the emails their recipient rows were sent for, in the caller's transaction. */
  async apply(trx: Knex.Transaction): Promise<void> {
    if (this.rows.size === 0) return;
    const sums = COUNTERS.map((c) => `sum(v.${c})::int AS ${c}`).join(', ');
    const { rows } = await trx.raw(
      `SELECT d.user_id, d.automation_schedule_id AS id, ${sums}
       FROM json_to_recordset(?::json) AS v(user_id integer, delivery_id bigint, ${COUNTERS.map((c) => `${c} integer`).join(', ')})
       JOIN deliveries d ON d.id = v.delivery_id AND d.user_id = v.user_id
       WHERE d.automation_schedule_id IS NOT NULL
       GROUP BY 1, 2`,
      [JSON.stringify([...this.rows.values()])],
    );
    const emails = (rows as Array<{ user_id: number; id: number } & Record<EmailCounter, number>>).sort((a, b) => a.user_id - b.user_id || a.id - b.id);
    if (emails.length === 0) return;
    // In key order, so two transactions updating the same emails take their locks in one order.
    await trx.raw(
      `UPDATE automation_schedules s SET ${COUNTERS.map((c) => `${EMAIL_COLUMNS[c]} = s.${EMAIL_COLUMNS[c]} + v.${c}`).join(', ')}
       FROM json_to_recordset(?::json) AS v(user_id integer, id integer, ${COUNTERS.map((c) => `${c} integer`).join(', ')})
       WHERE s.id = v.id AND s.user_id = v.user_id`,
      [JSON.stringify(emails)],
    );
  }
}

/**
 * Emails the automation engine queued (one recipient row each): each email's `triggered`, and
 * its automation's queued count of this hour.
 */
export async function countQueuedEmails(trx: Knex.Transaction, queued: Array<{ user_id: number; automation_id: number; automation_schedule_id: number }>): Promise<void> {
  if (queued.length === 0) return;
  const perEmail = new Map<string, { user_id: number; id: number; n: number }>();
  const perAutomation = new Map<string, { user_id: number; id: number; n: number }>();
  for (const q of queued) {
    const e = perEmail.get(`${q.user_id}:${q.automation_schedule_id}`) ?? { user_id: q.user_id, id: q.automation_schedule_id, n: 0 };
    e.n += 1;
    perEmail.set(`${q.user_id}:${q.automation_schedule_id}`, e);
    const a = perAutomation.get(`${q.user_id}:${q.automation_id}`) ?? { user_id: q.user_id, id: q.automation_id, n: 0 };
    a.n += 1;
    perAutomation.set(`${q.user_id}:${q.automation_id}`, a);
  }
  const byKey = (a: { user_id: number; id: number }, b: { user_id: number; id: number }) => a.user_id - b.user_id || a.id - b.id;
  // The statistics consumer's order (automations, then hourly rows, then emails), so the two never deadlock.
  await trx.raw(
    `INSERT INTO message_stats_hourly (user_id, owner_type, owner_id, hour, triggered)
     SELECT v.user_id, 'automation', v.id, date_trunc('hour', now()), v.n
     FROM json_to_recordset(?::json) AS v(user_id integer, id integer, n integer)
     ORDER BY v.user_id, v.id
     ON CONFLICT (user_id, owner_type, owner_id, hour) DO UPDATE SET triggered = message_stats_hourly.triggered + EXCLUDED.triggered`,
    [JSON.stringify([...perAutomation.values()].sort(byKey))],
  );
  await trx.raw(
    `UPDATE automation_schedules s SET triggered = s.triggered + v.n
     FROM json_to_recordset(?::json) AS v(user_id integer, id integer, n integer)
     WHERE s.id = v.id AND s.user_id = v.user_id`,
    [JSON.stringify([...perEmail.values()].sort(byKey))],
  );
}
