import type { Knex } from 'knex';
import type { RouteConfig, Stream } from './types';

/**
 * Pinning an account to some of the delivery routes (accounts.routes; NULL: every route). The
 * operator sets it (`herald account routes --id <n> --routes a,b`, `--all` to unpin); the router
 * reads it (cached a few seconds) and GET /routes shows only the routes the account may use.
 */

const STREAM_NAMES: ReadonlyArray<readonly [Stream, string]> = [
  ['marketing', 'campaign mail'],
  ['system', "Herald's own mail for the account"],
];

/** A pinning refused: an unknown account or route name; the message is meant for the operator as is. */
export class PinningError extends Error {}

/** The route names the account is pinned to, or null when it may use every route (or there is no such account). */
export async function accountRoutes(db: Knex, userId: number): Promise<string[] | null> {
  const row = (await db('accounts').where({ id: userId }).first('routes')) as { routes: string[] | null } | undefined;
  return row?.routes ?? null;
}

/**
 * Pins the account to `names` (each a configured route, matched without case and stored as
 * configured, repeats dropped), or unpins it with null. Resolves with what is stored; throws
 * PinningError for an unknown account, an unknown route name, an empty list, or routes that leave
 * a stream (campaign mail, or Herald's own mail for the account) without a route.
 */
export async function setAccountRoutes(
  db: Knex,
  config: { routes: readonly RouteConfig[] },
  userId: number,
  names: readonly string[] | null,
): Promise<string[] | null> {
  let pinned: string[] | null = null;
  if (names !== null) {
    const configured = config.routes.map((r) => r.name);
    if (configured.length === 0) throw new PinningError('No delivery routes are configured (SMTP_ROUTES, SMTP_ROUTES_FILE or SMTP_URL): there is nothing to pin to');
    if (names.length === 0) throw new PinningError('Name at least one route (or use --all to let the account use every route)');
    const byKey = new Map(config.routes.map((r) => [r.name.toLowerCase(), r]));
    const unknown = names.filter((n) => !byKey.has(n.toLowerCase()));
    if (unknown.length) {
      const list = unknown.map((n) => JSON.stringify(n)).join(', ');
      throw new PinningError(`Unknown route${unknown.length > 1 ? 's' : ''} ${list}: the configured routes are ${configured.join(', ')}`);
    }
    const chosen = [...new Set(names.map((n) => byKey.get(n.toLowerCase())!))];
    // The router keeps an account's mail of both streams to its pins (its opt-in confirmations
    // too): pins without a route for one stream would hold that mail back for good.
    for (const [stream, what] of STREAM_NAMES) {
      if (chosen.some((r) => r.streams.includes(stream))) continue;
      const carrying = config.routes.filter((r) => r.streams.includes(stream)).map((r) => r.name);
      throw new PinningError(`None of ${chosen.map((r) => r.name).join(', ')} carries ${what} (the "${stream}" stream): add one of ${carrying.join(', ')}`);
    }
    pinned = chosen.map((r) => r.name);
  }
  const [row] = (await db('accounts').where({ id: userId }).update({ routes: pinned, updated_at: db.fn.now() }).returning(['routes'])) as Array<{
    routes: string[] | null;
  }>;
  if (!row) throw new PinningError(`No account with id ${userId}`);
  return row.routes ?? null;
}
