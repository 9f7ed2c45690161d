import type { Knex } from 'knex';
import type { Config } from '../../src/config';
import type { Mailer } from '../../src/mail/mailer';
import { Worker } from '../../src/delivery/worker';
import { createLogger } from '../../src/logger';
import { waitFor } from './wait';

/**
 * The delivery worker as production runs it (its two loops, pipelined sending), started for a
 * test file and stopped after it. Tests wait on what it does (waitForSend, waitFor), never on
 * a private round of their own.
 */
export function runWorker(deps: { config: Config; db: Knex; mailer: () => Mailer }): { worker: () => Worker } {
  let worker: Worker | undefined;
  beforeAll(() => {
    worker = new Worker({ config: deps.config, db: deps.db, logger: createLogger('silent'), mailer: deps.mailer() });
    worker.start();
  });
  afterAll(async () => {
    await worker?.stop();
  });
  return { worker: () => worker! };
}

/** Waits until the single send `utr` reaches `status` (3: completed) and returns its row. */
export async function waitForSend(db: Knex, utr: string, status = 3, timeoutMs?: number): Promise<Record<string, unknown>> {
  return waitFor(
    `single send ${utr} to reach status ${status}`,
    async () => {
      const row = await db('single_sends').where({ utr }).first();
      return row && row.status === status ? (row as Record<string, unknown>) : undefined;
    },
    {
      timeoutMs,
      describe: async () => ({
        send: await db('single_sends').where({ utr }).first('status', 'triggered', 'delivered', 'bounces', 'fanout_done_at', 'fanout_error'),
        deliveries: await db('deliveries as d')
          .join('single_sends as s', (j) => j.on('s.id', 'd.single_send_id').andOn('s.user_id', 'd.user_id'))
          .where('s.utr', utr)
          .groupBy('d.status')
          .select('d.status', db.raw('count(*)::int AS n')),
      }),
    },
  );
}
