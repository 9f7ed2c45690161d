import type { Knex } from 'knex';
import { createDb } from '../../src/db/knex';
import { createLogger } from '../../src/logger';

/**
 * test:citus checks that every statement the app runs is routed to one node: the app gets a
 * pool of its own whose sessions have Citus warn before any statement that runs on more than
 * one shard (`citus.multi_task_query_log_level`, a check Citus makes when it plans the
 * statement), and the file fails at its end naming each such statement that is not one of the
 * exceptions below. The statement still runs, so the file's own tests show that it works.
 */

/**
 * Public pages reached without an account, whose one indexed lookup reads every node: a
 * link or address that names no account. Nothing an API key can call is here.
 */
export const MULTI_SHARD_EXCEPTIONS: Array<{ pattern: RegExp; why: string }> = [
  {
    pattern: /^select "s"\."template_html", coalesce\(tpl\.html_code, dsg\.html_code\) AS html_code from "automation_schedules" as "s"/,
    why: 'GET /design/<utr>: design_url ends in the automation email’s utr (the spec) and names no account',
  },
  {
    pattern: /^select "d"\."id", "d"\."user_id", .* from "deliveries" as "d" where "d"\."token" = /,
    why: 'the unsubscribe page of a message sent before tokens were signed (a stored token names no account; src/public/unsubscribe.ts)',
  },
  {
    pattern: /^SELECT [\w., ]+ FROM deliveries d WHERE d\.token = ANY \(\$1::text\[\]\)$/,
    why: 'pixels, clicks and bounces of messages sent before tokens were signed (a stored token names no account; src/deliveries/rows.ts rowsByStoredTokens, from src/public/tracking.ts and src/bounces/apply.ts)',
  },
  {
    pattern: /^select "user_id" from "senders" where "verify_token_hash" = /,
    why: 'a sender verification link mailed before links named their account (src/resources/senders/senders.service.ts)',
  },
  {
    pattern: /^SELECT count\(\*\)::bigint AS depth, .* FROM deliveries WHERE status IN \(/,
    why: 'GET /metrics (METRICS_TOKEN, not an API key): herald_queue_depth is the installation’s whole queue, an aggregate read on every node (src/deliveries/backlog.ts)',
  },
];

/**
 * Not routed yet, and known: the statistics counters are written for a whole batch of events
 * in one statement whatever accounts it spans (src/events/statistics.ts), the shape the
 * worker's send batches need on one server. On Citus such a statement runs on every node —
 * correctly, not routed. Grouping it by account (or shard) belongs with the worker's
 * cross-account work (docs/scaling.md, "Citus": what is left).
 */
export const NOT_YET_ROUTED: Array<{ pattern: RegExp; why: string }> = [
  {
    pattern: /^UPDATE (single_sends|automations) t SET \w+ = t\.\w+ \+ v\.delivered/,
    why: 'statistics counters of a batch of events, any accounts (round two)',
  },
];

interface PgClient {
  on(event: 'notice', listener: (msg: { severity?: string; message?: string }) => void): void;
  _activeQuery?: { text?: string } | null;
}

interface TarnPool {
  on(event: 'createSuccess', listener: (eventId: number, resource: PgClient) => void): void;
}

const seen = new WeakMap<Knex, Set<string>>();

/** The app's pool under the check. */
export function routerCheckedDb(url: string): Knex {
  const db = createDb({ url, poolMax: 4, logger: createLogger('silent'), settings: { 'citus.multi_task_query_log_level': 'warning' } });
  const statements = new Set<string>();
  seen.set(db, statements);
  (db.client as { pool: TarnPool }).pool.on('createSuccess', (_id, conn) => {
    conn.on('notice', (msg) => {
      if (msg.message !== 'multi-task query about to be executed') return;
      const text = conn._activeQuery?.text ?? '(statement unknown)';
      statements.add(text.replace(/\s+/g, ' ').trim());
    });
  });
  return db;
}

/** The multi-shard statements seen on this pool that are not exceptions. */
export function unroutedStatements(db: Knex): string[] {
  return [...(seen.get(db) ?? [])].filter((s) => ![...MULTI_SHARD_EXCEPTIONS, ...NOT_YET_ROUTED].some((e) => e.pattern.test(s)));
}
