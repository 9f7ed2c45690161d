import request from 'supertest';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectNF2, expectSuccess, expectVal } from '../helpers/expect';
import { makeContacts, makeContactType } from '../helpers/fixtures';
import { createSend } from '../helpers/sends';
import { waitFor } from '../helpers/wait';
import { setupDelivery, waitForSend } from '../helpers/worker';
import { signIn, type Browserish } from '../dashboard/lib/session';

/**
 * Pausing and resuming a running single send (POST /single/send/pause, /resume, and the report
 * page's buttons), through the worker as production runs it into a real SMTP server. SEND_RATE
 * keeps the send running long enough to be paused in the middle. A pause holds the rows not yet
 * claimed; the rows a worker has already claimed (half a SEND_BATCH_SIZE per claim, two claims
 * ahead) finish: SEND_BATCH_SIZE 2 keeps that to two messages here.
 */
const { app, db, config } = setupApp({ RETRY_BASE_MS: '0', MAX_ATTEMPTS: '3', WORKER_POLL_MS: '50', SEND_RATE: '4', SEND_BATCH_SIZE: '2' }, 'send_pause');
const rig = setupDelivery({ config, db }, { poolSize: 1 });
const RECIPIENTS = 16;
let a: TestAccount;
let b: TestAccount;
let list: number;
let s: Browserish;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const refs = () => ({ sender: rig.sender, group: rig.group, list });
const pause = (utr: string, who = a) => api(app, who).form('/single/send/pause', { utr });
const resume = (utr: string, who = a) => api(app, who).form('/single/send/resume', { utr });
const post = (path: string, csrf?: string) => {
  const req = request(app).post(path).set('Cookie', s.cookie).type('form');
  return req.send(csrf === undefined ? {} : { _csrf: csrf });
};

beforeAll(async () => {
  a = rig.account;
  b = await makeAccount(db, 'Other');
  list = await makeContactType(db, a, 'Pause list');
  await makeContacts(db, a, list, Array.from({ length: RECIPIENTS }, (_, i) => ({ email: `r${i}@example.com`, first_name: `R${i}` })));
  s = await signIn(app, a);
});

describe('a running send, paused and resumed', () => {
  let utr: string;

  it('pauses in the middle: nothing more is sent until it resumes, and it does not complete', async () => {
    ({ utr } = await createSend(app, db, a, refs(), { single_send_name: 'Paused news' }));
    await waitFor('the first messages', async () => (rig.sink.accepted.length >= 2 ? true : undefined));
    const running = await request(app).get(`/app/sends/${utr}`).set('Cookie', s.cookie);
    expect(running.text).toContain(`action="/app/sends/${utr}/pause"`);
    expect(running.text).not.toContain('Paused since');
    const res = await pause(utr);
    expectSuccess(res, { utr });
    // What a worker had already claimed finishes; then nothing more.
    const atPause = rig.sink.accepted.length;
    await sleep(1000);
    const sent = rig.sink.accepted.length;
    expect(sent).toBeLessThanOrEqual(atPause + 2);
    expect(sent).toBeLessThan(RECIPIENTS);
    await sleep(3000);
    expect(rig.sink.accepted.length).toBe(sent);
    const row = await db('single_sends').where({ utr, user_id: a.id }).first();
    expect(row.status).toBe(2);
    expect(row.paused_at).not.toBeNull();
    expectVal(await pause(utr), { utr: ['The single send is already paused.'] });
  });

  it('shows “Paused since …” and a Resume button on its page; Resume there goes through the API’s route', async () => {
    const page = await request(app).get(`/app/sends/${utr}`).set('Cookie', s.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Paused since');
    expect(page.text).toContain(`action="/app/sends/${utr}/resume"`);
    expect(page.text).not.toContain(`action="/app/sends/${utr}/pause"`);
    // Without the CSRF token: refused, still paused.
    expect((await post(`/app/sends/${utr}/resume`)).status).toBe(403);
    expect((await db('single_sends').where({ utr, user_id: a.id }).first('paused_at')).paused_at).not.toBeNull();
    const done = await post(`/app/sends/${utr}/resume`, s.csrf);
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe(`/app/sends/${utr}`);
  });

  it('resumed: every recipient gets exactly one message and the send completes', async () => {
    await waitForSend(db, utr, 3, 30_000);
    const counts = new Map<string, number>();
    for (const m of rig.sink.accepted) counts.set(m.to, (counts.get(m.to) ?? 0) + 1);
    expect(counts.size).toBe(RECIPIENTS);
    for (const n of counts.values()) expect(n).toBe(1);
    const row = await db('single_sends').where({ utr, user_id: a.id }).first();
    expect(row.paused_at).toBeNull();
    expect(row.delivered).toBe(RECIPIENTS);
  });

  it('refuses to pause a completed send or resume one that is not paused (VAL)', async () => {
    expectVal(await pause(utr), { utr: ['Only a sending single send can be paused.'] });
    expectVal(await resume(utr), { utr: ['Only a paused single send can be resumed.'] });
  });

  it('on the dashboard: the API’s refusal on the page (422), CSRF required', async () => {
    expect((await post(`/app/sends/${utr}/pause`)).status).toBe(403);
    const refused = await post(`/app/sends/${utr}/pause`, s.csrf);
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('Only a sending single send can be paused.');
  });
});

describe('pause and resume refused', () => {
  it('VAL for a draft', async () => {
    const res = await api(app, a).form('/single/send/create', { single_send_name: 'Draft', draft: 1 });
    expectSuccess(res);
    const draft = res.body.message.utr as string;
    expectVal(await pause(draft), { utr: ['Only a sending single send can be paused.'] });
    expectVal(await resume(draft), { utr: ['Only a paused single send can be resumed.'] });
  });

  it('VAL without a utr; NF2 for another account’s send, an unknown or malformed utr', async () => {
    expectVal(await api(app, a).form('/single/send/pause', {}), { utr: ['The utr field is required.'] });
    expectVal(await api(app, a).form('/single/send/resume', {}), { utr: ['The utr field is required.'] });
    const theirs = await api(app, b).form('/single/send/create', { single_send_name: 'Theirs', draft: 1 });
    expectSuccess(theirs);
    for (const utr of [theirs.body.message.utr as string, '00000000-0000-4000-8000-000000000000', 'not-a-utr']) {
      expectNF2(await pause(utr));
      expectNF2(await resume(utr));
    }
    expect((await post(`/app/sends/${theirs.body.message.utr}/pause`, s.csrf)).status).toBe(404);
  });
});
