import { api, setupApp } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType } from '../helpers/fixtures';
import { createAutomation, createSend } from '../helpers/sends';
import { patient, waitFor } from '../helpers/wait';
import { setupDelivery, waitForSend } from '../helpers/worker';
import { WAKE_LISTENER_APP } from '../../src/jobs/wake';

/**
 * The API wakes the worker (src/jobs/wake.ts): with a poll of a minute,
 * a send created due now — and an automation set live — can be picked up in time only by the
 * wake, never by the poll; and the worker listens again after its listening session died.
 */
const POLL_MS = 60_000;
const { app, db, config } = setupApp({ WORKER_POLL_MS: String(POLL_MS) }, 'wake');
const rig = setupDelivery({ config, db });
/** Well before the poll: whatever the machine's load, a pass cannot come from the poll. */
const IN_TIME_MS = Math.min(patient(10_000), POLL_MS - 15_000);

let list: number;
beforeAll(async () => {
  list = await makeContactType(db, rig.account);
  await makeContacts(db, rig.account, list, [{ email: 'ada@example.com', first_name: 'Ada' }, { email: 'grace@example.com', first_name: 'Grace' }]);
});

const listeners = async () =>
  (await db('pg_stat_activity').where({ application_name: WAKE_LISTENER_APP, datname: db.raw('current_database()') }).pluck('pid')) as number[];

async function sendCompletes(name: string): Promise<void> {
  // Every loop of the worker is napping for its minute by now.
  const { utr } = await createSend(app, db, rig.account, { sender: rig.sender, group: rig.group, list }, { single_send_name: name });
  await waitForSend(db, utr, 3, IN_TIME_MS / patient(1));
}

describe('waking the worker', () => {
  it('starts a send created due now at once, not at the next poll', async () => {
    await waitFor('the worker listening', async () => (await listeners()).length === 1);
    const before = rig.sink.received.length;
    await sendCompletes('Woken');
    expect(rig.sink.received.length - before).toBe(2);
  });

  it('listens again after its listening session died, and is woken as before', async () => {
    const [pid] = await listeners();
    const { rows } = await db.raw('SELECT pg_terminate_backend(?::int) AS done', [pid]);
    expect(rows[0].done).toBe(true);
    const again = await waitFor('a new listening session', async () => {
      const pids = await listeners();
      return pids.length === 1 && pids[0] !== pid ? pids[0] : undefined;
    });
    expect(again).not.toBe(pid);
    const before = rig.sink.received.length;
    await sendCompletes('Woken again');
    expect(rig.sink.received.length - before).toBe(2);
  });

  it('scans an automation set live at once, not at the next poll', async () => {
    const { utr, id } = await createAutomation(app, db, rig.account, { group: rig.group, list });
    expectSuccess(
      await api(app, rig.account).form('/automations/schedule/create', {
        utr,
        sender_id: rig.sender,
        subject: 'Welcome',
        waiting_period: 1,
        waiting_type: 'days',
        template_id: 3,
        preview_img: 'template-welcome.png',
        template_html: '<html><body><p>Welcome ((first_name))</p></body></html>',
      }),
      'Schedule Added',
    );
    expectSuccess(await api(app, rig.account).get(`/automations/set-live?utr=${utr}`));
    const scanned = await waitFor(
      'the entry scan',
      async () => (await db('automations').where({ id }).whereNotNull('entry_scanned_at').first('id')) && (await db('automation_contacts').where({ automation_id: id }).count<{ n: string }[]>({ n: '*' }))[0].n,
      { timeoutMs: IN_TIME_MS / patient(1) },
    );
    expect(Number(scanned)).toBe(2);
  });
});
