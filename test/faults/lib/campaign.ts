import type { Express } from 'express';
import type { Knex } from 'knex';
import { api, type TestAccount } from '../../helpers/app';
import { expectSuccess } from '../../helpers/expect';
import { createAutomation, createSend as createSendViaApi, type SendRefs } from '../../helpers/sends';
import { waitFor } from '../../helpers/wait';

/**
 * Sends and automations for the fault tests, created through the API (in-process app on the
 * test's isolated database) as a client would, with audiences inserted set-based.
 */

/** `n` contacts `<prefix><i>@<domain>` (i = 1..n) in one INSERT … SELECT; returns their addresses. */
export async function bulkContacts(db: Knex, account: TestAccount, typeId: number, n: number, prefix: string, domain: string): Promise<string[]> {
  await db.raw(
    `INSERT INTO contacts (user_id, contact_type_id, email, first_name)
     SELECT ?, ?, ? || g || '@' || ?, 'R' || g FROM generate_series(1, ?) g`,
    [account.id, typeId, prefix, domain, n],
  );
  await db('contact_types').where({ id: typeId }).increment('contacts_version', 1);
  return Array.from({ length: n }, (_, i) => `${prefix}${i + 1}@${domain}`);
}

const HTML = '<html><body><h1>Hello ((first_name))</h1><p>From ((sender_name)), ((sender_address))</p></body></html>';

/** A single send to `contacts_<list>`, due now; returns its utr and id. */
export function createSend(
  app: Express,
  db: Knex,
  account: TestAccount,
  refs: SendRefs & { name: string },
): Promise<{ utr: string; id: number }> {
  return createSendViaApi(app, db, account, refs, { template_html: HTML, single_send_name: refs.name, subject: 'News for ((first_name))' });
}

/** A custom automation on `contacts_<list>` with one instant email, set live; returns its id. */
export async function liveAutomation(
  app: Express,
  db: Knex,
  account: TestAccount,
  refs: SendRefs & { name: string },
): Promise<{ utr: string; id: number }> {
  const { utr, id } = await createAutomation(app, db, account, refs, { automation_name: refs.name });
  expectSuccess(
    await api(app, account).form('/automations/schedule/create', {
      utr,
      sender_id: refs.sender,
      subject: 'Welcome ((first_name))',
      waiting_period: 1,
      waiting_type: 'instantly',
      template_id: 3,
      preview_img: 'template-welcome.png',
      template_html: HTML,
    }),
    'Schedule Added',
  );
  expectSuccess(await api(app, account).get(`/automations/set-live?utr=${utr}`));
  return { utr, id };
}

/** Recipient rows by status, e.g. `{ sent: 9950, sending: 50 }`. */
export async function deliveryStatuses(db: Knex, where: Record<string, number>): Promise<Record<string, number>> {
  const rows = (await db('deliveries').where(where).groupBy('status').select('status', db.raw('count(*)::int AS n'))) as Array<{
    status: string;
    n: number;
  }>;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Lower-cased addresses of the recipient rows in `status`. */
export async function addressesIn(db: Knex, where: Record<string, number>, status: string): Promise<string[]> {
  const rows = (await db('deliveries').where(where).where({ status }).select(db.raw('lower(email) AS email'))) as Array<{ email: string }>;
  return rows.map((r) => r.email);
}

/** Waits until the single send has status 3, describing its rows on timeout. */
export async function waitForCompleted(db: Knex, sendId: number, timeoutMs: number): Promise<void> {
  await waitFor('the send to reach status 3 (completed)', async () => (await db('single_sends').where({ id: sendId }).first('status')).status === 3, {
    timeoutMs,
    intervalMs: 200,
    describe: async () => {
      const s = await db('single_sends').where({ id: sendId }).first('status', 'triggered', 'delivered', 'bounces', 'fanout_done_at');
      return `send: ${JSON.stringify(s)}; rows: ${JSON.stringify(await deliveryStatuses(db, { single_send_id: sendId }))}`;
    },
  });
}

/**
 * Waits until PostgreSQL has no session left of Herald workers on this database: after a
 * SIGKILL the server notices the closed socket and rolls back whatever the dead worker had
 * open, so rows read afterwards are exactly what it committed.
 */
export async function waitForWorkerSessionsGone(db: Knex, timeoutMs = 10_000): Promise<void> {
  await waitFor(
    'the killed worker’s database sessions to end',
    async () =>
      Number(
        (
          await db.raw(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'herald-worker'`)
        ).rows[0].n,
      ) === 0,
    { timeoutMs, intervalMs: 25 },
  );
}

/** The set `a` minus the set `b`, as a sorted array. */
export function minus(a: Iterable<string>, b: Set<string>): string[] {
  return [...a].filter((x) => !b.has(x)).sort();
}

/** A list as its size and first few entries: what a failure message should show of 10,000. */
export function few(list: string[]): { count: number; examples: string[] } {
  return { count: list.length, examples: list.slice(0, 5) };
}

export const NONE = { count: 0, examples: [] };

/** Writes a measured figure where the test run's output shows it (the report quotes them). */
export function report(label: string, figures: Record<string, unknown>): void {
  process.stderr.write(`[faults] ${label}: ${JSON.stringify(figures)}\n`);
}
