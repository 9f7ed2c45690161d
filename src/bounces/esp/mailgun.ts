import { createHmac } from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../../config';
import { HERALD_METADATA_KEY } from '../../mail/esp-headers';
import type { ReportedOutcome } from '../apply';
import {
  BAD_SIGNATURE,
  NOT_CONFIGURED,
  TOO_OLD,
  diagnosticOf,
  emailOf,
  enhancedStatus,
  freshTimestamp,
  isObject,
  matchOf,
  messageIdOf,
  parseJson,
  sameSecret,
  str,
  tokenOf,
  type InboundRequest,
  type Received,
} from './common';
import { firstUse } from './replay';

/**
 * Mailgun's webhooks: one JSON event per request, `{ signature: { timestamp, token, signature },
 * "event-data": {…} }`, signed with HMAC-SHA256(signing key, timestamp + token) in hex
 * (MAILGUN_WEBHOOK_SIGNING_KEY). A body without a valid signature is refused (401) before it is
 * read any further — one that is not JSON has none. A timestamp older than MAX_SIGNATURE_AGE_S
 * is refused, and so is a token already seen in that window (replay.ts: kept in PostgreSQL, so
 * a restart or another process does not forget it).
 */
export async function receiveMailgun(config: Config, db: Knex, req: InboundRequest, now = Date.now()): Promise<Received> {
  const key = config.mailgunWebhookSigningKey;
  if (!key) return { refused: NOT_CONFIGURED };
  const parsed = parseJson(req.body);
  const body = parsed && isObject(parsed.value) ? parsed.value : {};
  const sig = isObject(body.signature) ? body.signature : {};
  const timestamp = str(sig.timestamp);
  const token = str(sig.token);
  const signature = str(sig.signature);
  if (!timestamp || !token || !signature) return { refused: BAD_SIGNATURE };
  const expected = createHmac('sha256', key).update(timestamp + token).digest('hex');
  if (!sameSecret(expected, signature.toLowerCase())) return { refused: BAD_SIGNATURE };
  if (!/^\d+$/.test(timestamp) || !freshTimestamp(Number(timestamp), now)) return { refused: TOO_OLD };
  if (!(await firstUse(db, 'mailgun', token))) return { refused: TOO_OLD };
  const data = body['event-data'];
  return { outcomes: isObject(data) ? mailgunOutcome(data) : [] };
}

function mailgunOutcome(e: Record<string, unknown>): ReportedOutcome[] {
  const event = str(e.event);
  let kind: ReportedOutcome['kind'] | undefined;
  // `failed` with severity temporary: Mailgun will try again (a deferral, not a bounce).
  if (event === 'failed') kind = str(e.severity) === 'temporary' ? 'deferred' : 'hard';
  else if (event === 'complained') kind = 'complaint';
  if (!kind) return [];
  const vars = isObject(e['user-variables']) ? e['user-variables'] : {};
  const message = isObject(e.message) ? e.message : {};
  const headers = isObject(message.headers) ? message.headers : {};
  const match = matchOf(tokenOf(vars[HERALD_METADATA_KEY]), messageIdOf(headers['message-id']));
  if (!match) return [];
  const status = isObject(e['delivery-status']) ? e['delivery-status'] : {};
  return [
    {
      kind,
      match,
      email: emailOf(e.recipient),
      status: enhancedStatus(status['enhanced-code'], status.message, status.description),
      diagnostic: diagnosticOf(status.code, status.message || status.description || e.reason),
      source: 'mailgun',
      raw: JSON.stringify(e),
    },
  ];
}
