import type { Knex } from 'knex';
import { secret } from '../db/secrets';
import { signMessage } from '../dkim/sign';
import { defineJob, enqueue } from '../jobs/kind';
import { escapeHtml } from '../mail/escape-html';
import { buildMessage, newMessageId } from '../mail/mime';
import { systemMailHtml, type SystemMailDeps } from '../mail/system-mail';
import { htmlToText } from '../mail/text';
import { loadPublicForm } from './forms';
import { optinToken } from './optin-token';
import { findPending } from './pending';

/**
 * The confirmation mail of a double opt-in subscription (issue 35): never sent inside the
 * request, it waits as a job of the generic `jobs` table (kind `optin_confirmation`) and the
 * worker mails it, with retries, like a notification. The request that queued it answers the same
 * whatever happens next, so a form cannot tell by its timing whether an address was mailed.
 *
 * From the form's confirmation sender (a verified sender of the account), DKIM-signed for its
 * domain with the account's key; subject the form's confirmation subject. The link's token is
 * made when the mail goes, so OPTIN_TOKEN_TTL_HOURS counts from then.
 */
interface OptinMailJob {
  pendingId: number;
}

export type OptinMailDeps = SystemMailDeps;

/** The confirmation page's URL for a token. */
export function confirmUrl(publicUrl: string, token: string): string {
  return `${publicUrl}/subscribe/confirm/${token}`;
}

async function mailConfirmation(deps: OptinMailDeps, userId: number, pendingId: number): Promise<string | undefined> {
  const pending = await findPending(deps.db, userId, pendingId);
  // Confirmed since, or cleaned up: nothing to ask any more.
  if (!pending || pending.confirmed_at) return undefined;
  const form = await loadPublicForm(deps.db, { userId, formId: pending.form_id });
  if (!form) return undefined;
  if (!form.sender) return `form ${form.formId} has no verified confirmation sender: no confirmation mail can go`;
  const key = await secret(deps.db, 'tracking');
  const expiresAt = Math.floor(Date.now() / 1000) + deps.config.optinTokenTtlHours * 3600;
  const link = confirmUrl(deps.config.publicUrl, optinToken(key, { userId, pendingId, generation: pending.generation, expiresAt }));
  const title = form.confirmationSubject;
  const html = systemMailHtml(title, [
    `You (or someone using your address) asked to subscribe to <strong>${escapeHtml(form.name)}</strong>.`,
    `<a href="${escapeHtml(link)}">Confirm your subscription</a>`,
    `The link works for ${deps.config.optinTokenTtlHours} hours. If you did not ask for this, ignore this mail: you will not be subscribed.`,
  ]).replace('Sent by Herald.', `Sent by ${escapeHtml(form.sender.fromName)}.`);
  const from = form.sender.fromEmail;
  const unsigned = buildMessage({
    from: { name: form.sender.fromName, email: from },
    to: { email: pending.email },
    replyTo: form.sender.replyTo || null,
    subject: title,
    html,
    text: htmlToText(html),
    messageId: newMessageId(from.split('@')[1]),
    headers: { 'Auto-Submitted': 'auto-generated' },
  });
  const raw = await signMessage(deps.db, deps.config, userId, from, unsigned);
  // Herald's own mail for the account (SMTP_ROUTES `streams`: system), on the account's pinned routes.
  await deps.mailer.send({ from, to: pending.email, raw, userId, stream: 'system' });
  if (deps.mailer.local) deps.logger.info({ to: pending.email, subject: title, link, outbox: deps.mailer.target }, 'confirmation mail written to the outbox (no SMTP_URL)');
  return undefined;
}

export const optinConfirmation = defineJob<OptinMailJob, OptinMailDeps>({
  name: 'optin_confirmation',
  settings: (config) => ({
    maxAttempts: config.notificationMaxAttempts,
    retryBaseMs: config.notificationRetryBaseMs,
    retryMaxMs: 6 * 3600_000,
    leaseMs: Math.max(60_000, config.smtpTimeoutMs * 3),
    concurrency: config.notificationConcurrency,
  }),
  handle: async (deps, job) => {
    const problem = await mailConfirmation(deps, job.user_id, job.payload.pendingId);
    return problem ? { ok: false, error: problem, permanent: true } : { ok: true };
  },
});

/**
 * Queues a confirmation mail for each row of `from` (SQL: a CTE of the submission's one
 * statement, with the pending subscription's `id`, where `mail`): enqueue's row, as a CTE.
 */
export function queueConfirmationMailSql(userId: number, from: string): { sql: string; bindings: Knex.RawBinding[] } {
  return {
    sql: `INSERT INTO jobs (user_id, kind, key, payload, next_attempt_at)
     SELECT ?, ?, NULL, jsonb_build_object('pendingId', x.id), now() FROM ${from} x WHERE x.mail`,
    bindings: [userId, optinConfirmation.name],
  };
}

/** Queues one confirmation mail (in the caller's transaction). */
export async function queueConfirmationMail(trx: Knex, userId: number, pendingId: number): Promise<void> {
  await enqueue(trx, optinConfirmation, { userId, payload: { pendingId } });
}
