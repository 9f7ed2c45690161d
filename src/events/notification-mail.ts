import type { Knex } from 'knex';
import type { Config } from '../config';
import { jobTable, type Claimed } from '../jobs/table';
import type { JobKind, JobOutcome } from '../jobs/runner';
import { escapeHtml } from '../mail/escape-html';
import type { Address } from '../mail/mime';
import { sendSystemMail, systemMailHtml, type SystemMailDeps } from '../mail/system-mail';
import { jobStatus } from '../states';

/**
 * Notification mail: the notice of an account event to the account's notification recipients
 * must not be sent inside a request, so it waits as a job in `outbox_jobs` (written in the
 * transaction of the event it reports, src/events/account-events.ts) and is mailed by the
 * worker's notifications loop, on the job runner (src/jobs): claimed with `FOR UPDATE SKIP
 * LOCKED` under a lease, fenced by its attempt number, retried with backoff
 * (NOTIFICATION_RETRY_BASE_MS, NOTIFICATION_MAX_ATTEMPTS), done or failed.
 */
export type NotificationDeps = SystemMailDeps;

interface NotificationJob {
  event_id: number;
  payload: { to?: Address[] };
}

const OUTBOX_JOBS = jobTable({
  name: 'outbox_jobs',
  states: jobStatus,
  attempts: 'attempts',
  kindColumn: 'kind',
  returning: 'j.event_id, j.payload',
  lastError: 'last_error',
});

/** The notification mail of an account event: its subject, and its facts as a table. */
async function notification(db: Knex, job: { user_id: number; event_id: number }): Promise<{ subject: string; html: string } | undefined> {
  const event = await db('events').where({ user_id: job.user_id, id: job.event_id }).first('data');
  if (!event) return undefined;
  const { subject, ...facts } = event.data as Record<string, string | number | null>;
  const rows = Object.entries(facts)
    .map(([k, v]) => `<tr><td style="padding:2px 12px 2px 0;color:#6b7280">${escapeHtml(k.replace(/_/g, ' '))}</td><td>${escapeHtml(v ?? '')}</td></tr>`)
    .join('');
  const title = String(subject ?? '');
  return { subject: `[Herald] ${title}`, html: systemMailHtml(title, [`<table style="border-collapse:collapse">${rows}</table>`]) };
}

/**
 * One notice to the recipients it still has. Those the server refused stay in the job for the
 * next attempt; those mailed are counted and never mailed again. An event that is gone (purged)
 * leaves nothing to mail: the job is done.
 */
async function mailNotice(deps: NotificationDeps, job: Claimed<NotificationJob>): Promise<JobOutcome> {
  const mail = await notification(deps.db, job);
  const to = mail ? (job.payload.to ?? []) : [];
  const failed: Address[] = [];
  const errors: string[] = [];
  for (const r of to) {
    try {
      await sendSystemMail(deps, { to: r, subject: mail!.subject, html: mail!.html });
    } catch (err) {
      failed.push(r);
      errors.push(`${r.email}: ${(err as Error).message}`);
    }
  }
  const set = {
    payload: JSON.stringify({ ...job.payload, to: failed }),
    done_count: deps.db.raw('done_count + ?', [to.length - failed.length]),
  };
  if (!errors.length) return { ok: true, set };
  deps.logger.warn({ job: job.id, errors }, 'notification mail failed');
  return { ok: false, error: errors.join('; '), set };
}

const KIND = 'notification';

/**
 * Queues the notice of an account event (in the event's transaction): one job naming the
 * account's notification recipients as they are now, none when it has no recipients.
 */
export async function queueNotice(trx: Knex.Transaction, userId: number, eventId: number): Promise<void> {
  // Read, then insert (not INSERT … SELECT): on Citus both statements then run on the account's node.
  const { rows } = await trx.raw(
    `SELECT jsonb_build_object('to', jsonb_agg(jsonb_build_object('name', email_owner, 'email', email_address) ORDER BY id)) AS payload
     FROM notification_recipients WHERE user_id = ?
     HAVING count(*) > 0`,
    [userId],
  );
  if (rows.length) await trx('outbox_jobs').insert({ user_id: userId, kind: KIND, event_id: eventId, payload: rows[0].payload });
}

/** Notification mail (`outbox_jobs` of kind `notification`) on the job runner. */
export const notifications: JobKind<NotificationJob, NotificationDeps> = {
  name: KIND,
  table: OUTBOX_JOBS,
  settings: (config: Config) => ({
    maxAttempts: config.notificationMaxAttempts,
    retryBaseMs: config.notificationRetryBaseMs,
    retryMaxMs: 6 * 3600_000,
    // Longer than a notice's SMTP conversations can take (as SEND_LEASE_MS's default).
    leaseMs: Math.max(60_000, config.smtpTimeoutMs * 3),
    concurrency: config.notificationConcurrency,
  }),
  handle: mailNotice,
};
