import type { Knex } from 'knex';
import type { Config } from '../../src/config';
import { smtpMailer, type Mailer } from '../../src/mail/mailer';
import { Worker } from '../../src/worker/worker';
import { createLogger } from '../../src/logger';
import { makeAccount, type TestAccount } from './app';
import { makeGroup, makeSender } from './fixtures';
import { startSmtpSink, type SmtpSink } from './smtp';
import { waitFor } from './wait';

/**
 * The worker as production runs it (every loop src/worker/worker.ts lists, pipelined sending),
 * started for a test file and stopped after it. Tests wait on what it does (waitForSend, waitFor), never on
 * a private round of their own.
 */
export function runWorker(deps: { config: Config; db: Knex; mailer: () => Mailer }): { worker: () => Worker } {
  let worker: Worker | undefined;
  let mailer: Mailer | undefined;
  beforeAll(() => {
    mailer = deps.mailer();
    worker = new Worker({ config: deps.config, db: deps.db, logger: createLogger('silent'), mailer });
    worker.start();
  });
  // As `herald worker` stops (src/server.ts): the worker, then its mailer. A pooled connection
  // left open outlived the test file: a handle that keeps jest's worker process from exiting.
  afterAll(async () => {
    await worker?.stop();
    await mailer?.close();
  });
  return { worker: () => worker! };
}

export interface DeliveryRig {
  /** The SMTP server the worker sends to. */
  sink: SmtpSink;
  account: TestAccount;
  /** A verified sender of the account. */
  sender: number;
  /** An unsubscribe group of the account. */
  group: number;
}

/**
 * The preamble of a delivery test file: an SMTP sink, the worker sending to it (pooled SMTP), and
 * an account with a verified sender and an unsubscribe group. Registered as the file's hooks: the
 * fields are set once the hooks declared before a test's own have run.
 */
export function setupDelivery(
  deps: { config: Config; db: Knex },
  opts: { poolSize?: number; socketTimeoutMs?: number; group?: string } = {},
): DeliveryRig {
  const rig = {} as DeliveryRig;
  beforeAll(async () => {
    rig.sink = await startSmtpSink();
  });
  runWorker({ ...deps, mailer: () => smtpMailer(rig.sink.url, { poolSize: opts.poolSize ?? 2, socketTimeoutMs: opts.socketTimeoutMs }) });
  beforeAll(async () => {
    rig.account = await makeAccount(deps.db);
    rig.sender = await makeSender(deps.db, rig.account);
    rig.group = await makeGroup(deps.db, rig.account, opts.group ?? 'Newsletter');
  });
  // After the worker and its mailer stopped (hooks run in the order declared), so the sink need
  // not wait for pooled connections to time out.
  afterAll(async () => {
    await rig.sink?.close();
  });
  return rig;
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
