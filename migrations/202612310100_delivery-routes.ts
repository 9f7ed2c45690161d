import type { Knex } from 'knex';

/**
 * Delivery routes (issue 36; src/routes/). Several relays, each with quotas, health and warm-up,
 * shared by every worker process through these tables. They belong to the installation, not to an
 * account (GLOBAL_TABLES in src/db/citus.ts): on Citus they stay on the coordinator, which every
 * Herald process talks to.
 *
 * - `route_state`: one row per configured route (made on first use): its health (`up`, `down`,
 *   `throttled`; `warming` is derived from the configuration, never stored), consecutive failures,
 *   the last error (credentials never written), when a down route is next probed, when it came back
 *   (it carries half its weight for 5 minutes after), the throttled rate and since when, and the
 *   per-second token bucket of `max_per_second` (tokens, refilled_at), granted to processes in
 *   small chunks.
 * - `route_usage`: messages handed to a route per hour and per day (`period` 'hour' | 'day'), the
 *   counters that hold `max_per_hour`, `max_per_day` and the warm-up cap across processes and
 *   restarts. Old periods are deleted by the worker's cleanup.
 * - `route_blocks`: a route blocked by one receiving provider (a block text in an answer about the
 *   sending IP or domain), until `until` or until an operator clears it.
 * - `accounts.routes`: the route names an account is pinned to (NULL: every route).
 *
 * And the account event `route.blocked`.
 */
const ADDED = ['route.blocked'];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('route_state', (t) => {
    t.text('name').primary();
    t.text('status').notNullable().defaultTo('up');
    t.timestamp('status_since', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.integer('consecutive_failures').notNullable().defaultTo(0);
    t.text('last_error').nullable();
    t.timestamp('last_error_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('down_since', { useTz: true, precision: 6 }).nullable();
    t.timestamp('probe_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('recovered_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('throttled_at', { useTz: true, precision: 6 }).nullable();
    t.double('throttled_rate').nullable();
    t.double('tokens').notNullable().defaultTo(0);
    t.timestamp('refilled_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE route_state ADD CONSTRAINT route_state_status_check CHECK (status IN ('up', 'down', 'throttled'))`);

  await knex.schema.createTable('route_usage', (t) => {
    t.text('route').notNullable();
    t.text('period').notNullable();
    t.timestamp('period_start', { useTz: true }).notNullable();
    t.integer('used').notNullable().defaultTo(0);
    t.primary(['route', 'period', 'period_start']);
  });
  await knex.raw(`ALTER TABLE route_usage ADD CONSTRAINT route_usage_period_check CHECK (period IN ('hour', 'day'))`);
  await knex.raw('CREATE INDEX route_usage_period_start_index ON route_usage (period_start)');

  await knex.schema.createTable('route_blocks', (t) => {
    t.text('route').notNullable();
    t.text('provider').notNullable();
    t.timestamp('since', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('until', { useTz: true, precision: 6 }).notNullable();
    t.text('last_error').nullable();
    t.primary(['route', 'provider']);
  });

  await knex.schema.alterTable('accounts', (t) => {
    t.specificType('routes', 'text[]').nullable();
  });

  await replaceTypeCheck(knex, (def) => def.replace('ARRAY[', `ARRAY[${ADDED.map((t) => `'${t}'::text`).join(', ')}, `));
}

export async function down(knex: Knex): Promise<void> {
  await knex('events').whereIn('type', ADDED).delete();
  await replaceTypeCheck(knex, (def) => def.replace(`${ADDED.map((t) => `'${t}'::text`).join(', ')}, `, ''));
  await knex.schema.alterTable('accounts', (t) => {
    t.dropColumn('routes');
  });
  await knex.schema.dropTable('route_blocks');
  await knex.schema.dropTable('route_usage');
  await knex.schema.dropTable('route_state');
}

async function replaceTypeCheck(knex: Knex, edit: (definition: string) => string): Promise<void> {
  const { rows } = await knex.raw(
    `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'events_type_check' AND conrelid = 'events'::regclass`,
  );
  await knex.raw('ALTER TABLE events DROP CONSTRAINT events_type_check');
  await knex.raw(`ALTER TABLE events ADD CONSTRAINT events_type_check ${edit(rows[0].def as string)}`);
}
