import type { Deps } from '../context';
import { applyMatched, type ReportedOutcome } from './apply';
import { classify, parseReport } from './parse';
import { verpToken } from './verp';

/**
 * One inbound message (SMTP or a mailbox): parse it, find its row (VERP token among
 * envelopeRecipients and the report's own recipient headers first, else the original
 * Message-ID), apply. `handled` is true only when it was a bounce/complaint report for one of
 * Herald's messages (the IMAP follower moves only those).
 *
 * Nothing the sender of the report says is trusted to name a message: the VERP token and the
 * Message-ID's local part are both recipient tokens, checked against their MAC
 * (src/bounces/apply.ts), and the address a report names must be the row's own.
 */
export async function processInbound(
  deps: Pick<Deps, 'db' | 'config' | 'logger'>,
  raw: Buffer,
  opts: { via: 'smtp' | 'imap'; envelopeRecipients?: string[] },
): Promise<{ handled: boolean }> {
  const report = await parseReport(raw);
  if (report.type === 'other') return { handled: false };
  const domain = deps.config.bounceDomain;
  let token: string | undefined;
  if (domain) {
    for (const address of [...(opts.envelopeRecipients ?? []), ...report.reportRecipients]) {
      token = verpToken(address, domain);
      if (token) break;
    }
  }
  const outcomes = (match: ReportedOutcome['match']): ReportedOutcome[] => {
    const source = opts.via === 'imap' ? 'imap' : report.type === 'complaint' ? 'arf' : 'dsn';
    if (report.type === 'complaint') {
      const r = report.recipients[0];
      return [{ kind: 'complaint', match, email: r?.email || null, status: null, diagnostic: r?.diagnostic ?? '', source, raw, feedbackType: report.feedbackType }];
    }
    return report.recipients.flatMap((r): ReportedOutcome[] => {
      const kind = classify(r);
      // A forward or alias bounced: the Original-Recipient is the address Herald sent to.
      const email = r.originalRecipient || r.email || null;
      return kind === 'none' ? [] : [{ kind, match, email, status: r.status, diagnostic: r.diagnostic, source, raw }];
    });
  };
  // The VERP token first; a token that names no row of ours (forged, another installation's)
  // leaves the original Message-ID, which only someone holding the message can know.
  let result = { matched: 0, applied: 0 };
  if (token) result = await applyMatched(deps, outcomes({ token }));
  if (result.matched === 0 && report.originalMessageId) result = await applyMatched(deps, outcomes({ messageId: report.originalMessageId }));
  const { matched, applied } = result;
  deps.logger.debug({ via: opts.via, type: report.type, matched, applied }, 'inbound report');
  return { handled: matched > 0 };
}
