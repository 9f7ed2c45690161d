import { verify } from 'node:crypto';
import type { Config } from '../../config';
import { parsePublicKey } from '../../config';
import type { ReportedOutcome } from '../apply';
import { HERALD_METADATA_KEY } from '../../mail/esp-headers';
import {
  BAD_SIGNATURE,
  NOT_CONFIGURED,
  TOO_OLD,
  diagnosticOf,
  emailOf,
  enhancedStatus,
  freshTimestamp,
  header,
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
 * SendGrid's Event Webhook (signed): a JSON array of events. The signature header is base64 of
 * an ECDSA P-256 signature (DER) over SHA-256 of the timestamp header followed by the raw body,
 * checked with the account's verification key (SENDGRID_WEBHOOK_PUBLIC_KEY). Unique args
 * (X-SMTPAPI) come back as top-level fields of each event; `smtp-id` is the message's
 * Message-ID.
 */
export const SIGNATURE_HEADER = 'X-Twilio-Email-Event-Webhook-Signature';
export const TIMESTAMP_HEADER = 'X-Twilio-Email-Event-Webhook-Timestamp';

let cachedKey: { text: string; key: ReturnType<typeof parsePublicKey> } | undefined;

export function receiveSendgrid(config: Config, req: InboundRequest, now = Date.now()): Received {
  const keyText = config.sendgridWebhookPublicKey;
  if (!keyText) return { refused: NOT_CONFIGURED };
  const signature = header(req, SIGNATURE_HEADER);
  const timestamp = header(req, TIMESTAMP_HEADER);
  if (!signature || !timestamp) return { refused: BAD_SIGNATURE };
  if (cachedKey?.text !== keyText) cachedKey = { text: keyText, key: parsePublicKey(keyText) };
  let valid = false;
  try {
    valid = verify('sha256', Buffer.concat([Buffer.from(timestamp, 'utf8'), req.body]), cachedKey.key, Buffer.from(signature, 'base64'));
  } catch {
    valid = false;
  }
  if (!valid) return { refused: BAD_SIGNATURE };
  if (!/^\d+$/.test(timestamp.trim()) || !freshTimestamp(Number(timestamp), now)) return { refused: TOO_OLD };
  const parsed = parseJson(req.body);
  if (!parsed || !Array.isArray(parsed.value)) return { malformed: 'The request body must be a JSON array of events.' };
  return { outcomes: parsed.value.flatMap((e) => (isObject(e) ? sendgridOutcome(e) : [])) };
}

/** SendGrid's `dropped` reasons that mean the address is bad or complained (others: its own unsubscribe lists). */
function droppedKind(reason: string): ReportedOutcome['kind'] | undefined {
  if (/spam report/i.test(reason)) return 'complaint';
  if (/bounced address|invalid/i.test(reason)) return 'hard';
  return undefined;
}

function sendgridOutcome(e: Record<string, unknown>): ReportedOutcome[] {
  const event = str(e.event);
  let kind: ReportedOutcome['kind'] | undefined;
  if (event === 'bounce') kind = str(e.type) === 'blocked' ? 'soft' : 'hard';
  else if (event === 'deferred') kind = 'deferred';
  else if (event === 'spamreport') kind = 'complaint';
  else if (event === 'dropped') kind = droppedKind(str(e.reason) ?? '');
  if (!kind) return [];
  const match = matchOf(tokenOf(e[HERALD_METADATA_KEY]), messageIdOf(e['smtp-id']));
  if (!match) return [];
  return [
    {
      kind,
      match,
      email: emailOf(e.email),
      status: enhancedStatus(e.status, e.reason, e.response),
      diagnostic: diagnosticOf(e.reason ?? e.response, event === 'dropped' ? 'dropped by SendGrid' : undefined),
      source: 'sendgrid',
      raw: JSON.stringify(e),
    },
  ];
}
