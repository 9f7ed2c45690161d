import type { Knex } from 'knex';

/**
 * Account events about a single send or an automation were recorded with the utr only inside
 * `data`; they are now recorded with the send's (or automation's) id in the event's own column,
 * so `GET /events?single_send_utr=` / `?automation_utr=` find them. This gives the ones already
 * recorded the same. The type lists are repeated on purpose: a migration is history.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    UPDATE events e SET single_send_id = s.id
    FROM single_sends s
    WHERE e.type IN ('single_send.started', 'single_send.completed') AND e.single_send_id IS NULL
      AND s.user_id = e.user_id AND s.utr::text = e.data->>'utr'`);
  await knex.raw(`
    UPDATE events e SET automation_id = a.id
    FROM automations a
    WHERE e.type IN ('automation.live', 'automation.paused') AND e.automation_id IS NULL
      AND a.user_id = e.user_id AND a.utr::text = e.data->>'utr'`);
}

export async function down(): Promise<void> {
  // Nothing to undo: the columns were empty for these events, and filling them loses nothing.
}
