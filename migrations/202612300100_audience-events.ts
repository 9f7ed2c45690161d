import type { Knex } from 'knex';

/**
 * The account events of issue 35 (people who join and leave by themselves):
 *
 * - `contact.confirmed`: a double opt-in subscription confirmed (or a single opt-in form's
 *   subscription taken), for webhooks like every other event;
 * - `contact.data_requested`: a recipient asked for their data from the preferences page;
 * - `contact.erased`: an address erased (POST /contacts/erase or "forget me"), without the address.
 *
 * The names are written out here, not imported: a migration is history.
 */
const ADDED = ['contact.confirmed', 'contact.data_requested', 'contact.erased'];

export async function up(knex: Knex): Promise<void> {
  await replaceTypeCheck(knex, (def) => def.replace('ARRAY[', `ARRAY[${ADDED.map((t) => `'${t}'::text`).join(', ')}, `));
}

export async function down(knex: Knex): Promise<void> {
  await knex('events').whereIn('type', ADDED).delete();
  await replaceTypeCheck(knex, (def) => def.replace(`${ADDED.map((t) => `'${t}'::text`).join(', ')}, `, ''));
}

async function replaceTypeCheck(knex: Knex, edit: (definition: string) => string): Promise<void> {
  const { rows } = await knex.raw(
    `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'events_type_check' AND conrelid = 'events'::regclass`,
  );
  await knex.raw('ALTER TABLE events DROP CONSTRAINT events_type_check');
  await knex.raw(`ALTER TABLE events ADD CONSTRAINT events_type_check ${edit(rows[0].def as string)}`);
}
