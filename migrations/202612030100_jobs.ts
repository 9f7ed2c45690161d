import type { Knex } from 'knex';
import { owner, timestamps } from '../src/db/schema-helpers';

/**
 * `jobs`: background work of any kind the job runner does (src/jobs, docs/decisions.md "Job
 * runner") — a kind is a name, a handler and its settings, and needs no table of its own.
 * notification mail (`outbox_jobs`) and webhook batches (`webhook_deliveries`) keep their tables
 * (read by the API, with columns of their own) and run on the same runner.
 *
 * `next_attempt_at` is when the job is due and, while it is claimed, the end of the claim's
 * lease; `attempts` names the claim (a write under an older attempt applies to nothing). `key`,
 * when given, makes a job once per account and kind (an enqueue of the same key again is a
 * no-op). The states are written out here, not imported: a migration is history.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('jobs', (t) => {
    owner(t);
    t.bigIncrements('id', { primaryKey: false });
    t.primary(['user_id', 'id']);
    t.text('kind').notNullable();
    t.text('key').nullable();
    t.jsonb('payload').notNullable().defaultTo('{}');
    t.text('status').notNullable().defaultTo('queued');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true, precision: 6 }).notNullable().defaultTo(knex.fn.now());
    t.text('last_error').nullable();
    timestamps(t, knex);
  });
  await knex.raw(`ALTER TABLE jobs ADD CONSTRAINT jobs_status_check CHECK (status IN ('queued', 'done', 'failed'))`);
  await knex.raw(`ALTER TABLE jobs ADD CONSTRAINT jobs_kind_check CHECK (kind ~ '^[a-z][a-z0-9_.-]{0,63}$')`);
  // The claim walks one kind's due jobs in order (as outbox_jobs_due_index serves notifications).
  await knex.raw(`CREATE INDEX jobs_due_index ON jobs (kind, next_attempt_at) WHERE status = 'queued'`);
  await knex.raw('CREATE UNIQUE INDEX jobs_key_unique ON jobs (user_id, kind, key) WHERE key IS NOT NULL');
  // The retention purge finds finished jobs by age.
  await knex.raw(`CREATE INDEX jobs_finished_index ON jobs (updated_at) WHERE status <> 'queued'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('jobs');
}
