import type { Config } from '../../config';
import { HERALD_METADATA_KEY } from '../../mail/esp-headers';
import type { ReportedOutcome } from '../apply';
import {
  BAD_SIGNATURE,
  NOT_CONFIGURED,
  diagnosticOf,
  emailOf,
  enhancedStatus,
  header,
  isObject,
  parseJson,
  sameSecret,
  str,
  tokenOf,
  type InboundRequest,
  type Received,
} from './common';

/**
 * Postmark's Bounce and Spam Complaint webhooks: one JSON record per request, protected by
 * HTTP basic auth in the webhook URL (POSTMARK_WEBHOOK_USER / _PASSWORD), compared in
 * constant time. Postmark's `MessageID` is its own id, not the message's header, so only
 * the metadata (X-PM-Metadata-herald → `Metadata.herald`) can name the recipient row.
 */
const HARD = new Set(['HardBounce', 'BadEmailAddress', 'ManuallyDeactivated']);
const SOFT = new Set(['SoftBounce', 'Transient', 'DnsError', 'Blocked', 'Undeliverable']);
const COMPLAINT = new Set(['SpamComplaint', 'SpamNotification']);

function authorized(config: Config, req: InboundRequest): boolean | undefined {
  const expected = config.postmarkWebhook;
  if (!expected) return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header(req, 'authorization') ?? '');
  const given = m ? Buffer.from(m[1], 'base64').toString('utf8') : '';
  const colon = given.indexOf(':');
  const user = colon < 0 ? '' : given.slice(0, colon);
  const password = colon < 0 ? '' : given.slice(colon + 1);
  // Both compared every time, so the answer's time says nothing about which one was wrong.
  const userOk = sameSecret(user, expected.user);
  const passwordOk = sameSecret(password, expected.password);
  return userOk && passwordOk;
}

export function receivePostmark(config: Config, req: InboundRequest): Received {
  const auth = authorized(config, req);
  if (auth === undefined) return { refused: NOT_CONFIGURED };
  if (!auth) return { refused: BAD_SIGNATURE };
  const parsed = parseJson(req.body);
  if (!parsed || !isObject(parsed.value)) return { malformed: 'The request body must be a JSON object.' };
  return { outcomes: postmarkOutcome(parsed.value) };
}

function postmarkOutcome(e: Record<string, unknown>): ReportedOutcome[] {
  const record = str(e.RecordType);
  const type = str(e.Type) ?? '';
  let kind: ReportedOutcome['kind'] | undefined;
  if (record === 'SpamComplaint' || COMPLAINT.has(type)) kind = 'complaint';
  else if (record === 'Bounce' && HARD.has(type)) kind = 'hard';
  else if (record === 'Bounce' && SOFT.has(type)) kind = 'soft';
  if (!kind) return [];
  const metadata = isObject(e.Metadata) ? e.Metadata : {};
  const token = tokenOf(metadata[HERALD_METADATA_KEY]);
  if (!token) return [];
  return [
    {
      kind,
      match: { token },
      email: emailOf(e.Email),
      status: enhancedStatus(e.Details, e.Description),
      diagnostic: diagnosticOf(type, e.Details || e.Description),
      source: 'postmark',
      raw: JSON.stringify(e),
    },
  ];
}
