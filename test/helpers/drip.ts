import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { recordMessageEvents } from '../../src/events/record';
import type { MessageEvent } from '../../src/events/types';
import { countQueued, type EmailCounts } from '../../src/statistics';
import { AutomationStatus } from '../../src/states';
import type { TestAccount } from './app';
import { makeSender } from './fixtures';

/**
 * An automation of two emails with something to count, written as Herald writes it: the
 * statistics tests check what the writer keeps of it, the backfill tests that a migration fills
 * in the same.
 */
export interface Drip {
  automation: number;
  /** Its emails (automation_schedules ids), in order. */
  emails: number[];
  /** Recipient rows: three of the first email, one of the second. */
  rows: Array<{ id: number; email: string; schedule: number }>;
}

/**
 * The automation, its emails and their recipient rows, written and counted (countQueued) in one
 * transaction, as the engine does: the rows' hour is then the count's.
 */
export async function makeDrip(db: Knex, account: TestAccount): Promise<Drip> {
  const [auto] = await db('automations')
    .insert({ user_id: account.id, utr: randomUUID(), automation_for: 1, automation_for_table: 'contacts_', automation_name: 'Drip', automation_type: 1, status: AutomationStatus.Live })
    .returning('id');
  const sender = await makeSender(db, account);
  const emails: number[] = [];
  for (const subject of ['Welcome', 'Day two']) {
    const [e] = await db('automation_schedules')
      .insert({ user_id: account.id, automation_id: auto.id, sender_id: sender, subject, waiting_period: 0, waiting_type: 'instantly', utr: randomUUID(), template_id: 1, preview_img: 'x.png' })
      .returning('id');
    emails.push(e.id);
  }
  const rows = await db.transaction(async (trx) => {
    const written = (await trx('deliveries')
      .insert(
        ['p@example.com', 'q@example.com', 'r@example.com', 'p@example.com'].map((email, i) => ({
          user_id: account.id,
          automation_id: auto.id,
          automation_schedule_id: emails[i < 3 ? 0 : 1],
          email,
          status: 'sent',
          attempts: 1,
        })),
      )
      .returning(['id', 'email', 'automation_schedule_id'])) as Array<{ id: string; email: string; automation_schedule_id: number }>;
    const queued = written.map((r) => ({ id: Number(r.id), email: r.email, schedule: r.automation_schedule_id }));
    await countQueued(
      trx,
      queued.map((r) => ({ userId: account.id, source: { kind: 'automation_email' as const, automationId: auto.id, scheduleId: r.schedule }, n: 1 })),
    );
    return queued;
  });
  return { automation: auto.id, emails, rows };
}

/**
 * Deliveries, opens, human and bot clicks, a bounce, a complaint and an unsubscribe of the drip's
 * messages, and a message dropped before it had a row (it belongs to no email). What each email
 * then counts is DRIP_EMAIL_COUNTS.
 */
export async function recordDripFacts(db: Knex, account: TestAccount, drip: Drip): Promise<void> {
  const ref = (i: number) => ({ userId: account.id, singleSendId: null, automationId: drip.automation, deliveryId: drip.rows[i].id, email: drip.rows[i].email });
  const [link] = await db('tracked_links').insert({ user_id: account.id, automation_id: drip.automation, url: 'https://example.com/drip' }).returning('id');
  const click = (i: number, bot: boolean) => ({ ...ref(i), type: 'clicked', linkId: Number(link.id), data: { url: 'https://example.com/drip', suspected_bot: bot } });
  await db.transaction((trx) =>
    recordMessageEvents(trx, [
      { ...ref(0), type: 'delivered' },
      { ...ref(1), type: 'delivered' },
      { ...ref(3), type: 'delivered' },
      { ...ref(0), type: 'opened' },
      { ...ref(0), type: 'opened' },
      { ...ref(3), type: 'opened' },
      click(1, true),
      click(0, false),
      click(0, false),
      { ...ref(2), type: 'bounced', data: { status: '5.1.1', diagnostic: 'no', source: 'dsn', kind: 'hard' } },
      { ...ref(1), type: 'complained' },
      { ...ref(3), type: 'unsubscribed', data: { group_id: null } },
      { ...ref(0), deliveryId: null, email: 's@example.com', type: 'dropped', data: { reason: 'suppressed' } },
    ] as MessageEvent[]),
  );
}

export const DRIP_EMAIL_COUNTS: [EmailCounts, EmailCounts] = [
  { triggered: 3, delivered: 2, unique_opens: 1, opens: 2, bounces: 1, unsubscribes: 0, unique_clicks: 1, total_clicks: 3, complaints: 1 },
  { triggered: 1, delivered: 1, unique_opens: 1, opens: 1, bounces: 0, unsubscribes: 1, unique_clicks: 0, total_clicks: 0, complaints: 0 },
];
