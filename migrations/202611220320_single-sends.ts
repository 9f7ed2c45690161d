import type { Knex } from 'knex';
import { owner, softDelete, timestamps } from '../src/db/schema-helpers';

/**
 * Single sends and the one recipient-row table (`deliveries`) that single sends and
 * automation emails share: one row per message, written before sending, so a restarted
 * worker resumes from the database and no recipient ever gets the same message twice.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('single_sends', (t) => {
    t.increments('id');
    owner(t);
    t.uuid('utr').notNullable().unique('single_sends_utr_unique');
    t.integer('template_id').notNullable().references('id').inTable('templates');
    t.integer('sender_id').notNullable().references('id').inTable('senders');
    t.integer('unsubscribe_group_id').notNullable().references('id').inTable('unsubscribe_groups');
    t.jsonb('recipient_id').notNullable().defaultTo('[]');
    t.jsonb('exclude_specific_recipient_id').notNullable().defaultTo('[]');
    t.string('single_send_name', 255).notNullable();
    t.string('subject', 255).notNullable();
    t.string('preheader', 255).notNullable();
    t.string('from_sender', 254).notNullable();
    t.string('reply_to', 254).notNullable();
    t.string('sender_name', 255).nullable();
    t.string('sender_address', 1000).nullable();
    t.smallint('schedule_type').notNullable().defaultTo(0);
    t.date('schedule_date').nullable();
    t.time('schedule_time').nullable();
    // When the worker may start it: now for schedule_type 0, the given date and time (UTC) for 1.
    t.timestamp('due_at', { useTz: true, precision: 6 }).nullable();
    // 0 initiate (draft), 1 ready, 2 running, 3 completed.
    t.smallint('status').notNullable().defaultTo(1);
    t.text('template_json').nullable();
    t.text('template_html').nullable();
    for (const c of ['triggered', 'delivered', 'unique_opens', 'total_opens', 'bounces', 'unsubscribes']) {
      t.integer(c).notNullable().defaultTo(0);
    }
    // Fan-out progress: which source and which contact id the audience has been written up to.
    t.jsonb('fanout_cursor').nullable();
    t.timestamp('fanout_done_at', { useTz: true, precision: 6 }).nullable();
    // After a failed fan-out chunk the send waits until then, so one bad send cannot stall the others.
    t.timestamp('fanout_retry_at', { useTz: true, precision: 6 }).nullable();
    t.text('fanout_error').nullable();
    t.timestamp('sent_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('completed_at', { useTz: true, precision: 6 }).nullable();
    softDelete(t);
    timestamps(t, knex);
  });
  await knex.raw('CREATE INDEX single_sends_user_live_index ON single_sends (user_id, id DESC) WHERE deleted_at IS NULL');
  // The scheduler's scan: ready sends whose time has come, and running ones.
  await knex.raw('CREATE INDEX single_sends_due_index ON single_sends (due_at) WHERE status IN (1, 2) AND deleted_at IS NULL');

  await knex.schema.createTable('deliveries', (t) => {
    t.bigIncrements('id');
    owner(t);
    t.integer('single_send_id').nullable().references('id').inTable('single_sends');
    t.integer('automation_id').nullable();
    t.integer('automation_schedule_id').nullable();
    t.integer('contact_id').nullable();
    t.string('email', 254).notNullable();
    // The recipient's placeholder values at fan-out (first_name, custom fields by name, …).
    t.jsonb('data').notNullable().defaultTo('{}');
    // Opaque token in the pixel and unsubscribe links (32 hex characters from gen_random_uuid).
    t.string('token', 64).notNullable().unique('deliveries_token_unique');
    // queued → sending → sent | bounced | failed; cancelled when its send is deleted.
    t.string('status', 12).notNullable().defaultTo('queued');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    // A claimed row belongs to one worker until then; after it, another may take it over.
    t.timestamp('locked_until', { useTz: true, precision: 6 }).nullable();
    t.text('last_error').nullable();
    t.string('message_id', 255).nullable();
    t.timestamp('sent_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('opened_at', { useTz: true, precision: 6 }).nullable();
    t.integer('open_count').notNullable().defaultTo(0);
    t.timestamp('unsubscribed_at', { useTz: true, precision: 6 }).nullable();
    t.timestamp('created_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
    CHECK (status IN ('queued', 'sending', 'sent', 'bounced', 'failed', 'cancelled'))`);
  // One message per send and address, whatever happens (the guarantee behind "never twice").
  await knex.raw('CREATE UNIQUE INDEX deliveries_send_email_unique ON deliveries (single_send_id, lower(email)) WHERE single_send_id IS NOT NULL');
  // The claim scan: due queued rows, and sending rows whose lease ran out.
  await knex.raw(`CREATE INDEX deliveries_due_index ON deliveries (next_attempt_at) WHERE status = 'queued'`);
  await knex.raw(`CREATE INDEX deliveries_sending_index ON deliveries (locked_until) WHERE status = 'sending'`);
  await knex.raw('CREATE INDEX deliveries_send_status_index ON deliveries (single_send_id, status) WHERE single_send_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('deliveries');
  await knex.schema.dropTable('single_sends');
}
