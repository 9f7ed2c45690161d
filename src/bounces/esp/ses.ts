import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import type { Config } from '../../config';
import { AppError } from '../../http/errors';
import type { Logger } from '../../logger';
import { RECIPIENT_HEADER } from '../../mail/esp-headers';
import type { ReportedOutcome } from '../apply';
import {
  BAD_SIGNATURE,
  NOT_CONFIGURED,
  diagnosticOf,
  emailOf,
  enhancedStatus,
  isObject,
  matchOf,
  messageIdOf,
  parseJson,
  str,
  tokenOf,
  type InboundRequest,
  type Received,
} from './common';

/**
 * Amazon SES notifications through an SNS topic (HTTPS subscription, raw message delivery
 * off). Every SNS message is checked before anything else: its TopicArn must be one of
 * SES_SNS_TOPIC_ARNS, its signature (SignatureVersion 1: SHA1withRSA, 2: SHA256withRSA over
 * the canonical field list) must verify against the certificate at SigningCertURL, which must
 * be https on sns.<region>.amazonaws.com. A SubscriptionConfirmation that passes is confirmed
 * by fetching its SubscribeURL (https on an amazonaws.com host). Notifications carry SES's
 * Bounce or Complaint JSON; SES replaces the Message-ID, so the recipient row is found by the
 * X-Herald-Recipient header in `mail.headers` (SES: "include original headers").
 */
const CERT_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/;
const SUBSCRIBE_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/;
const FETCH_TIMEOUT_MS = 10_000;

/** Certificates fetched, by URL (SNS signs with a handful; a process keeps at most 20). */
const certs = new Map<string, KeyObject>();

/** The fields signed, in order, per message type (AWS: "Verifying the signatures of Amazon SNS messages"). */
const SIGNED: Record<string, string[]> = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
};

export function canonicalString(m: Record<string, unknown>): string | undefined {
  const fields = SIGNED[str(m.Type) ?? ''];
  if (!fields) return undefined;
  let out = '';
  for (const f of fields) {
    const v = str(m[f]);
    if (v === undefined) {
      if (f === 'Subject') continue; // the only optional one
      return undefined;
    }
    out += `${f}\n${v}\n`;
  }
  return out;
}

const testMode = (config: Config) => config.sesSnsTestCertPem !== undefined;

function httpsUrlOn(value: unknown, host: RegExp): URL | undefined {
  try {
    const u = new URL(str(value) ?? '');
    return u.protocol === 'https:' && host.test(u.hostname) && !u.username && !u.password && (!u.port || u.port === '443') ? u : undefined;
  } catch {
    return undefined;
  }
}

async function signingKey(config: Config, certUrl: unknown): Promise<KeyObject | undefined> {
  if (testMode(config)) return createPublicKey(config.sesSnsTestCertPem!);
  const url = httpsUrlOn(certUrl, CERT_HOST);
  if (!url || !url.pathname.endsWith('.pem')) return undefined;
  const cached = certs.get(url.href);
  if (cached) return cached;
  const res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'error' });
  if (!res.ok) throw new Error(`SigningCertURL answered ${res.status}`);
  const key = createPublicKey(await res.text());
  if (certs.size >= 20) certs.delete(certs.keys().next().value!);
  certs.set(url.href, key);
  return key;
}

