/**
 * Webhook delivery survives `kill -9` (issue 11): a `herald worker` process is SIGKILLed while
 * its request to the receiver is in flight (the receiver holds the request unanswered). The
 * batch stays claimed until its lease ends (3 × WEBHOOK_TIMEOUT_MS + 5 s); then a new worker
 * sends it again with the same webhook-id and the same body (at-least-once), and also batches
 * the events recorded while no worker ran. Nothing is lost; the only duplicate is the request
 * the dead worker had in flight.
 */
import { recordAccountEvent } from '../../src/events/account-events';
import { api, makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { startReceiver, type Receiver } from '../helpers/webhook-receiver';
import { isolatedUrl } from '../setup/isolated';
import { waitFor } from '../helpers/wait';
import { heraldEnv, requireBuilt, startWorker, useChildren } from './lib/processes';

requireBuilt();
useChildren();

const { app, db } = setupApp({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1' }, 'webhook_faults');
let receiver: Receiver;
let a: TestAccount;
let env: Record<string, string>;

beforeAll(async () => {
  receiver = await startReceiver();
  a = await makeAccount(db, 'Killed');
  env = heraldEnv(isolatedUrl(testDatabaseUrl(), 'webhook_faults'), {
    WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_RETRY_BASE_MS: '200',
  });
});
afterAll(() => receiver.close());

describe('a worker SIGKILLed while a webhook request is in flight', () => {
  it('is finished by a new worker: the same batch again with the same webhook-id, then what happened meanwhile', async () => {
    const res = await api(app, a).form('/webhooks/save', { url: receiver.url });
    expectSuccess(res);
    const { id, secret } = res.body.message;
    receiver.secret = secret;
    receiver.respond = () => 0; // hold every request unanswered
    await recordAccountEvent({ db }, a.id, 'sender.verified', 'Sender verified: first', { sender: 'first' });

    const first = startWorker('webhook-worker-1', env);
    await first.ready;
    await waitFor('the request in flight', async () => receiver.hits.length === 1, { timeoutMs: 20_000 });
    first.child.kill('SIGKILL');
    await first.exited;

    const claimed = await db('webhook_deliveries').where({ user_id: a.id, webhook_id: id }).select('status', 'attempt', 'msg_id');
    expect(claimed).toEqual([{ status: 'pending', attempt: 1, msg_id: receiver.hits[0].id }]);
    await recordAccountEvent({ db }, a.id, 'sender.verified', 'Sender verified: second', { sender: 'second' });

    receiver.respond = () => 204;
    const second = startWorker('webhook-worker-2', env);
    await second.ready;
    await waitFor(
      'both batches delivered',
      async () => {
        const rows = await db('webhook_deliveries').where({ user_id: a.id, webhook_id: id, status: 'delivered' });
        return rows.length === 2;
      },
      { timeoutMs: 40_000 },
    );
    await second.signalAndWait('SIGTERM', 15_000);

    const events = (await db('events').where({ user_id: a.id }).orderBy('id').pluck('id')).map(Number);
    expect(receiver.hits.every((h) => h.verified)).toBe(true);
    // The killed attempt, its repeat once the lease ran out (same id, same body), and the batch of
    // the second event (due at once, so usually sent before the repeat).
    expect(receiver.hits).toHaveLength(3);
    const [killed, ...after] = receiver.hits;
    const repeat = after.filter((h) => h.id === killed.id);
    expect(repeat).toHaveLength(1);
    expect(repeat[0].body).toBe(killed.body);
    const delivered = after.flatMap((h) => h.payload.data.events.map((e) => e.id as number));
    expect(delivered.sort((x, y) => x - y)).toEqual(events);
  });
});
