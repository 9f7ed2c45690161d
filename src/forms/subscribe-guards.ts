import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import type * as Altcha from 'altcha-lib' with { 'resolution-mode': 'import' };
import type * as AltchaSha from 'altcha-lib/algorithms/sha' with { 'resolution-mode': 'import' };
import { secret } from '../db/secrets';

/**
 * The public subscribe endpoint's abuse guards (issue 35) that need the database: the
 * per-client-address limit and the proof-of-work challenge. Both tables belong to no account
 * (GLOBAL_TABLES, src/db/citus.ts): a client address or a challenge names none.
 */

// altcha-lib's types are its ES module's; its CommonJS build is what this CommonJS module loads.
const load = createRequire(__filename);
const { createChallenge, randomInt, verifySolution } = load('altcha-lib') as typeof Altcha;
const { deriveKey } = load('altcha-lib/algorithms/sha') as typeof AltchaSha;
type Challenge = Altcha.Challenge;

/** The hour a submission counts in, and the seconds until the next one. */
function hourWindow(now = Date.now()): { hour: Date; retryAfter: number } {
  const start = Math.floor(now / 3600_000) * 3600_000;
  return { hour: new Date(start), retryAfter: Math.max(1, Math.ceil((start + 3600_000 - now) / 1000)) };
}

/**
 * The statement that counts one submission of a client address in this clock hour (one upsert,
 * atomic across processes), returning the hour's count `n`; and the seconds until the next hour
 * (Retry-After). A statement of its own, or a CTE of the submission's (src/public/subscribe-service.ts),
 * written when `when` (SQL) holds.
 */
export function clientCountSql(address: string, when?: string): { sql: string; bindings: Knex.RawBinding[]; retryAfter: number } {
  const { hour, retryAfter } = hourWindow();
  return {
    sql: `INSERT INTO subscribe_limits AS l (address, hour, n) SELECT ?, ?::timestamptz, 1${when ? ` WHERE ${when}` : ''}
     ON CONFLICT (address, hour) DO UPDATE SET n = l.n + 1
     RETURNING n`,
    bindings: [address.slice(0, 100), hour],
    retryAfter,
  };
}

/**
 * SUBSCRIBE_LIMIT_PER_HOUR: counts one submission of a client address in this clock hour and
 * answers whether it is within the limit; past it, the seconds until the next hour
 * (Retry-After). `limit` 0: no limit, nothing counted.
 */
export async function countClientSubmission(db: Knex, address: string, limit: number): Promise<{ ok: true } | { ok: false; retryAfter: number }> {
  if (limit <= 0) return { ok: true };
  const { sql, bindings, retryAfter } = clientCountSql(address);
  const { rows } = await db.raw(sql, bindings);
  return (rows[0].n as number) <= limit ? { ok: true } : { ok: false, retryAfter };
}

/** How long a challenge may be solved and its solution used. */
const CHALLENGE_TTL_MS = 10 * 60_000;
/** The work: a SHA-256 per counter value tried, up to this many (the browser's workers take well under a second). */
const COUNTER_MIN = 2_000;
const COUNTER_MAX = 10_000;

/** The HMAC key of challenges: derived from the installation's tracking secret, for this purpose only. */
async function challengeSecret(db: Knex): Promise<string> {
  return createHmac('sha256', await secret(db, 'tracking')).update('altcha:').digest('hex');
}

/** A new proof-of-work challenge (ALTCHA's, signed, expiring), as the widget fetches it. */
export async function newChallenge(db: Knex): Promise<Challenge> {
  return createChallenge({
    algorithm: 'SHA-256',
    cost: 1,
    counter: randomInt(COUNTER_MIN, COUNTER_MAX),
    deriveKey,
    hmacSignatureSecret: await challengeSecret(db),
    expiresAt: new Date(Date.now() + CHALLENGE_TTL_MS),
  });
}

/**
 * Checks the widget's payload (base64 of `{ challenge, solution }`): a challenge this
 * installation signed, not expired, solved, and not used before — its signature is then spent
 * until it expires, so one solution cannot be replayed. True when it passes.
 */
export async function spendSolution(db: Knex, payload: unknown): Promise<boolean> {
  if (typeof payload !== 'string' || payload.length === 0 || payload.length > 4096) return false;
  let parsed: { challenge?: Challenge; solution?: unknown };
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64').toString('utf8'));
  } catch {
    return false;
  }
  const challenge = parsed?.challenge;
  if (!challenge || typeof challenge !== 'object' || typeof challenge.signature !== 'string' || !challenge.parameters) return false;
  if (challenge.parameters.algorithm !== 'SHA-256' || typeof challenge.parameters.expiresAt !== 'number') return false;
  let verified = false;
  try {
    const result = await verifySolution({
      challenge,
      solution: parsed.solution as Parameters<typeof verifySolution>[0]['solution'],
      deriveKey,
      hmacSignatureSecret: await challengeSecret(db),
    });
    verified = result.verified;
  } catch {
    return false;
  }
  if (!verified) return false;
  const { rowCount } = await db.raw('INSERT INTO pow_spent (signature, expires_at) VALUES (?, to_timestamp(?)) ON CONFLICT (signature) DO NOTHING', [
    challenge.signature,
    challenge.parameters.expiresAt,
  ]);
  return (rowCount ?? 0) > 0;
}

/** The worker's cleanup of both tables: counts of past hours, spent challenges past their expiry. */
export async function purgeGuards(db: Knex): Promise<void> {
  await db.raw(`DELETE FROM subscribe_limits WHERE hour < now() - interval '1 hour'`);
  await db.raw('DELETE FROM pow_spent WHERE expires_at < now()');
}