async function verified(config: Config, m: Record<string, unknown>): Promise<boolean> {
  const text = canonicalString(m);
  const version = str(m.SignatureVersion);
  const signature = str(m.Signature);
  if (!text || !signature || (version !== '1' && version !== '2')) return false;
  const key = await signingKey(config, m.SigningCertURL);
  if (!key) return false;
  try {
    return verify(version === '1' ? 'RSA-SHA1' : 'RSA-SHA256', Buffer.from(text, 'utf8'), key, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}

/** The SubscribeURL Herald may fetch: https on an SNS host (tests: also http on 127.0.0.1). */
function subscribeUrl(config: Config, value: unknown): URL | undefined {
  const https = httpsUrlOn(value, SUBSCRIBE_HOST);
  if (https) return https;
  if (!testMode(config)) return undefined;
  try {
    const u = new URL(str(value) ?? '');
    return u.protocol === 'http:' && u.hostname === '127.0.0.1' ? u : undefined;
  } catch {
    return undefined;
  }
}

export async function receiveSes(config: Config, logger: Logger, req: InboundRequest): Promise<Received> {
  if (config.sesSnsTopicArns.length === 0) return { refused: NOT_CONFIGURED };
  const parsed = parseJson(req.body);
  // A body that is not an SNS message carries no signature: refused like a wrong one.
  const m = parsed && isObject(parsed.value) ? parsed.value : {};
  const topic = str(m.TopicArn);
  if (!topic || !config.sesSnsTopicArns.includes(topic)) return { refused: 'The SNS topic is not one of SES_SNS_TOPIC_ARNS.' };
  let ok = false;
  try {
    ok = await verified(config, m);
  } catch (err) {
    logger.warn({ err, certUrl: str(m.SigningCertURL) }, 'SNS signing certificate could not be fetched');
  }
  if (!ok) return { refused: BAD_SIGNATURE };

  switch (str(m.Type)) {
    case 'SubscriptionConfirmation': {
      const url = subscribeUrl(config, m.SubscribeURL);
      if (!url) return { malformed: 'The SubscribeURL is not an Amazon SNS address.' };
      // Not confirmed now: SNS sends the confirmation again, so say so rather than fail as a bug would.
      const answered = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: 'error' }).then(
        (res) => res.status,
        (err: unknown) => {
          logger.warn({ err, topic }, 'SNS SubscribeURL could not be fetched');
          return 0;
        },
      );
      if (answered < 200 || answered > 299) throw new AppError(502, 'The subscription could not be confirmed with Amazon SNS; try again.');
      logger.info({ topic }, 'SNS subscription confirmed');
      return { outcomes: [] };
    }
    case 'Notification': {
      const inner = parseJson(Buffer.from(str(m.Message) ?? '', 'utf8'));
      return { outcomes: inner && isObject(inner.value) ? sesOutcomes(inner.value) : [] };
    }
    default:
      logger.info({ topic, type: str(m.Type) }, 'SNS message ignored');
      return { outcomes: [] };
  }
}

/** The recipient token from `mail.headers` (X-Herald-Recipient), else the Message-ID SES reports. */
function matchOfMail(mail: Record<string, unknown>): ReportedOutcome['match'] | undefined {
  const headers = Array.isArray(mail.headers) ? mail.headers : [];
  let token: string | undefined;
  let messageId: string | undefined;
  for (const h of headers) {
    if (!isObject(h)) continue;
    const name = str(h.name)?.toLowerCase();
    if (name === RECIPIENT_HEADER.toLowerCase()) token ??= tokenOf(h.value);
    else if (name === 'message-id') messageId ??= messageIdOf(h.value);
  }
  const common = isObject(mail.commonHeaders) ? mail.commonHeaders : {};
  return matchOf(token, messageId ?? messageIdOf(common.messageId));
}

/** SES's Bounce / Complaint notification (`notificationType`, or `eventType` for event publishing). */
export function sesOutcomes(n: Record<string, unknown>): ReportedOutcome[] {
  const type = str(n.notificationType) ?? str(n.eventType);
  const mail = isObject(n.mail) ? n.mail : {};
  const match = matchOfMail(mail);
  if (!match) return [];
  const raw = JSON.stringify(n);
  if (type === 'Bounce' && isObject(n.bounce)) {
    const b = n.bounce;
    const bounceType = str(b.bounceType);
    // Undetermined: SES could not tell; counted as soft (suppressed only if it repeats).
    const kind: ReportedOutcome['kind'] = bounceType === 'Permanent' ? 'hard' : 'soft';
    const recipients = Array.isArray(b.bouncedRecipients) ? b.bouncedRecipients.filter(isObject) : [];
    return recipients.map((r) => ({
      kind,
      match,
      email: emailOf(r.emailAddress),
      status: enhancedStatus(r.status, r.diagnosticCode),
      diagnostic: diagnosticOf(r.diagnosticCode ?? `${bounceType ?? ''} ${str(b.bounceSubType) ?? ''}`.trim()),
      source: 'ses' as const,
      raw,
    }));
  }
  if (type === 'Complaint' && isObject(n.complaint)) {
    const c = n.complaint;
    const recipients = Array.isArray(c.complainedRecipients) ? c.complainedRecipients.filter(isObject) : [];
    return recipients.map((r) => ({
      kind: 'complaint' as const,
      match,
      email: emailOf(r.emailAddress),
      status: null,
      diagnostic: diagnosticOf(c.complaintFeedbackType ?? 'complaint'),
      source: 'ses' as const,
      raw,
    }));
  }
  return [];
}
