import type { Knex } from 'knex';
import type { Config } from '../config';
import { signMessage } from '../dkim/sign';
import type { Logger } from '../logger';
import { buildMessage, newMessageId, type Address } from './mime';
import type { Mailer } from './mailer';
import { escapeHtml } from './escape-html';
import { htmlToText } from './text';

export interface SystemMailDeps {
  config: Config;
  /** Where the installation's DKIM key for MAIL_FROM's domain is kept. */
  db: Knex;
  mailer: Mailer;
  logger: Logger;
}

/**
 * Herald's own mail (sender verification, notifications): one message, DKIM-signed for MAIL_FROM's
 * domain, sent now. Without SMTP_URL (mail written to DATA_DIR/outbox) it is also logged with its
 * `link`, the one a person has to open: a developer finds it there instead of decoding the .eml.
 */
export async function sendSystemMail(
  deps: SystemMailDeps,
  mail: { to: Address; subject: string; html: string; link?: string },
): Promise<void> {
  const domain = deps.config.mailFrom.split('@')[1];
  const unsigned = buildMessage({
    from: { name: 'Herald', email: deps.config.mailFrom },
    to: mail.to,
    subject: mail.subject,
    html: mail.html,
    text: htmlToText(mail.html),
    messageId: newMessageId(domain),
    headers: { 'Auto-Submitted': 'auto-generated' },
  });
  const raw = await signMessage(deps.db, deps.config, null, deps.config.mailFrom, unsigned);
  // The `system` stream: the routes that carry Herald's own mail (SMTP_ROUTES `streams`).
  await deps.mailer.send({ from: deps.config.mailFrom, to: mail.to.email, raw, stream: 'system' });
  if (deps.mailer.local) {
    deps.logger.info({ to: mail.to.email, subject: mail.subject, link: mail.link, outbox: deps.mailer.target }, 'mail written to the outbox (no SMTP_URL)');
  }
}

/** A plain, readable HTML body for system mail. */
export function systemMailHtml(title: string, paragraphs: string[]): string {
  return `<!doctype html><html><body style="font-family:Arial,Helvetica,sans-serif;color:#1f2933;line-height:1.5">
<h2 style="margin:0 0 16px">${escapeHtml(title)}</h2>
${paragraphs.map((p) => `<p style="margin:0 0 12px">${p}</p>`).join('\n')}
<p style="color:#6b7280;font-size:12px;margin-top:24px">Sent by Herald.</p>
</body></html>`;
}
