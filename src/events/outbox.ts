import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { escapeHtml } from '../mail/escape-html';
import type { Address } from '../mail/mime';
import { sendSystemMail, systemMailHtml, type SystemMailDeps } from '../mail/system-mail';

/**
 * Side effects that must not run inside a request (notification mail; webhook calls later)
 * wait in `outbox_jobs` and are done by the worker, claimed like recipient rows: `FOR UPDATE
 * SKIP LOCKED` so several workers never take the same job, and a lease (`next_attempt_at` moved
 * past the claim) so a job whose worker died is due again once its lease runs out. A claim is
 * named by its attempt number: a worker that lost its lease cannot overwrite the newer attempt.
 */
export interface OutboxDeps extends SystemMailDeps {
  db: Knex;
  config: Config;
  logger: Logger;
}

interface Job {
  user_id: number;
  id: string;
  kind: 'notification';
  event_id: string;
  payload: { to?: Address[] };
  attempts: number;
}

/** Retry delays double from RETRY_BASE_MS, at most 6 h; after MAX_ATTEMPTS a job is given up. */
const MAX_DELAY_MS = 6 * 3600_000;

export async function claimJobs(db: Knex, limit: number, leaseMs: number): Promise<Job[]> {
  const { rows } = await db.raw(
    `UPDATE outbox_jobs j SET attempts = j.attempts + 1, next_attempt_at = now() + ? * interval '1 millisecond'
     FROM (
       SELECT user_id, id FROM outbox_jobs
       WHERE status = 'queued' AND next_attempt_at <= now()
       ORDER BY next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED
     ) p
     WHERE j.user_id = p.user_id AND j.id = p.id
     RETURNING j.user_id, j.id, j.kind, j.event_id, j.payload, j.attempts`,
    [leaseMs, limit],
  );
  return rows as Job[];
}

/** The notification mail of an account event: its subject, and its facts as a table. */
async function notification(db: Knex, job: Job): Promise<{ subject: string; html: string } | undefined> {
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
 * Mails one notification to the recipients it still has; those that failed stay in the job
 * for the next attempt (the ones mailed are not mailed again).
 */
async function runJob(deps: OutboxDeps, job: Job): Promise<void> {
  const { db, config } = deps;
  const mail = await notification(db, job);
  const to = job.payload.to ?? [];
  const failed: Address[] = [];
  const errors: string[] = [];
  if (mail) {
    for (const r of to) {
      try {
        await sendSystemMail(deps, { to: r, subject: mail.subject, html: mail.html });
      } catch (err) {
        failed.push(r);
        errors.push(`${r.email}: ${(err as Error).message}`);
      }
    }
  }
  const done = mail ? to.length - failed.length : 0;
  const status = failed.length === 0 ? 'done' : job.attempts >= config.maxAttempts ? 'failed' : 'queued';
  const delay = Math.min(MAX_DELAY_MS, config.retryBaseMs * 2 ** (job.attempts - 1));
  if (errors.length) deps.logger.warn({ job: job.id, errors }, 'notification mail failed');
  await db('outbox_jobs')
    .where({ user_id: job.user_id, id: job.id, attempts: job.attempts })
    .update({
      status,
      payload: JSON.stringify({ ...job.payload, to: failed }),
      done_count: db.raw('done_count + ?', [done]),
      last_error: errors.length ? errors.join('; ').slice(0, 2000) : null,
      next_attempt_at: status === 'queued' ? db.raw("now() + ? * interval '1 millisecond'", [delay]) : db.fn.now(),
    });
}

/** One round: claims due jobs and does them. Returns how many were claimed (0: nothing due). */
export async function runOutbox(deps: OutboxDeps, limit = 20): Promise<number> {
  const jobs = await claimJobs(deps.db, limit, deps.config.sendLeaseMs);
  for (const job of jobs) {
    await runJob(deps, job).catch((err) => deps.logger.warn({ err, job: job.id }, 'outbox job failed; retried after its lease'));
  }
  return jobs.length;
}
