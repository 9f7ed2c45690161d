import type { Knex } from 'knex';
import { owner } from '../src/db/schema-helpers';

/**
 * One append-only table of everything that happened (docs/decisions.md, "Events"): what became
 * of each message (delivered … complained) and the account's own events (send started, sender
 * verified, …). The id is the cursor of GET /events: ids are taken under a per-account lock held
 * to commit (src/events/record.ts), so a reader paging by id never skips a late commit.
 *
 * Indexes serve the API's filters (per account, by id within each): type, address, single send,
 * automation; BRIN on occurred_at serves the retention purge and time ranges at almost no cost
 * for an append-only table. The old `account_events` rows move over (their subject and facts into
 * `data`); how their mailing went moves to `outbox_jobs`, the worker's queue of side effects
 * (src/events/outbox.ts), where notification mail now waits instead of being sent inside a request.
 *
 * The type lists are repeated here on purpose: a migration is history and must not change with
 * src/events/types.ts.
 */
const MESSAGE_EVENT_TYPES = ['delivered', 'deferred', 'bounced', 'dropped', 'opened', 'clicked', 'unsubscribed', 'complained'];
const ACCOUNT_EVENT_TYPES = [
  'single_send.started',
  'single_send.completed',
  'automation.live',
  'automation.paused',
  'contacts.imported',
  'sender.verified',
];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('events', (t) => {
    owner(t);
    t.bigIncrements('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.text('type').notNullable();
    t.text('email').nullable();
    t.integer('single_send_id').nullable();
    t.integer('automation_id').nullable();
    t.bigInteger('delivery_id').nullable();
    t.timestamp('occurred_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.jsonb('data').notNullable().defaultTo('{}');
  });
  const types = [...MESSAGE_EVENT_TYPES, ...ACCOUNT_EVENT_TYPES].map((x) => `'${x}'`).join(', ');
  await knex.raw(`ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN (${types}))`);
  await knex.raw('ALTER TABLE events ADD CONSTRAINT events_email_lower_check CHECK (email = lower(email))');
  await knex.raw('CREATE INDEX events_type_index ON events (user_id, type, id)');
  await knex.raw('CREATE INDEX events_email_index ON events (user_id, email, id) WHERE email IS NOT NULL');
  await knex.raw('CREATE INDEX events_single_send_index ON events (user_id, single_send_id, id) WHERE single_send_id IS NOT NULL');
  await knex.raw('CREATE INDEX events_automation_index ON events (user_id, automation_id, id) WHERE automation_id IS NOT NULL');
  await knex.raw('CREATE INDEX events_occurred_at_index ON events USING brin (occurred_at)');

  await knex.schema.createTable('outbox_jobs', (t) => {
    owner(t);
    t.bigIncrements('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.text('kind').notNullable();
    /** The event the job carries out (a notification mails it). */
    t.bigInteger('event_id').nullable();
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.text('status').notNullable().defaultTo('queued');
    t.integer('attempts').notNullable().defaultTo(0);
    /** When the job is due; while claimed, the end of the claim's lease. */
    t.timestamp('next_attempt_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.integer('done_count').notNullable().defaultTo(0);
    t.text('last_error').nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE outbox_jobs ADD CONSTRAINT outbox_jobs_kind_check CHECK (kind IN ('notification'))`);
  await knex.raw(`ALTER TABLE outbox_jobs ADD CONSTRAINT outbox_jobs_status_check CHECK (status IN ('queued', 'done', 'failed'))`);
  await knex.raw(`CREATE INDEX outbox_jobs_due_index ON outbox_jobs (next_attempt_at) WHERE status = 'queued'`);
  await knex.raw('CREATE INDEX outbox_jobs_event_index ON outbox_jobs (user_id, event_id)');

  // The account events so far: subject and facts into data; how their mailing went into a finished job.
  await knex.raw(`
    CREATE TEMP TABLE moved_account_events ON COMMIT DROP AS
    SELECT a.*, nextval(pg_get_serial_sequence('events', 'id')) AS event_id
    FROM (SELECT * FROM account_events ORDER BY id) a`);
  await knex.raw(`
    INSERT INTO events (user_id, id, type, occurred_at, data)
    SELECT user_id, event_id, type, created_at, payload || jsonb_build_object('subject', subject) FROM moved_account_events`);
  await knex.raw(`
    INSERT INTO outbox_jobs (user_id, kind, event_id, status, done_count, last_error, created_at, next_attempt_at)
    SELECT user_id, 'notification', event_id, CASE WHEN notify_error IS NULL THEN 'done' ELSE 'failed' END,
           notified, notify_error, created_at, created_at
    FROM moved_account_events`);
  await knex.raw('DROP TABLE moved_account_events');
  await knex.schema.dropTable('account_events');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.createTable('account_events', (t) => {
    t.bigIncrements('id');
    owner(t);
    t.string('type', 40).notNullable();
    t.string('subject', 255).notNullable();
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.integer('notified').notNullable().defaultTo(0);
    t.text('notify_error').nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE INDEX account_events_user_index ON account_events (user_id, id DESC)');
  await knex.raw(`
    INSERT INTO account_events (user_id, type, subject, payload, notified, notify_error, created_at)
    SELECT e.user_id, e.type, coalesce(e.data->>'subject', ''), e.data - 'subject', coalesce(j.done_count, 0), j.last_error, e.occurred_at
    FROM events e LEFT JOIN outbox_jobs j ON j.user_id = e.user_id AND j.event_id = e.id AND j.kind = 'notification'
    WHERE e.email IS NULL AND e.type LIKE '%.%' ORDER BY e.id`);
  await knex.schema.dropTable('outbox_jobs');
  await knex.schema.dropTable('events');
}
