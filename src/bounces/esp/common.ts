import { createHash, timingSafeEqual } from 'node:crypto';
import type { ReportedOutcome } from '../apply';

/**
 * What the ESP webhook receivers share. Each provider's module checks its request (signature,
 * credentials, age), reads its events, and maps each one that says a message bounced, was
 * deferred or drew a complaint to an ReportedOutcome; everything else it reports is ignored (Herald
 * learns deliveries and opens itself).
 */
export interface InboundRequest {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A refusal (401, nothing recorded), a malformed body (400), or the outcomes to apply. */
export type Received =
  | { refused: string }
  | { malformed: string }
  | { outcomes: ReportedOutcome[] };

export const NOT_CONFIGURED = 'This webhook is not configured.';
export const BAD_SIGNATURE = 'The webhook signature is invalid.';
export const TOO_OLD = 'The webhook timestamp is too old or in the future.';

/**
 * How far a signed timestamp may be from now (both ways: clocks drift). A captured request
 * replayed later than this is refused; within it, applying the same outcome twice changes
 * nothing (applyOutcomes is idempotent per message and kind).
 */
export const MAX_SIGNATURE_AGE_S = 300;

export function freshTimestamp(seconds: number, now = Date.now()): boolean {
  return Number.isFinite(seconds) && Math.abs(now / 1000 - seconds) <= MAX_SIGNATURE_AGE_S;
}

export function header(req: InboundRequest, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export function parseJson(body: Buffer): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(body.toString('utf8')) };
  } catch {
    return undefined;
  }
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined);

/** Constant-time equality of two secrets of any lengths (their SHA-256 digests are compared). */
export function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

const TOKEN = /^(?:[0-9a-f]{56}|[0-9a-f]{32})$/i;
/** The recipient token Herald put in a metadata header, when the value is one. */
export function tokenOf(v: unknown): string | undefined {
  const s = str(v)?.trim();
  return s && TOKEN.test(s) ? s.toLowerCase() : undefined;
}

/** A Message-ID as Herald writes it, `<local@domain>`, from any of the forms providers report. */
export function messageIdOf(v: unknown): string | undefined {
  const s = str(v)?.trim().replace(/^<|>$/g, '');
  return s && /^[^\s<>@]+@[^\s<>@]+$/.test(s) ? `<${s}>` : undefined;
}

export function matchOf(token: string | undefined, messageId: string | undefined): ReportedOutcome['match'] | undefined {
  if (token) return { token };
  if (messageId) return { messageId };
  return undefined;
}

/** The first enhanced status code (RFC 3463, `5.1.1`) in a text. */
export function enhancedStatus(...texts: unknown[]): string | null {
  for (const t of texts) {
    const m = /\b([245]\.\d{1,3}\.\d{1,3})\b/.exec(str(t) ?? '');
    if (m) return m[1];
  }
  return null;
}

export function emailOf(v: unknown): string | null {
  const s = str(v)?.trim();
  return s && /^[^\s@]+@[^\s@]+$/.test(s) ? s : null;
}

/** A diagnostic for the event (bounded: it is stored with the event). */
export function diagnosticOf(...parts: unknown[]): string {
  return parts
    .map((p) => str(p)?.trim())
    .filter(Boolean)
    .join(' — ')
    .slice(0, 1000);
}
