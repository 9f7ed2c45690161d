import { createHash } from 'node:crypto';
import type { Request } from 'express';
import * as cookie from 'cookie';

/**
 * Who made a change, for consent records and erasure audits: the API key pair's public key
 * (`key:<public key>`), or the dashboard session (`session:<first 16 hex of its token's SHA-256>`,
 * the prefix of `dashboard_sessions.token_hash`: it names the session without being its token).
 * An API request is one that requireKeys authenticated (`req.ctx`); a dashboard form runs the same
 * route with its session's cookie instead.
 */
export type ActorSource = 'api' | 'dashboard';

/** src/dashboard/session.ts SESSION_COOKIE (the dashboard is a layer above: named here again). */
const SESSION_COOKIE = 'herald_session';

export function requestActor(req: Request): { source: ActorSource; actor: string | null } {
  if (req.ctx) {
    const key = req.get('PublicKey')?.trim();
    return { source: 'api', actor: key ? `key:${key}` : null };
  }
  const m = /^\d+\.([A-Za-z0-9_-]{43})$/.exec(cookie.parse(req.headers.cookie ?? '')[SESSION_COOKIE] ?? '');
  return { source: 'dashboard', actor: m ? `session:${createHash('sha256').update(m[1]).digest('hex').slice(0, 16)}` : null };
}
