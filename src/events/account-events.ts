import type { Knex } from 'knex';
import { escapeHtml } from '../mail/escape-html';
import { sendSystemMail, systemMailHtml, type SystemMailDeps } from '../mail/system-mail';

export type EventType =
  | 'single_send.started'
  | 'single_send.completed'
  | 'automation.live'
  | 'automation.paused'
  | 'contacts.imported'
  | 'sender.verified';

export interface EventDeps extends SystemMailDeps {
  db: Knex;
}

/**
 * Records an account event and mails it to the account's notification recipients. Mailing is
 * best effort: a failure is kept on the event row and logged, never undoes what happened.
 */
export async function recordEvent(
  deps: EventDeps,
  userId: number,
  type: EventType,
  subject: string,
  facts: Record<string, string | number | null>,
): Promise<void> {
  const [event] = await deps.db('account_events')
    .insert({ user_id: userId, type, subject: subject.slice(0, 255), payload: JSON.stringify(facts) })
    .returning(['id']);
  const recipients = (await deps.db('notification_recipients').where({ user_id: userId }).select('email_address', 'email_owner')) as Array<{
    email_address: string;
    email_owner: string;
  }>;
  const rows = Object.entries(facts)
    .map(([k, v]) => `<tr><td style="padding:2px 12px 2px 0;color:#6b7280">${escapeHtml(k.replace(/_/g, ' '))}</td><td>${escapeHtml(v ?? '')}</td></tr>`)
    .join('');
  const html = systemMailHtml(subject, [`<table style="border-collapse:collapse">${rows}</table>`]);
  let notified = 0;
  const errors: string[] = [];
  for (const r of recipients) {
    try {
      await sendSystemMail(deps, { to: { name: r.email_owner, email: r.email_address }, subject: `[Herald] ${subject}`, html });
      notified += 1;
    } catch (err) {
      errors.push(`${r.email_address}: ${(err as Error).message}`);
    }
  }
  if (errors.length) deps.logger.warn({ event: event.id, errors }, 'notification mail failed');
  await deps.db('account_events')
    .where({ id: event.id })
    .update({ notified, notify_error: errors.length ? errors.join('; ').slice(0, 2000) : null });
}
