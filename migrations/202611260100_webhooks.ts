import type { Knex } from 'knex';
import { owner, softDelete, timestamps } from '../src/db/schema-helpers';

/**
 * Outgoing webhooks (docs/decisions.md, "Webhooks"): the account's endpoints, and the batches
 * of events the worker delivers to them. An endpoint follows the events table by id from its
 * cursor (`last_event_id`: the last event handed to a delivery); each batch is one
 * `webhook_deliveries` row whose `msg_id` is the `webhook-id` header of every attempt, and whose
 * `next_attempt_at` is also the lease of a claimed attempt (as for recipient rows and outbox jobs).
 *
 * `webhook.disabled` joins the account events: the CHECK on events.type is extended, not
 * restated, so types other migrations add to it are kept.
 */
const ADDED_TYPE = 'webhook.disabled';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    owner(t);
    t.increments('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.text('url').notNullable();
    /** Empty: every event type. */
    t.specificType('event_types', 'text[]').notNullable().defaultTo('{}');
    t.text('description').notNullable().defaultTo('');
    t.smallint('is_active').notNullable().defaultTo(1);
    /** `whsec_` + base64 key: kept so Herald can sign; shown once, when the webhook is created. */
    t.text('secret').notNullable();
    t.bigInteger('last_event_id').notNullable().defaultTo(0);
    /** Since when every attempt failed (null: the last attempt succeeded, or none failed yet). */
    t.timestamp('failing_since', { useTz: true, precision: 6 }).nullable();
    softDelete(t);
    timestamps(t, knex);
  });
  await knex.raw('ALTER TABLE webhooks ADD CONSTRAINT webhooks_is_active_check CHECK (is_active IN (0, 1))');
  // The worker's fan-out looks for active endpoints only.
  await knex.raw('CREATE INDEX webhooks_active_index ON webhooks (user_id, id) WHERE is_active = 1 AND deleted_at IS NULL');

  await knex.schema.createTable('webhook_deliveries', (t) => {
    owner(t);
    t.bigIncrements('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.integer('webhook_id').notNullable();
    t.foreign(['user_id', 'webhook_id']).references(['user_id', 'id']).inTable('webhooks').onDelete('CASCADE');
    /** The `webhook-id` header: the same on every attempt of this batch (receivers deduplicate by it). */
    t.text('msg_id').notNullable();
    t.text('type').notNullable();
    t.specificType('event_ids', 'bigint[]').notNullable();
    /** The request body, fixed when the batch is made so every attempt sends the same bytes. */
    t.jsonb('payload').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.integer('attempt').notNullable().defaultTo(0);
    /** When the next attempt is due; while claimed, the end of the claim's lease. */
    t.timestamp('next_attempt_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.integer('last_status').nullable();
    t.text('last_error').nullable();
    timestamps(t, knex);
  });
  await knex.raw(
    `ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'delivered', 'failed'))`,
  );
  await knex.raw('CREATE INDEX webhook_deliveries_due_index ON webhook_deliveries (next_attempt_at) WHERE status = \'pending\'');
  await knex.raw('CREATE INDEX webhook_deliveries_webhook_index ON webhook_deliveries (user_id, webhook_id, id)');

  await replaceTypeCheck(knex, (def) => def.replace('ARRAY[', `ARRAY['${ADDED_TYPE}'::text, `));
}

export async function down(knex: Knex): Promise<void> {
  await knex('events').where('type', ADDED_TYPE).delete();
  await replaceTypeCheck(knex, (def) => def.replace(`'${ADDED_TYPE}'::text, `, ''));
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhooks');
}

async function replaceTypeCheck(knex: Knex, edit: (definition: string) => string): Promise<void> {
  const { rows } = await knex.raw(
    `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'events_type_check' AND conrelid = 'events'::regclass`,
  );
  const def = edit(rows[0].def as string);
  await knex.raw('ALTER TABLE events DROP CONSTRAINT events_type_check');
  await knex.raw(`ALTER TABLE events ADD CONSTRAINT events_type_check ${def}`);
}
