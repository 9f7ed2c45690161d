import type { Knex } from 'knex';

/**
 * An erasure removed recipient rows of these sends before they had an outcome (src/deliveries/
 * person.ts): a send completes once its delivered and bounced rows reach `triggered`
 * (schedule.ts sendsMaybeComplete), so `triggered` drops by the rows that will never have one.
 */
export async function forgetUnsentRows(trx: Knex, userId: number, unsent: Array<{ singleSendId: number; n: number }>): Promise<void> {
  for (const u of unsent) {
    await trx('single_sends')
      .where({ user_id: userId, id: u.singleSendId })
      .update({ triggered: trx.raw('greatest(triggered - ?, 0)', [u.n]) });
  }
}
