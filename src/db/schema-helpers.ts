import type { Knex } from 'knex';

/** `created_at`/`updated_at` as microsecond timestamptz (the spec's `<timestamp>`). */
export function timestamps(t: Knex.CreateTableBuilder, knex: Knex, nullable = false): void {
  for (const name of ['created_at', 'updated_at']) {
    const col = t.timestamp(name, { useTz: true, precision: 6 });
    if (nullable) col.nullable();
    else col.notNullable().defaultTo(knex.fn.now());
  }
}

/** A tenant column: every account-owned table carries it (and is distributable by it). */
export function owner(t: Knex.CreateTableBuilder): void {
  t.integer('user_id').notNullable().references('id').inTable('accounts').onDelete('CASCADE');
}

export function softDelete(t: Knex.CreateTableBuilder): void {
  t.timestamp('deleted_at', { useTz: true, precision: 6 }).nullable();
}
